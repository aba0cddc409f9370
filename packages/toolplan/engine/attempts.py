"""One attempt path: a tool call of a plain step or of one item of a ``forEach`` step, from its
parameters resolved to its final record.

:class:`Caller` holds what every call of one execution shares (the catalog, the recorder, timeouts,
approvals, the idempotency metadata) and calls the tools. :class:`ToolCall` is one call to its
end: resolve, then attempts, numbered on from an earlier run's and retried as the step's retry
policy decides (:meth:`~toolplan.config.retry.RetryPolicy.after`, the one decision, which the
Temporal activity asks too), then the fallback once, then how it ended recorded, even when the
run is being cancelled meanwhile. A step (:class:`~toolplan.engine.step.StepCall`) and an item
(:class:`~toolplan.engine.foreach.ItemCall`) differ only in where that is recorded and what a
step checks before its first call (an earlier version's effect, an approval, the cache).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from pydantic import ValidationError

from toolplan.config.policies import ExecutionOptions
from toolplan.config.retry import RetryPolicy
from toolplan.engine.approval import covers, current_user, fingerprint, needs_approval
from toolplan.engine.cache import cache_ttl_of
from toolplan.engine.effects import EarlierEffect
from toolplan.engine.inputs import StepInputs
from toolplan.engine.recorder import Recorder
from toolplan.engine.scheduler import Slots, StepOutcome
from toolplan.engine.timeouts import EffectiveTimeout
from toolplan.engine.toolcall import (
    AttemptFailed,
    callbacks_configured,
    invoke_tool,
    normalize_output,
    without_surrogates,
)
from toolplan.errors import ExecutionBusy, TemplateError, ToolOutputInvalid, Unavailable
from toolplan.plan_format.plan import Plan, Step
from toolplan.plan_format.templates import resolve
from toolplan.store.protocol import Decision, ItemRecord, RecordStore, ResultCache, utc_now
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.effects import Effect

__all__ = [
    "RUN_STOPPERS",
    "STORE_CONFIG_KEY",
    "Caller",
    "Ending",
    "FallbackFailed",
    "GaveUp",
    "ToolCall",
    "internal_error",
    "surviving_cancel",
    "with_retries",
]

STORE_CONFIG_KEY = "toolplan_store"
"""Key in ``config["configurable"]`` under which tools find the configured store."""

RUN_STOPPERS: tuple[type[BaseException], ...] = (asyncio.CancelledError, Unavailable, ExecutionBusy)
"""What stops a run rather than failing a step: a cancellation, a store or service fault, a
lost lease. Every other exception raised while a step runs is the step's failure, recorded."""


def internal_error(step_id: str, error: BaseException, *, item: int | None = None) -> str:
    """The error recorded on a step (or one of its items) that an unexpected exception ended."""
    where = f"step {step_id!r}" + (f" item {item}" if item is not None else "")
    return without_surrogates(
        f"internal error in {where}: {type(error).__name__}: {error} (an unexpected exception, "
        "recorded as the step's failure; please report it)"
    )


T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class GaveUp:
    """No attempt is left: the last one, number ``attempt``, failed with ``failure``."""

    failure: AttemptFailed
    attempt: int


@dataclass(frozen=True)
class Ending:
    """How a tool call ended, as :meth:`ToolCall.end` records it."""

    status: Literal["succeeded", "failed"]
    attempts: int
    output: Any = None
    error: str | None = None
    used_fallback: bool = False
    resolved: Any = None
    """The arguments the tool was called with, when they resolved."""


class FallbackFailed(Exception):
    """A step's (or an item's) fallback failed too; the message says both failures."""


async def with_retries(
    attempt: Callable[[int, bool], Awaitable[T]],
    *,
    prior: int,
    after: Callable[[AttemptFailed, int], float | None],
    retrying: Callable[[int, AttemptFailed], None],
) -> T | GaveUp:
    """``attempt(number, first)`` until it returns or the retry policy gives up.

    Numbers go on from ``prior`` (attempts an earlier run made). After an :class:`AttemptFailed`
    of attempt ``number``, ``after(failure, number)`` decides
    (:meth:`~toolplan.config.retry.RetryPolicy.after`): ``None`` ends the loop as
    :class:`GaveUp`; otherwise ``retrying(number, failure)`` is told and that many seconds are
    waited before the next attempt.
    """
    number = prior
    while True:
        number += 1
        try:
            return await attempt(number, number == prior + 1)
        except AttemptFailed as failed:
            delay = after(failed, number)
            if delay is None:
                return GaveUp(failed, number)
            retrying(number, failed)
            await asyncio.sleep(delay)


async def surviving_cancel(recording: Coroutine[Any, Any, T]) -> T:
    """Run ``recording`` (a final record's write) to its end, even when the task is cancelled
    meanwhile; then the cancellation is dropped and the record returned.

    The tool has returned, so its effect happened: how it ended is written even if the run is
    being cancelled (Ctrl-C, --fail-fast). Otherwise it would stay "running" or be marked
    skipped, and a resume would call the tool again. A write that never waits (a store kept in
    memory) ends here, with no task and no turn of the event loop; one that waits goes on in a
    task of its own, shielded from the caller's cancellation."""
    try:
        waiting_on = recording.send(None)
    except StopIteration as written:
        return cast(T, written.value)
    writing = asyncio.ensure_future(_resumed(recording, waiting_on))
    try:
        return await asyncio.shield(writing)
    except asyncio.CancelledError:
        stored = await writing
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        return stored


async def _resumed(coroutine: Coroutine[Any, Any, T], waiting_on: Any) -> T:
    """Drive ``coroutine`` on from where it suspended, waiting on ``waiting_on``, as a task
    would: it sees that future's outcome itself when it resumes."""
    while True:
        if isinstance(waiting_on, asyncio.Future):
            waiting_on._asyncio_future_blocking = False
            await asyncio.wait([waiting_on])
        else:  # a bare yield (``asyncio.sleep(0)``)
            await asyncio.sleep(0)
        try:
            waiting_on = coroutine.send(None)
        except StopIteration as written:
            return cast(T, written.value)


class Caller:
    """What the tool calls of one execution share, and the calls themselves: timeouts, retries,
    approvals, the idempotency metadata, what an earlier run left, and the step's final record.

    Stateless between steps except through ``inputs`` and the store, so a backend may build one
    per step in another process as well as one for all of them."""

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
        """Attempts an earlier run made, by step: numbers go on from there."""
        self.rng = rng or random.Random()
        # Checked once per execution: with no callback handler anywhere (tracing, verbose, hooks),
        # plain tools are called without LangChain's callback machinery (same semantics).
        self._fast_calls = not callbacks_configured()
        self.cache = cache if options.cache else None
        """The shared result cache for read-only tools (``None``: no caching)."""
        self.written_to = cache
        """Where a write's end is told (:meth:`finish`), with or without caching in this run:
        no later run may read from the cache what this one's writes changed."""
        self.timeouts = dict(timeouts or {})
        """Effective timeouts by step (:func:`~toolplan.engine.timeouts.load_step_timeouts`);
        a step missing here gets its plan ``timeout`` or the default."""
        self.earlier = dict(earlier or {})
        """Succeeded side effects of earlier versions of the request, by call key
        (:func:`~toolplan.engine.effects.earlier_effects`): never repeated."""
        self.prior_items = dict(prior_items or {})
        """Item records an earlier run of a ``forEach`` step left (resume runs the others)."""
        self.slots = slots or Slots(options.concurrency)
        """The plan's concurrency limit, shared with the scheduler: each ``forEach`` item holds
        a slot."""
        self._ttls: dict[str, float | None] = {}
        self._effects: dict[str, Effect] = {}
        self._policies: dict[str, RetryPolicy] = {}
        self.decisions: dict[str, Decision] = dict(decisions or {})
        """People's decisions on steps that waited for approval, from the step records: an
        approval lets its step call the tool with the arguments that were shown, no others."""

    def step(self, step_id: str) -> Step:
        """The plan's step ``step_id``."""
        return self._steps[step_id]

    def cache_ttl(self, tool: str) -> float | None:
        """Seconds a result of ``tool`` may be reused from the cache; ``None``: never (looked
        up once per tool and execution: asked before and after each call)."""
        if tool not in self._ttls:
            self._ttls[tool] = cache_ttl_of(self.catalog.get(tool), self.options.cache_ttl)
        return self._ttls[tool]

    def step_effect(self, step: Step) -> Effect:
        """What running ``step`` may do (its tool's effect and its fallback's), once per step."""
        effect = self._effects.get(step.id)
        if effect is None:
            effect = self._effects[step.id] = self.catalog.step_effect(step)
        return effect

    def effective_timeout(self, step_id: str) -> EffectiveTimeout:
        """Seconds one attempt of ``step_id`` may take, and where that came from."""
        known = self.timeouts.get(step_id)
        if known is not None:
            return known
        own = self._steps[step_id].timeout
        if own:
            return EffectiveTimeout(float(own), "plan")
        return EffectiveTimeout(self.options.default_timeout, "default")

    def retry_policy(self, step_id: str) -> RetryPolicy:
        """The retry policy of ``step_id``'s calls: the run's, under its tool's own and its
        ``maxAttempts`` (:meth:`~toolplan.config.retry.RetryPolicy.for_call`), once per step."""
        policy = self._policies.get(step_id)
        if policy is None:
            step = self._steps[step_id]
            policy = self.options.retry.for_call(self.catalog.get(step.tool), step.max_attempts)
            self._policies[step_id] = policy
        return policy

    def max_attempts(self, step_id: str) -> int:
        """Attempts ``step_id`` gets in all, an earlier run's included."""
        return self.retry_policy(step_id).max_attempts

    def after(self, step_id: str, failure: AttemptFailed, attempts: int) -> float | None:
        """After ``attempts`` attempts of ``step_id``, the last failing with ``failure``: seconds
        to wait before the next one, or ``None``: no attempt follows (the one retry decision,
        :meth:`~toolplan.config.retry.RetryPolicy.after`)."""
        return self.retry_policy(step_id).after(
            failure, self._steps[step_id].tool, attempts, self.rng
        )

    def final_error(self, step_id: str, failure: AttemptFailed, attempts: int) -> str:
        """The error a step ends with after ``attempts`` attempts, the last of which failed
        with ``failure``."""
        if self.retry_policy(step_id).exhausted(failure, self._steps[step_id].tool, attempts):
            return f"{failure} (after {attempts} attempts)"
        return str(failure)

    def arguments_schema(self, tool: str) -> dict[str, Any]:
        """The tool's argument schema with ``$ref``s inlined, for resolving templates as its
        arguments' types expect (the catalog keeps it)."""
        return self.catalog.arguments_schema(tool)

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

    async def _call(
        self, tool: BaseTool, arguments: Any, config: RunnableConfig, timeout: float
    ) -> Any:
        try:
            async with asyncio.timeout(timeout):
                output = await invoke_tool(tool, arguments, config, fast=self._fast_calls)
                return normalize_output(output, tool=tool.name)
        except ToolOutputInvalid as error:  # the tool ran: calling it again repeats its effect
            raise AttemptFailed(
                without_surrogates(error.message),
                kind="invalid_output",
                tool=tool.name,
                error=error,
            ) from None
        except ToolException as error:
            raise AttemptFailed(
                without_surrogates(f"tool {tool.name!r} reported an error: {error}"),
                kind="tool_error",
                tool=tool.name,
                error=error,
            ) from None
        except ValidationError as error:
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors()
            )
            raise AttemptFailed(
                f"tool {tool.name!r} rejected its arguments: {detail}",
                kind="invalid_arguments",
                tool=tool.name,
                error=error,
            ) from None
        except TimeoutError:
            raise AttemptFailed(
                f"tool {tool.name!r} timed out after {timeout:g}s and was cancelled",
                kind="timeout",
                tool=tool.name,
            ) from None
        except (asyncio.CancelledError, Unavailable):
            raise
        except Exception as error:
            raise AttemptFailed(
                without_surrogates(f"tool {tool.name!r} raised {type(error).__name__}: {error}"),
                kind="exception",
                tool=tool.name,
                error=error,
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
        ending: Ending,
        started: float,
        *,
        cache_age_seconds: float | None = None,
        reused_from: str | None = None,
    ) -> StepOutcome:
        """Record how ``step`` ended (``started``: the :func:`time.monotonic` time it began),
        even while the run is being cancelled, and return that outcome; a success's output
        becomes its dependents' input. ``cache_age_seconds``: the output came from the result
        cache; ``reused_from``: from an earlier version of the request (no tool was called)."""
        duration_ms = round((time.monotonic() - started) * 1000, 3)
        done_before = cache_age_seconds is not None or reused_from is not None
        status, output, error = ending.status, ending.output, ending.error
        effect = self.step_effect(step)

        async def record() -> StepOutcome:
            if not effect.read_only and self.written_to is not None:
                # Before the record that lets the steps ordered after it start: they (and every
                # later run) find nothing cached from before this write. A failed call may
                # have written part of its effect too.
                await asyncio.to_thread(self.written_to.cache_written, effect.resources)
            await self.recorder.finished(
                step.id,
                step.tool,
                status=status,
                attempts=ending.attempts,
                output=output,
                error=error,
                duration_ms=duration_ms,
                used_fallback=ending.used_fallback,
                resolved=ending.resolved,
                cache_age_seconds=cache_age_seconds,
                started_at=utc_now() if done_before else None,
                reused_from=reused_from,
            )
            if status == "succeeded":
                self.inputs.succeeded(step.id, output)
            return StepOutcome(status, output=output, error=error)

        return await surviving_cancel(record())


class ToolCall(ABC, Generic[R]):
    """One call of ``step``'s tool to its final record ``R``, for the step itself or for one of
    its ``forEach`` items: its parameters resolved against ``scope``, attempts with the step's
    timeout and retries, then its fallback once; an unexpected exception fails it, recorded.

    ``started`` is the :func:`time.monotonic` time the call (or the step) began. A backend that
    retries attempts itself (a durable-workflow engine's retry policy) composes the parts
    :meth:`run` is made of: :meth:`attempt` for each attempt, then :meth:`give_up`."""

    def __init__(
        self,
        caller: Caller,
        step: Step,
        scope: Mapping[str, Any],
        *,
        started: float,
        item: int | None = None,
    ) -> None:
        self.caller = caller
        self.step = step
        self.scope = scope
        self.started = started
        self.item = item
        self._arguments: tuple[Any] | None = None

    def arguments(self) -> Any:
        """The tool's arguments: the step's parameters resolved against the scope (once).
        Raises :class:`~toolplan.errors.TemplateError`."""
        if self._arguments is None:
            schema = self.caller.arguments_schema(self.step.tool)
            self._arguments = (resolve(self.step.parameters, self.scope, schema),)
        return self._arguments[0]

    async def run(self, prior: int) -> R:
        """The call to its final record, its attempts numbered on from ``prior``."""
        step, caller = self.step, self.caller
        try:
            result = await with_retries(
                self.attempt,
                prior=prior,
                after=lambda failed, attempts: caller.after(step.id, failed, attempts),
                retrying=lambda number, failed: caller.recorder.retrying(
                    step.id, step.tool, number, str(failed), item=self.item
                ),
            )
            if not isinstance(result, GaveUp):
                return result
            error_text = caller.final_error(step.id, result.failure, result.attempt)
            return await self.give_up(result.attempt, error_text)
        except RUN_STOPPERS:
            raise
        except Exception as error:
            failed = internal_error(step.id, error, item=self.item)
            return await self.end(Ending("failed", prior, error=failed))

    async def attempt(self, number: int, first: bool) -> R:
        """Attempt ``number``: the final record when the call ended (succeeded; failed because a
        template could not be resolved, which no retry or fallback helps; or, on the ``first``
        attempt, :meth:`before` ended it); :class:`AttemptFailed` when the tool call failed."""
        try:
            arguments = self.arguments()
        except TemplateError as error:
            return await self.end(Ending("failed", number - 1, error=str(error)))
        if first and (done := await self.before(arguments, number - 1)) is not None:
            return done
        await self.attempt_started(arguments, number, first)
        timeout = self.caller.effective_timeout(self.step.id).seconds
        output = await self.caller.call_tool(self.step, arguments, number, timeout, item=self.item)
        ended = await self.end(Ending("succeeded", number, output=output, resolved=arguments))
        await self.succeeded(arguments, output)
        return ended

    async def give_up(self, attempts: int, error_text: str) -> R:
        """No attempt is left: call the fallback once if the step has one, else record the
        call as failed with ``error_text``."""
        step = self.step
        arguments = None
        with contextlib.suppress(TemplateError):
            arguments = self.arguments()
        if step.fallback is None:
            return await self.end(Ending("failed", attempts, error=error_text, resolved=arguments))
        self.caller.recorder.falling_back(
            step.id, step.tool, attempts, error_text, step.fallback.tool, item=self.item
        )
        try:
            output = await self.caller.call_fallback(
                step, self.scope, attempts, error_text, item=self.item
            )
        except FallbackFailed as failed:
            return await self.end(Ending("failed", attempts, error=str(failed), resolved=arguments))
        return await self.end(
            Ending("succeeded", attempts, output=output, used_fallback=True, resolved=arguments)
        )

    async def before(self, arguments: Any, attempts: int) -> R | None:
        """Before the first call: the final record when the call ends without it, else
        ``None`` (the default)."""
        return None

    async def succeeded(self, arguments: Any, output: Any) -> None:
        """After a success of the tool itself is recorded (nothing, by default)."""
        return None

    @abstractmethod
    async def attempt_started(self, arguments: Any, number: int, first: bool) -> None:
        """Record that attempt ``number`` begins: stored before the tool is called."""

    @abstractmethod
    async def end(self, ending: Ending) -> R:
        """Record how the call ended, even while the run is being cancelled
        (:func:`surviving_cancel`), and return that record."""
