"""Rostrum: debates between large language models, run by a persisted state machine."""

__version__ = "0.1.0"
