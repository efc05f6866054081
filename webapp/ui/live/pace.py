"""How often the live layer acts: read at each use (`pace.X`), so a test can shorten or stretch them."""

FLUSH_INTERVAL = 0.15  # seconds: reads as live (about 7 updates a second) and batches ~6 tokens at 40 tok/s
YIELD_EVERY = 0.02  # seconds of page updates before the flush loop lets other work (pings) run
DASHBOARD_INTERVAL = 0.5  # seconds between dashboard refresh signals
# Another process (the CLI) may drive a debate in the same database; it leaves no signal but its
# writes, so watched debates and dashboards look at the log this often.
FOLLOW_INTERVAL = 1.0
