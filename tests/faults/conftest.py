"""Fixtures of the fault-injection suite: the same ``cli`` as the end-to-end tests."""

from __future__ import annotations

from tests.e2e.conftest import cli

__all__ = ["cli"]
