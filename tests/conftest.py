"""Shared pytest configuration for every test directory."""

pytest_plugins = ["tests.fakellm_fixtures"]
