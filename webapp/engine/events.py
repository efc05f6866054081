"""The log's typed payloads as the engine names them, and how a provider failure is recorded.

The payload models and the stored record (`DebateEvent`) are `webapp.models.payloads`, below the
engine, so that the record validates its payload without importing the engine; every name of theirs is
re-exported here for the engine and its callers (`engine/api.py` and `engine/public.py` re-export them
in turn). Only `error_info`, which reads a provider's error, belongs to this layer.
"""

from __future__ import annotations

from webapp.models import payloads
from webapp.models.payloads import *  # noqa: F403 - the payload models are named here too
from webapp.models.payloads import ErrorInfo
from webapp.providers.base import ProviderError

__all__ = [*payloads.__all__, "error_info"]


def error_info(exc: ProviderError) -> ErrorInfo:
    """A provider failure as the log records it."""
    return ErrorInfo.model_validate(exc.to_dict())
