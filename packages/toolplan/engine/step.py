"""Running one step: its ``when`` condition, then its tool call (:class:`StepCall`, the one
attempt path of :mod:`toolplan.engine.attempts`); for a ``forEach`` step, one call per item
(:mod:`toolplan.engine.foreach`), each recorded on its own."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Any

from toolplan.engine.attempts import (
    RUN_STOPPERS,
    STORE_CONFIG_KEY,
    Caller,
    Ending,
    ToolCall,
    internal_error,
)
from toolplan.engine.cache import cache_key
from toolplan.engine.foreach import ForEachRunner
from toolplan.engine.items import ConditionNotBoolean, condition_holds
from toolplan.engine.scheduler import StepOutcome
from toolplan.engine.toolcall import (
    AttemptFailed,
    FailureKind,
    normalize_output,
    without_surrogates,
)
from toolplan.errors import TemplateError
from toolplan.store.protocol import (
    cap_output,
    utc_now,
)

__all__ = [
    "STORE_CONFIG_KEY",
    "AttemptFailed",
    "FailureKind",
    "StepCall",
    "StepRunner",
    "normalize_output",
    "without_surrogates",
]

_log = logging.getLogger(__name__)


class StepRunner(Caller):
    """Executes steps of one plan: resolve templates from ``inputs``, call the tool with timeout,
    retries and fallback, and record every transition with ``recorder``.

    Stateless between steps except through ``inputs`` and the store, so a backend may run each
    step in a different process (one runner per step) as well as all of them in one. A backend
    that retries attempts itself (a durable-workflow engine's retry policy) composes the pieces
    :meth:`run` is made of: :meth:`run_attempt` for each attempt, then :meth:`give_up` once no
    attempt is left; for a ``forEach`` step, those of :attr:`for_each`.
    """

    @functools.cached_property
    def for_each(self) -> ForEachRunner:
        """Runs the ``forEach`` steps, with this runner's calls."""
        return ForEachRunner(self)

    async def run(self, step_id: str) -> StepOutcome:
        """Run one step to its final state, recording every transition.

        Call it in a task of its own (the scheduler does): once the tool has returned, a
        cancellation waits for the step's final record to be written and the step's outcome is
        returned rather than the cancellation. An unexpected exception (a bug, a tool module
        raising where no tool error is expected) ends the step ``failed`` with the error
        recorded, never a step left ``running`` or ``pending``; only the store's faults and a
        lost lease stop the run instead."""
        started = time.monotonic()
        prior = self.prior_attempts.get(step_id, 0)
        try:
            skipped = await self.check_condition(step_id)
            if skipped is not None:
                return skipped
            step = self.step(step_id)
            if step.for_each is not None:
                return await self.for_each.run(step, started)
            return await (await self._step_call(step_id, started)).run(prior)
        except RUN_STOPPERS:
            raise
        except Exception as error:
            failed = Ending("failed", prior, error=internal_error(step_id, error))
            return await self.finish(self.step(step_id), failed, started)

    async def check_condition(self, step_id: str) -> StepOutcome | None:
        """Evaluate ``step_id``'s ``when`` (its dependencies succeeded): ``None`` when it holds
        (or there is none); else the step is recorded skipped, reason ``condition`` (or
        ``condition-not-boolean`` when it resolved to text), and that outcome returned. A
        condition that cannot be resolved fails the step."""
        step = self.step(step_id)
        if step.when is None:
            return None
        try:
            holds, message = condition_holds(step, await self.inputs.outputs_for(step))
        except TemplateError as error:
            return await self.finish(step, Ending("failed", 0, error=str(error)), time.monotonic())
        except ConditionNotBoolean as error:  # text is no yes/no: fail closed, never run
            message = str(error)
            await self.recorder.skipped(step.id, step.tool, message, reason="condition-not-boolean")
            return StepOutcome("skipped", error=message, reason="condition-not-boolean")
        if holds:
            return None
        await self.recorder.skipped(step.id, step.tool, message, reason="condition")
        return StepOutcome("skipped", error=message, reason="condition")

    async def _step_call(self, step_id: str, started: float) -> StepCall:
        step = self.step(step_id)
        scope = await self.inputs.outputs_for(step)
        return StepCall(self, step, scope, started=started)

    async def run_attempt(
        self, step_id: str, attempt: int, *, first: bool, started: float
    ) -> StepOutcome:
        """One attempt of ``step_id`` (number ``attempt``): :meth:`StepCall.attempt`.
        ``started`` is the :func:`time.monotonic` time the step's first attempt began."""
        return await (await self._step_call(step_id, started)).attempt(attempt, first)

    async def give_up(
        self, step_id: str, attempts: int, started: float, error_text: str
    ) -> StepOutcome:
        """No attempt is left: the fallback once if the step has one, else the step recorded
        as failed with ``error_text`` (:meth:`StepCall.give_up`)."""
        return await (await self._step_call(step_id, started)).give_up(attempts, error_text)


class StepCall(ToolCall[StepOutcome]):
    """The tool call of a plain step, recorded on the step; before its first call, it ends
    without one when the same call succeeded in an earlier version of the request, when it
    waits for a person's approval, or when a read-only tool's result is in the cache."""

    _versions: dict[str, int] | None = None
    """The versions of the tool's resources when the cache was asked, before the first call: a
    result is cached with them, and is stale once a write moves one."""

    async def attempt_started(self, arguments: Any, number: int, first: bool) -> None:
        step, cache = self.step, self.caller.cache
        if self._versions is None and cache is not None and self._cache_ttl() is not None:
            # A retry in a call of its own (a durable backend's attempt): the versions its
            # result will be cached with are read before it calls the tool, as they must be.
            resources = self.caller.catalog.effect(step.tool).resources
            key = cache_key(step.tool, arguments)
            self._versions = (await asyncio.to_thread(cache.cache_get, key, resources)).versions
        await self.caller.recorder.started(
            step.id,
            step.tool,
            number,
            arguments,
            utc_now() if first else None,
            timeout=self.caller.effective_timeout(step.id),
        )

    async def end(self, ending: Ending) -> StepOutcome:
        return await self.caller.finish(self.step, ending, self.started)

    async def before(self, arguments: Any, attempts: int) -> StepOutcome | None:
        """The same call succeeded in an earlier version of the request (no side effect happens
        again, so nothing to approve), the step waits for a person's approval, or a read-only
        tool's result is in the cache (never for a call not approved yet); else ``None``."""
        step, caller = self.step, self.caller
        earlier = caller.earlier.get(cache_key(step.tool, arguments)) if caller.earlier else None
        if earlier is None and caller.gated(step):
            waiting = await caller.wait_for_approval(step, arguments)
            if waiting is not None:
                return waiting
        if earlier is not None:
            reused = Ending("succeeded", attempts, output=earlier.output, resolved=arguments)
            return await caller.finish(step, reused, self.started, reused_from=earlier.source)
        if self._cache_ttl() is None:
            return None
        assert caller.cache is not None
        resources = caller.catalog.effect(step.tool).resources
        lookup = await asyncio.to_thread(
            caller.cache.cache_get, cache_key(step.tool, arguments), resources
        )
        self._versions = lookup.versions  # what a result read from here on is stored with
        hit = lookup.result
        if hit is None:
            return None
        age = round(max(0.0, time.time() - hit.stored_at), 3)
        cached = Ending("succeeded", attempts, output=hit.output, resolved=arguments)
        return await caller.finish(step, cached, self.started, cache_age_seconds=age)

    def _cache_ttl(self) -> float | None:
        """Seconds a result of the step's tool may be reused; ``None``: not cached."""
        if self.caller.cache is None:
            return None
        return self.caller.cache_ttl(self.step.tool)

    async def succeeded(self, arguments: Any, output: Any) -> None:
        """Keep a successful output of a read-only tool (unless it is too large to store whole).

        Called once the step's success is recorded: a cache entry that cannot be written is
        logged and left out, never the step's failure (the record says succeeded, and it did).
        Only a store that is down stops the run, as any store fault does."""
        ttl = self._cache_ttl()
        cache, tool = self.caller.cache, self.step.tool
        if ttl is None or cache is None or self._versions is None:
            return
        if cap_output(output, self.caller.options.output_limit_bytes)[1]:
            return
        key = cache_key(tool, arguments)
        try:
            await asyncio.to_thread(cache.cache_put, key, tool, output, ttl, self._versions)
        except RUN_STOPPERS:
            raise
        except Exception as error:
            _log.warning("the result of %r was not cached: %s", tool, error)
