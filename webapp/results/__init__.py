"""Results across debates: per-model Bradley-Terry ratings, head-to-head records and the leaderboard.

Derived from the stored verdicts, never stored themselves (`records` reads them with one query).
The entry point: `await webapp.results.leaderboard.leaderboard(store, LeaderboardFilters(...))` gives
a `Leaderboard`; `webapp.ui.pages.leaderboard.render_leaderboard` draws one on a page. numpy and scipy
are imported only when a board is first computed.
"""
