"""One module per page: dashboard, new debate, debate, settings."""
