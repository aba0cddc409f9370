"""Running one step: resolve templates, call the tool with timeout and retries, then the fallback."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from toolplan.engine.cache import cache_key, cache_ttl_of
from toolplan.engine.inputs import StepInputs
from toolplan.engine.policies import ExecutionOptions
from toolplan.engine.recorder import Recorder
from toolplan.engine.scheduler import StepOutcome
from toolplan.engine.toolcall import callbacks_configured, invoke_tool
from toolplan.errors import TemplateError, Unavailable
from toolplan.plan import Plan, Step
from toolplan.store.protocol import RecordStore, ResultCache, cap_output, utc_now
from toolplan.templates import resolve
from toolplan.tools.catalog import ToolCatalog

__all__ = ["STORE_CONFIG_KEY", "StepRunner", "normalize_output", "without_surrogates"]

STORE_CONFIG_KEY = "toolplan_store"
"""Key in ``config["configurable"]`` under which tools find the configured store."""


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def without_surrogates(value: Any) -> Any:
    """``value`` with lone surrogates (text no store can hold, e.g. from a file read with
    ``surrogateescape``) replaced by U+FFFD; the value itself when it has none."""
    if isinstance(value, str):
        return value if value.isascii() else _SURROGATE.sub("\ufffd", value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if text.isascii() or not _SURROGATE.search(text):
        return value
    return json.loads(_SURROGATE.sub("\ufffd", text))


def normalize_output(value: Any) -> Any:
    """Tool output as JSON: objects are kept; strings holding a JSON object or list are parsed.
    Lone surrogates become U+FFFD."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):
                return without_surrogates(value)
            if isinstance(parsed, dict | list):
                return without_surrogates(parsed)
        return without_surrogates(value)
    if isinstance(value, BaseModel):
        return without_surrogates(value.model_dump(mode="json"))
    return without_surrogates(to_jsonable_python(value, fallback=str))


FailureKind = Literal["tool_error", "invalid_arguments", "timeout", "exception"]
"""Why a tool call failed: the tool reported a business error (``ToolException``), rejected its
resolved arguments, timed out, or raised anything else. Only the last two are retried."""


class _CallFailed(Exception):
    def __init__(self, message: str, *, kind: FailureKind) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def retryable(self) -> bool:
        return self.kind in ("timeout", "exception")


class StepRunner:
    """Executes steps of one plan: resolve templates from ``inputs``, call the tool with timeout,
    retries and fallback, and record every transition with ``recorder``.

    Stateless between steps except through ``inputs`` and the store, so a backend may run each
    step in a different process (one runner per step) as well as all of them in one.
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

    def _config(self, step: Step, attempt: int, *, fallback: bool = False) -> RunnableConfig:
        key = f"{self.plan_id}:{step.id}" + (":fallback" if fallback else "")
        return {
            "run_name": f"{step.id}:{step.fallback.tool if fallback and step.fallback else step.tool}",
            "metadata": {
                "request_id": self.request_id,
                "plan_id": self.plan_id,
                "step_id": step.id,
                "attempt": attempt,
                "idempotency_key": key,
            },
            "configurable": {STORE_CONFIG_KEY: self.store},
        }

    async def _call(
        self, tool: BaseTool, arguments: Any, config: RunnableConfig, timeout: float
    ) -> Any:
        try:
            async with asyncio.timeout(timeout):
                output = await invoke_tool(tool, arguments, config, fast=self._fast_calls)
                return normalize_output(output)
        except ToolException as error:
            raise _CallFailed(
                without_surrogates(f"tool {tool.name!r} reported an error: {error}"),
                kind="tool_error",
            ) from None
        except ValidationError as error:
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors()
            )
            raise _CallFailed(
                f"tool {tool.name!r} rejected its arguments: {detail}", kind="invalid_arguments"
            ) from None
        except TimeoutError:
            raise _CallFailed(
                f"tool {tool.name!r} timed out after {timeout:g}s and was cancelled", kind="timeout"
            ) from None
        except (asyncio.CancelledError, Unavailable):
            raise
        except Exception as error:
            raise _CallFailed(
                without_surrogates(f"tool {tool.name!r} raised {type(error).__name__}: {error}"),
                kind="exception",
            ) from None

    async def run(self, step_id: str) -> StepOutcome:
        """Run one step to its final state, recording every transition.

        Call it in a task of its own (the scheduler does): once the tool has returned, a
        cancellation waits for the step's final record to be written and the step's outcome is
        returned rather than the cancellation."""
        step = self._steps[step_id]
        tool = self.catalog.get(step.tool)
        timeout = step.timeout or self.options.default_timeout
        max_attempts = step.max_attempts or self.options.retry.max_attempts
        started = time.monotonic()
        base = self.prior_attempts.get(step_id, 0)

        try:
            arguments = resolve(step.parameters, await self.inputs.outputs_for(step))
        except TemplateError as error:
            return await self._finish(step, "failed", base, started, error=str(error))

        ttl = cache_ttl_of(tool, self.options.cache_ttl) if self.cache is not None else None
        key = cache_key(step.tool, arguments) if ttl is not None else ""
        if ttl is not None:
            assert self.cache is not None
            hit = await asyncio.to_thread(self.cache.cache_get, key)
            if hit is not None:  # answered from the cache: the tool is not called
                return await self._finish(
                    step,
                    "succeeded",
                    base,
                    started,
                    output=hit.output,
                    resolved=arguments,
                    cache_age_seconds=round(max(0.0, time.time() - hit.stored_at), 3),
                )

        error_text = ""
        last_kind: FailureKind | None = None
        attempt = base
        for index in range(max_attempts):
            attempt = base + index + 1
            await self.recorder.started(
                step.id, step.tool, attempt, arguments, utc_now() if index == 0 else None
            )
            try:
                output = await self._call(tool, arguments, self._config(step, attempt), timeout)
            except _CallFailed as failure:
                error_text, last_kind = str(failure), failure.kind
                if not failure.retryable or index == max_attempts - 1:
                    break
                self.recorder.retrying(step.id, step.tool, attempt, error_text)
                await asyncio.sleep(self.options.retry.delay(index + 1, self.rng))
            else:
                outcome = await self._finish(
                    step, "succeeded", attempt, started, output=output, resolved=arguments
                )
                if ttl is not None:
                    await self._cache_put(key, step.tool, output, ttl)
                return outcome

        if max_attempts > 1 and attempt - base == max_attempts and last_kind != "tool_error":
            error_text = f"{error_text} (after {max_attempts} attempts)"
        if step.fallback is not None:
            self.recorder.falling_back(step.id, step.tool, attempt, error_text, step.fallback.tool)
            return await self._fallback(step, attempt, started, error_text, arguments)
        return await self._finish(
            step, "failed", attempt, started, error=error_text, resolved=arguments
        )

    async def _cache_put(self, key: str, tool: str, output: Any, ttl: float) -> None:
        """Keep a successful output of a read-only tool (unless it is too large to store whole)."""
        assert self.cache is not None
        if cap_output(output, self.options.output_limit_bytes)[1]:
            return
        await asyncio.to_thread(self.cache.cache_put, key, tool, output, ttl)

    async def _fallback(
        self, step: Step, attempts: int, started: float, error_text: str, arguments: Any
    ) -> StepOutcome:
        assert step.fallback is not None
        fallback_tool = self.catalog.get(step.fallback.tool)
        try:
            fallback_arguments = resolve(
                step.fallback.parameters, await self.inputs.outputs_for(step)
            )
            output = await self._call(
                fallback_tool,
                fallback_arguments,
                self._config(step, attempts, fallback=True),
                step.timeout or self.options.default_timeout,
            )
        except (TemplateError, _CallFailed) as failure:
            message = f"{error_text}; fallback {step.fallback.tool!r} failed too: {failure}"
            return await self._finish(
                step, "failed", attempts, started, error=message, resolved=arguments
            )
        return await self._finish(
            step,
            "succeeded",
            attempts,
            started,
            output=output,
            used_fallback=True,
            resolved=arguments,
        )

    async def _finish(
        self,
        step: Step,
        status: Any,
        attempts: int,
        started: float,
        *,
        output: Any = None,
        error: str | None = None,
        used_fallback: bool = False,
        resolved: Any = None,
        cache_age_seconds: float | None = None,
    ) -> StepOutcome:
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
        status: Any,
        attempts: int,
        duration_ms: float,
        output: Any,
        error: str | None,
        used_fallback: bool,
        resolved: Any,
        cache_age_seconds: float | None = None,
    ) -> StepOutcome:
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
            started_at=utc_now() if cache_age_seconds is not None else None,
        )
        if status == "succeeded":
            self.inputs.succeeded(step.id, output)
        return StepOutcome(status, output=output, error=error)
