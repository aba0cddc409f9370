"""Running one step: its ``when`` condition, then resolve templates, call the tool with timeout and
retries, then the fallback; for a ``forEach`` step, all of that once per item
(:mod:`toolplan.engine.foreach`, through this runner's calls), each item recorded on its own."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from pydantic import ValidationError

from toolplan.config.policies import ExecutionOptions
from toolplan.engine.approval import covers, current_user, fingerprint, needs_approval
from toolplan.engine.attempts import RUN_STOPPERS, FallbackFailed, internal_error, with_retries
from toolplan.engine.cache import cache_key, cache_ttl_of
from toolplan.engine.effects import EarlierEffect
from toolplan.engine.foreach import ForEachRunner
from toolplan.engine.inputs import StepInputs
from toolplan.engine.items import ConditionNotBoolean, condition_holds
from toolplan.engine.recorder import Recorder
from toolplan.engine.scheduler import Slots, StepOutcome
from toolplan.engine.timeouts import EffectiveTimeout
from toolplan.engine.toolcall import (
    AttemptFailed,
    FailureKind,
    callbacks_configured,
    invoke_tool,
    normalize_output,
    without_surrogates,
)
from toolplan.errors import TemplateError, ToolOutputInvalid, Unavailable
from toolplan.plan_format.json_schema import inline_refs
from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import resolve
from toolplan.store.protocol import (
    Decision,
    ItemRecord,
    RecordStore,
    ResultCache,
    cap_output,
    utc_now,
)
from toolplan.tools.catalog import ToolCatalog

__all__ = [
    "STORE_CONFIG_KEY",
    "AttemptFailed",
    "FailureKind",
    "StepRunner",
    "normalize_output",
    "without_surrogates",
]

_log = logging.getLogger(__name__)

STORE_CONFIG_KEY = "toolplan_store"
"""Key in ``config["configurable"]`` under which tools find the configured store."""


class StepRunner:
    """Executes steps of one plan: resolve templates from ``inputs``, call the tool with timeout,
    retries and fallback, and record every transition with ``recorder``.

    Stateless between steps except through ``inputs`` and the store, so a backend may run each
    step in a different process (one runner per step) as well as all of them in one. A backend
    that retries attempts itself (a durable-workflow engine's retry policy) composes the pieces
    :meth:`run` is made of: :meth:`run_attempt` for each attempt, then :meth:`final_error` and
    :meth:`give_up` once no attempt is left; for a ``forEach`` step, those of :attr:`for_each`.
    """

    def __init__(
        self,
        plan: Plan,
        catalog: ToolCatalog,
        recorder: Recorder,
        options: ExecutionOptions,
        *,
        request_id: str,
        plan_id: str,
        store: RecordStore,
        inputs: StepInputs,
        prior_attempts: Mapping[str, int] | None = None,
        rng: random.Random | None = None,
        cache: ResultCache | None = None,
        timeouts: Mapping[str, EffectiveTimeout] | None = None,
        earlier: Mapping[str, EarlierEffect] | None = None,
        prior_items: Mapping[str, list[ItemRecord]] | None = None,
        slots: Slots | None = None,
        decisions: Mapping[str, Decision] | None = None,
    ) -> None:
        self.plan = plan
        # Plan.step() scans the list; a dict keeps a step's lookup O(1), so large plans stay linear.
        self._steps = {step.id: step for step in plan.steps}
        self.catalog = catalog
        self.recorder = recorder
        self.options = options
        self.request_id = request_id
        self.plan_id = plan_id
        self.store = store
        self.inputs = inputs
        self.prior_attempts = dict(prior_attempts or {})
        self.rng = rng or random.Random()
        # Checked once per execution: with no callback handler anywhere (tracing, verbose, hooks),
        # plain tools are called without LangChain's callback machinery (same semantics).
        self._fast_calls = not callbacks_configured()
        self.cache = cache if options.cache else None
        """The shared result cache for read-only tools (``None``: no caching)."""
        self.timeouts = dict(timeouts or {})
        """Effective timeouts by step (:func:`~toolplan.engine.timeouts.load_step_timeouts`);
        a step missing here gets its plan ``timeout`` or the default."""
        self._schemas: dict[str, dict[str, Any]] = {}
        self.earlier = dict(earlier or {})
        """Succeeded side effects of earlier versions of the request, by call key
        (:func:`~toolplan.engine.effects.earlier_effects`): never repeated."""
        self.decisions: dict[str, Decision] = dict(decisions or {})
        """People's decisions on steps that waited for approval, from the step records: an
        approval lets its step call the tool with the arguments that were shown, no others."""
        self.for_each = ForEachRunner(
            self,
            recorder=recorder,
            options=options,
            inputs=inputs,
            slots=slots or Slots(options.concurrency),
            prior_items=prior_items,
        )
        """Runs the ``forEach`` steps, with ``prior_items`` (item records an earlier run left)
        and ``slots`` (the plan's concurrency limit, shared with the scheduler)."""

    def _config(
        self, step: Step, attempt: int, *, fallback: bool = False, item: int | None = None
    ) -> RunnableConfig:
        key = f"{self.plan_id}:{step.id}" + (f"[{item}]" if item is not None else "")
        key += ":fallback" if fallback else ""
        metadata: dict[str, Any] = {
            "request_id": self.request_id,
            "plan_id": self.plan_id,
            "step_id": step.id,
            "attempt": attempt,
            "idempotency_key": key,
        }
        if item is not None:
            metadata["item"] = item
        return {
            "run_name": f"{step.id}:{step.fallback.tool if fallback and step.fallback else step.tool}",
            "metadata": metadata,
            "configurable": {STORE_CONFIG_KEY: self.store},
        }

    def step(self, step_id: str) -> Step:
        """The plan's step ``step_id``."""
        return self._steps[step_id]

    def effective_timeout(self, step_id: str) -> EffectiveTimeout:
        """Seconds one attempt of ``step_id`` may take, and where that came from."""
        known = self.timeouts.get(step_id)
        if known is not None:
            return known
        own = self._steps[step_id].timeout
        if own:
            return EffectiveTimeout(float(own), "plan")
        return EffectiveTimeout(self.options.default_timeout, "default")

    def timeout(self, step_id: str) -> float:
        """Seconds one attempt of ``step_id`` may take."""
        return self.effective_timeout(step_id).seconds

    def max_attempts(self, step_id: str) -> int:
        """Attempts ``step_id`` gets for transient errors."""
        return self._steps[step_id].max_attempts or self.options.retry.max_attempts

    async def _call(
        self, tool: BaseTool, arguments: Any, config: RunnableConfig, timeout: float
    ) -> Any:
        try:
            async with asyncio.timeout(timeout):
                output = await invoke_tool(tool, arguments, config, fast=self._fast_calls)
                return normalize_output(output, tool=tool.name)
        except ToolOutputInvalid as error:  # the tool ran: calling it again repeats its effect
            raise AttemptFailed(without_surrogates(error.message), kind="invalid_output") from None
        except ToolException as error:
            raise AttemptFailed(
                without_surrogates(f"tool {tool.name!r} reported an error: {error}"),
                kind="tool_error",
            ) from None
        except ValidationError as error:
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors()
            )
            raise AttemptFailed(
                f"tool {tool.name!r} rejected its arguments: {detail}", kind="invalid_arguments"
            ) from None
        except TimeoutError:
            raise AttemptFailed(
                f"tool {tool.name!r} timed out after {timeout:g}s and was cancelled", kind="timeout"
            ) from None
        except (asyncio.CancelledError, Unavailable):
            raise
        except Exception as error:
            raise AttemptFailed(
                without_surrogates(f"tool {tool.name!r} raised {type(error).__name__}: {error}"),
                kind="exception",
            ) from None

    async def call_tool(
        self,
        step: Step,
        arguments: Any,
        attempt: int,
        timeout: float,
        *,
        fallback: bool = False,
        item: int | None = None,
    ) -> Any:
        """One call of ``step``'s tool (its fallback's with ``fallback``; ``item``: of a
        ``forEach`` step), cancelled after ``timeout`` seconds; its normalized output, or
        :class:`AttemptFailed` saying what went wrong."""
        tool = step.fallback.tool if fallback and step.fallback else step.tool
        return await self._call(
            self.catalog.get(tool),
            arguments,
            self._config(step, attempt, fallback=fallback, item=item),
            timeout,
        )

    async def run(self, step_id: str) -> StepOutcome:
        """Run one step to its final state, recording every transition.

        Call it in a task of its own (the scheduler does): once the tool has returned, a
        cancellation waits for the step's final record to be written and the step's outcome is
        returned rather than the cancellation. An unexpected exception (a bug, a tool module
        raising where no tool error is expected) ends the step ``failed`` with the error
        recorded, never a step left ``running`` or ``pending``; only the store's faults and a
        lost lease stop the run instead."""
        started = time.monotonic()
        try:
            return await self._run(step_id, started)
        except RUN_STOPPERS:
            raise
        except Exception as error:
            return await self.finish(
                self._steps[step_id],
                "failed",
                self.prior_attempts.get(step_id, 0),
                started,
                error=internal_error(step_id, error),
            )

    async def _run(self, step_id: str, started: float) -> StepOutcome:
        step = self._steps[step_id]
        max_attempts = self.max_attempts(step_id)
        base = self.prior_attempts.get(step_id, 0)

        skipped = await self.check_condition(step_id)
        if skipped is not None:
            return skipped
        if step.for_each is not None:
            return await self.for_each.run(step, started)

        try:
            arguments = await self._resolve(step)
        except TemplateError as error:
            return await self.finish(step, "failed", base, started, error=str(error))

        cached = await self._done_before(step, arguments, base, started)
        if cached is not None:
            return cached

        result = await with_retries(
            lambda number, first: self._attempt(step, arguments, number, started, first=first),
            prior=base,
            max_attempts=max_attempts,
            retrying=lambda number, failed: self.recorder.retrying(
                step.id, step.tool, number, str(failed)
            ),
            backoff=self.backoff,
        )
        if isinstance(result, StepOutcome):
            return result
        error_text = self.final_error(step_id, result.failure, result.attempt - base)
        return await self.give_up(step_id, result.attempt, started, error_text, arguments=arguments)

    def backoff(self, failures: int) -> float:
        """Seconds to wait before the next attempt, after ``failures`` failed ones."""
        return self.options.retry.delay(failures, self.rng)

    async def check_condition(self, step_id: str) -> StepOutcome | None:
        """Evaluate ``step_id``'s ``when`` (its dependencies succeeded): ``None`` when it holds
        (or there is none); else the step is recorded skipped, reason ``condition`` (or
        ``condition-not-boolean`` when it resolved to text), and that outcome returned. A
        condition that cannot be resolved fails the step."""
        step = self._steps[step_id]
        if step.when is None:
            return None
        try:
            holds, message = condition_holds(step, await self.inputs.outputs_for(step))
        except TemplateError as error:
            return await self.finish(step, "failed", 0, time.monotonic(), error=str(error))
        except ConditionNotBoolean as error:  # text is no yes/no: fail closed, never run
            message = str(error)
            await self.recorder.skipped(step.id, step.tool, message, reason="condition-not-boolean")
            return StepOutcome("skipped", error=message, reason="condition-not-boolean")
        if holds:
            return None
        await self.recorder.skipped(step.id, step.tool, message, reason="condition")
        return StepOutcome("skipped", error=message, reason="condition")

    async def _resolve(self, step: Step) -> Any:
        outputs = await self.inputs.outputs_for(step)
        return resolve(step.parameters, outputs, self.arguments_schema(step.tool))

    def arguments_schema(self, tool: str) -> dict[str, Any]:
        """The tool's argument schema with ``$ref``s inlined, for resolving templates as its
        arguments' types expect."""
        schema = self._schemas.get(tool)
        if schema is None:
            schema = self._schemas[tool] = inline_refs(self.catalog.info(tool).parameters)
        return schema

    async def run_attempt(
        self, step_id: str, attempt: int, *, first: bool, started: float
    ) -> StepOutcome:
        """One attempt of ``step_id`` (number ``attempt``): resolve its templates, record it as
        running (with its start time when ``first``), call the tool and record a success.

        Returns the outcome when the step is final: succeeded, or failed because a template
        could not be resolved (recorded; no retry or fallback helps). Raises
        :class:`AttemptFailed` when the tool call failed: the caller retries or gives up.
        ``started`` is the :func:`time.monotonic` time the step's first attempt began.
        """
        step = self._steps[step_id]
        try:
            arguments = await self._resolve(step)
        except TemplateError as error:
            return await self.finish(step, "failed", attempt - 1, started, error=str(error))
        if first:
            cached = await self._done_before(step, arguments, attempt - 1, started)
            if cached is not None:
                return cached
        return await self._attempt(step, arguments, attempt, started, first=first)

    def _cache_ttl(self, step: Step) -> float | None:
        """Seconds a result of ``step``'s tool may be reused; ``None``: not cached."""
        if self.cache is None:
            return None
        return cache_ttl_of(self.catalog.get(step.tool), self.options.cache_ttl)

    def gated(self, step: Step) -> bool:
        """Whether ``step``'s tool is called only once its call is approved (by a person, or by
        the run's ``approve_all``, which records its decision)."""
        return needs_approval(step, self.catalog.get(step.tool))

    async def wait_for_approval(self, step: Step, arguments: Any) -> StepOutcome | None:
        """``None`` when an approval covers calling ``step``'s tool with ``arguments`` (with
        ``approve_all``, one is recorded on the step first: every call of a gated tool has its
        decision on record); else the step is recorded ``waiting_approval`` with them and that
        outcome returned."""
        if covers(self.decisions.get(step.id), step.tool, arguments):
            return None
        if self.options.approve_all:
            decision = Decision(
                "approved",
                self.options.approver or current_user(),
                utc_now(),
                fingerprint(step.tool, arguments),
                via="approveAll",
            )
            await self.recorder.approved(step.id, decision)
            self.decisions[step.id] = decision
            return None
        await self.recorder.waiting(step.id, step.tool, arguments)
        return StepOutcome("waiting")

    async def _done_before(
        self, step: Step, arguments: Any, attempts: int, started: float
    ) -> StepOutcome | None:
        """The step ends before its tool is called: the same call succeeded in an earlier
        version of the request (no side effect happens again, so nothing to approve), it waits
        for a person's approval, or a read-only tool's result is in the cache (never for a call
        not approved yet); else ``None``."""
        earlier = self.earlier.get(cache_key(step.tool, arguments)) if self.earlier else None
        if earlier is None and self.gated(step):
            waiting = await self.wait_for_approval(step, arguments)
            if waiting is not None:
                return waiting
        if earlier is not None:
            return await self.finish(
                step,
                "succeeded",
                attempts,
                started,
                output=earlier.output,
                resolved=arguments,
                reused_from=earlier.source,
            )
        return await self._from_cache(step, arguments, attempts, started)

    async def _from_cache(
        self, step: Step, arguments: Any, attempts: int, started: float
    ) -> StepOutcome | None:
        """The step finished from the shared cache (its tool not called), or ``None``."""
        if self._cache_ttl(step) is None:
            return None
        assert self.cache is not None
        hit = await asyncio.to_thread(self.cache.cache_get, cache_key(step.tool, arguments))
        if hit is None:
            return None
        return await self.finish(
            step,
            "succeeded",
            attempts,
            started,
            output=hit.output,
            resolved=arguments,
            cache_age_seconds=round(max(0.0, time.time() - hit.stored_at), 3),
        )

    async def _attempt(
        self, step: Step, arguments: Any, attempt: int, started: float, *, first: bool
    ) -> StepOutcome:
        timeout = self.effective_timeout(step.id)
        await self.recorder.started(
            step.id, step.tool, attempt, arguments, utc_now() if first else None, timeout=timeout
        )
        output = await self.call_tool(step, arguments, attempt, timeout.seconds)
        outcome = await self.finish(
            step, "succeeded", attempt, started, output=output, resolved=arguments
        )
        ttl = self._cache_ttl(step)
        if ttl is not None:
            await self._cache_put(cache_key(step.tool, arguments), step.tool, output, ttl)
        return outcome

    def final_error(self, step_id: str, failure: AttemptFailed, attempts_made: int) -> str:
        """The error a step ends with after ``attempts_made`` attempts, the last of which failed
        with ``failure``."""
        max_attempts = self.max_attempts(step_id)
        if max_attempts > 1 and attempts_made == max_attempts and failure.kind != "tool_error":
            return f"{failure} (after {max_attempts} attempts)"
        return str(failure)

    async def give_up(
        self,
        step_id: str,
        attempts: int,
        started: float,
        error_text: str,
        *,
        arguments: Any = None,
    ) -> StepOutcome:
        """No attempt is left: call the fallback once if the step has one, else record the step
        as failed with ``error_text``."""
        step = self._steps[step_id]
        if arguments is None:
            with contextlib.suppress(TemplateError):
                arguments = await self._resolve(step)
        if step.fallback is not None:
            self.recorder.falling_back(step.id, step.tool, attempts, error_text, step.fallback.tool)
            return await self._fallback(step, attempts, started, error_text, arguments)
        return await self.finish(
            step, "failed", attempts, started, error=error_text, resolved=arguments
        )

    async def _cache_put(self, key: str, tool: str, output: Any, ttl: float) -> None:
        """Keep a successful output of a read-only tool (unless it is too large to store whole).

        Called once the step's success is recorded: a cache entry that cannot be written is
        logged and left out, never the step's failure (the record says succeeded, and it did).
        Only a store that is down stops the run, as any store fault does."""
        assert self.cache is not None
        if cap_output(output, self.options.output_limit_bytes)[1]:
            return
        try:
            await asyncio.to_thread(self.cache.cache_put, key, tool, output, ttl)
        except RUN_STOPPERS:
            raise
        except Exception as error:
            _log.warning("the result of %r was not cached: %s", tool, error)

    async def _fallback(
        self, step: Step, attempts: int, started: float, error_text: str, arguments: Any
    ) -> StepOutcome:
        scope = await self.inputs.outputs_for(step)
        try:
            output = await self.call_fallback(step, scope, attempts, error_text)
        except FallbackFailed as failed:
            return await self.finish(
                step, "failed", attempts, started, error=str(failed), resolved=arguments
            )
        return await self.finish(
            step,
            "succeeded",
            attempts,
            started,
            output=output,
            used_fallback=True,
            resolved=arguments,
        )

    async def call_fallback(
        self,
        step: Step,
        scope: Mapping[str, Any],
        attempts: int,
        error_text: str,
        *,
        item: int | None = None,
    ) -> Any:
        """One call of ``step``'s fallback tool, its parameters resolved against ``scope``, after
        the step (or its item ``item``) gave up with ``error_text``; its output, or
        :class:`FallbackFailed` saying both failures."""
        assert step.fallback is not None
        tool = step.fallback.tool
        if self.catalog.gated(tool):
            # Validation refuses such a plan; one stored before it did is refused here, at the
            # last moment: a fallback runs with nobody asked, so it never calls a gated tool.
            raise FallbackFailed(
                f"{error_text}; fallback {tool!r} was not called: it waits for a person's "
                "approval before every call, and a fallback runs with nobody asked"
            )
        try:
            arguments = resolve(step.fallback.parameters, scope, self.arguments_schema(tool))
            return await self.call_tool(
                step,
                arguments,
                attempts,
                step.timeout or self.options.default_timeout,
                fallback=True,
                item=item,
            )
        except (TemplateError, AttemptFailed) as failure:
            raise FallbackFailed(f"{error_text}; fallback {tool!r} failed too: {failure}") from None
        except RUN_STOPPERS:
            raise
        except Exception as error:
            raise FallbackFailed(
                f"{error_text}; fallback {tool!r} failed too: {internal_error(step.id, error)}"
            ) from None

    async def finish(
        self,
        step: Step,
        status: Literal["succeeded", "failed"],
        attempts: int,
        started: float,
        *,
        output: Any = None,
        error: str | None = None,
        used_fallback: bool = False,
        resolved: Any = None,
        cache_age_seconds: float | None = None,
        reused_from: str | None = None,
    ) -> StepOutcome:
        """Record how ``step`` ended (``started``: the :func:`time.monotonic` time it began) and
        return that outcome; a success's output becomes its dependents' input."""
        duration_ms = round((time.monotonic() - started) * 1000, 3)
        # The tool has returned, so its effect happened: the record of how the step ended is
        # written even if the run is being cancelled (Ctrl-C, --fail-fast) meanwhile. Otherwise
        # the step would stay "running" or be marked skipped, and a resume would run it again.
        recording = asyncio.ensure_future(
            self._record(
                step,
                status,
                attempts,
                duration_ms,
                output,
                error,
                used_fallback,
                resolved,
                cache_age_seconds,
                reused_from,
            )
        )
        try:
            return await asyncio.shield(recording)
        except asyncio.CancelledError:
            outcome = await recording
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return outcome

    async def _record(
        self,
        step: Step,
        status: Literal["succeeded", "failed"],
        attempts: int,
        duration_ms: float,
        output: Any,
        error: str | None,
        used_fallback: bool,
        resolved: Any,
        cache_age_seconds: float | None = None,
        reused_from: str | None = None,
    ) -> StepOutcome:
        done_before = cache_age_seconds is not None or reused_from is not None
        await self.recorder.finished(
            step.id,
            step.tool,
            status=status,
            attempts=attempts,
            output=output,
            error=error,
            duration_ms=duration_ms,
            used_fallback=used_fallback,
            resolved=resolved,
            cache_age_seconds=cache_age_seconds,
            started_at=utc_now() if done_before else None,
            reused_from=reused_from,
        )
        if status == "succeeded":
            self.inputs.succeeded(step.id, output)
        return StepOutcome(status, output=output, error=error)
