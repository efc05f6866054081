"""Tournaments: a round robin of models over topics, played as ordinary debates linked to it.

`plan` holds the data (the `Tournament` model and its deterministic schedule of slots), `store` its
table, `runner` the driver that plays it with bounded concurrency under a total budget: in the process
that started it, or on the debate workers when the web app runs with `ROSTRUM_WORKERS=external`.
"""
