"""Reusable pieces of the pages (badges, transcript, cost meter, verdict, …)."""
