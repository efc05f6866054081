"""Results across debates: per-model Bradley-Terry ratings, head-to-head records and the leaderboard.

Derived from the stored verdicts, never stored themselves (`records` reads them with one query).
"""
