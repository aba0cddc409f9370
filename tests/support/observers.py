"""Observers that fail, for the tests that a run does not depend on its observers."""

from __future__ import annotations

import asyncio

from toolplan.api.events import EventHub
from toolplan.engine.recorder import StepEvent


class OverflowingHub(EventHub):
    """An event hub whose fan-out fails after recording each event and handing it to every
    subscriber, as a subscriber queue that is full (or any other subscriber failure) would."""

    def publish(self, event: StepEvent) -> None:
        super().publish(event)
        raise asyncio.QueueFull(f"a subscriber of {event.plan_id} is not keeping up")
