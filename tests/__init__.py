"""Rostrum's test suite (a package so helpers such as `tests.fakellm` are importable)."""
