"""Observers of a run are told best-effort: their failures never become the run's.

A step transition is first written to the store, and that record is the truth (resume,
``toolplan show``, the API read only it). Observers hear about it afterwards: the CLI's progress
printer, the API's event fan-out to ``stepEvents`` subscribers, ``on_event`` of the Python API,
a worker's log. When one of them fails (the reader of a progress pipe went away, a subscriber's
queue is full, a bug), the run must go on exactly as if it had not been watched: a failure here
that reached the scheduler would fail a step that succeeded and skip its dependents, or end the
run with steps left ``running``. So every call into an observer goes through :class:`BestEffort`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["BestEffort"]

logger = logging.getLogger("toolplan.engine")

E = TypeVar("E")


class BestEffort(Generic[E]):
    """Calls ``observer`` with each event and ignores its failures.

    The first failure is logged as a warning (with the traceback at debug level); later ones
    only at debug level: a printer whose pipe is gone fails on every event, and one line says
    so. The observer keeps being called: a failure may be passing (one event a subscriber could
    not take), and each call is the observer's own business.

    ``SystemExit`` is ignored as well: rich's ``Console`` raises it from a print when its pipe
    is broken (``Console.on_broken_pipe``), and an observer has no say over whether the run
    ends. ``KeyboardInterrupt`` and cancellation still stop the run, as they should.
    """

    def __init__(self, observer: Callable[[E], None] | None, *, what: str) -> None:
        self.observer = observer
        self.what = what
        """Whose observer this is, for the log (e.g. ``"step events of plan_..."``)."""
        self.failures = 0
        """How many calls have failed so far."""

    def __call__(self, event: E) -> None:
        """Tell the observer about ``event``; a failure is logged (once) and ignored."""
        if self.observer is None:
            return
        try:
            self.observer(event)
        except (Exception, SystemExit) as error:
            self.failures += 1
            if self.failures == 1:
                logger.warning(
                    "an observer of the %s failed (%s: %s); it is ignored, and the run goes on "
                    "and is recorded as usual (further failures of this observer are logged at "
                    "debug level only)",
                    self.what,
                    type(error).__name__,
                    error,
                )
            logger.debug("observer of the %s failed on %r", self.what, event, exc_info=True)
