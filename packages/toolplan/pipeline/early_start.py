"""Streamed plan execution: a step of a Python plan starts while the model is still writing.

With ``TOOLPLAN_STREAM_EXECUTION=1`` (``toolplan run --stream``, ``Toolplan(stream_execution=
True)``), each complete statement of a Python answer (:class:`~toolplan.planning.python_format.
StatementScanner`) is offered to :meth:`EarlyStarts.offer`. It starts at once only when all of
these hold, so a half-written plan can never fire a side effect:

- it is a plain call (no ``forEach``, ``when``, ``fallback`` or ``approval``), of a tool the
  catalog has, with arguments that fit the tool's schema (the validator's own
  :func:`~toolplan.validation.dag.check_arguments`);
- its tool is tagged ``read-only`` (:meth:`~toolplan.tools.catalog.ToolCatalog.read_only`) and waits for
  no approval (:meth:`~toolplan.tools.catalog.ToolCatalog.gated`);
- no statement written before it in the same answer has side effects on a resource it reads
  (:mod:`toolplan.validation.ordering`: it would run after that write), or calls a tool the
  catalog lacks;
- its templates name only steps of the same answer that were started early themselves: it waits
  for their outputs, and never starts when one of them failed.

Every other step (a side effect, a gated step, a step over a step not started early) waits for
the whole plan to validate and be stored, exactly as without streaming.

Durable and honest:

- the plan ID is chosen before planning (:attr:`EarlyStarts.plan_id`) and the final plan is
  stored under it;
- each early call is recorded as it starts and ends (the store's records,
  :data:`~toolplan.store.records.EARLY_CALLS`: step, tool, call key, status, output or error), and when the plan is
  stored each one is settled (:meth:`EarlyStarts.settle`): ``adopted`` by the final plan (its
  execution takes the call's output instead of calling the tool again: :meth:`EarlyStarts.
  adopting`), ``cancelled`` (still running, and not in the final plan: the call is cancelled at
  once) or ``unused`` (it finished, and the final plan, after a repair, no longer has it). The
  final plan has a call when its step has the same ID and tool, the same arguments as the tool's
  schema reads them (defaults filled in, ``0`` and ``0.0`` alike), and could have started early
  in that plan too (a read the final plan orders after a write is not adopted: its early
  output is from before the write). The plan's ``meta.earlyStarts`` lists them, with the time
  each saved;
- planning that fails (an invalid last statement, no valid plan after the repairs) cancels what
  is still running; what finished is kept, ``unused``;
- a run killed during planning leaves its early calls recorded under the request (or, without
  one, the query): the next planning of the same request settles them (a call that was running
  died with the process: ``cancelled``) and adopts the finished ones instead of calling the tool
  again (:meth:`EarlyStarts.recall`), for :data:`RESUME_WINDOW` seconds; each finished output is
  claimed once (an idempotent record), so no two plannings adopt it, and once settled
  (``adopted`` or ``unused``) it is never recalled again.

The execution that follows is an ordinary one: the steps adopted are recorded like any other
(``succeeded``, with the output); its tool calls wait for an early call still running instead of
making a second one. On Temporal the execution starts when the plan is complete: the early calls
run in the planning process, and a workflow's activities cannot wait for them, so streamed
execution is off there (:func:`toolplan.pipeline.flow.obtain_plan`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from toolplan.engine.cache import cache_key
from toolplan.engine.toolcall import normalize_output, schema_arguments
from toolplan.plan_format.ids import new_id
from toolplan.plan_format.plan import Plan
from toolplan.plan_format.templates import contains_template, references, resolve
from toolplan.planning.progress import PlanningEvent, PlanningListener, notify
from toolplan.store.protocol import Store, utc_now
from toolplan.store.records import EARLY_CALLS, EarlyCall
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.effects import Effect
from toolplan.validation.dag import check_arguments, effect_order

__all__ = [
    "EARLY_COLLECTION",
    "EARLY_META_KEY",
    "EARLY_SAVED_KEY",
    "RESUME_WINDOW",
    "EarlyStarts",
    "EarlyStatus",
]

_log = logging.getLogger(__name__)

EARLY_COLLECTION = EARLY_CALLS.name
"""The store's collection of early calls (:data:`~toolplan.store.records.EARLY_CALLS`): one record
per change of state, never updated in place."""

EARLY_META_KEY = "earlyStarts"
"""The stored plan's ``meta`` key listing the steps started early and how each was settled."""

EARLY_SAVED_KEY = "earlySavedMs"
"""The stored plan's ``meta`` key with about how much sooner it ends than plan-then-execute."""

RESUME_WINDOW = 3600.0
"""Seconds a finished early call of a planning that never stored its plan (the process died)
may be adopted by the next planning of the same request or query."""

EarlyStatus = Literal["running", "succeeded", "failed", "adopted", "cancelled", "unused"]
"""``running``/``succeeded``/``failed``: the call itself. Settled when the plan is stored (or
planning failed): ``adopted`` (the final plan has it), ``cancelled`` (stopped while running),
``unused`` (it finished, the final plan does not have it)."""


_SETTLED = frozenset({"adopted", "cancelled", "unused"})


class _NotAdoptable(Exception):
    """The early call did not succeed: the step calls its tool as usual."""


@dataclass
class _Early:
    """One early call."""

    step_id: str
    tool: str
    parameters: Any
    """As the model wrote them (templates included)."""
    started: float
    """``time.monotonic()`` when it was started."""
    task: asyncio.Task[Any] | None = None
    key: str | None = None
    """The call key (tool and resolved arguments), once its arguments are resolved."""
    status: EarlyStatus = "running"
    output: Any = None
    error: str | None = None
    finished: float | None = None
    recalled_from: str | None = None
    """The early record of an earlier, interrupted planning whose output this call took."""
    recalled: EarlyCall | None = None
    """That record (settled ``unused`` with this call, should the final plan not adopt it)."""
    settled: EarlyStatus | None = None
    arguments: Any = None
    """The resolved arguments as the tool's schema reads them, once resolved."""


@dataclass
class EarlyStarts:
    """The early calls of one planning run (one request's next plan)."""

    store: Store
    catalog: ToolCatalog
    query: str
    request_id: str | None = None
    listener: PlanningListener | None = None
    model_name: str = ""
    limit: int | None = None
    """How many early calls may run at once (the execution's concurrency); ``None``: any."""
    recall_outputs: bool = True
    """Adopt what an interrupted planning of the same request read (:meth:`recall`); off
    under ``--no-cache``, which asks every read to call its tool."""
    plan_id: str = field(default_factory=lambda: new_id("plan"))
    """The ID the final plan is stored under, chosen before planning."""
    _current: dict[str, _Early] = field(default_factory=dict, repr=False)
    """This answer's early steps by step ID (a repair's answer starts afresh)."""
    _calls: list[_Early] = field(default_factory=list, repr=False)
    _by_key: dict[str, _Early] = field(default_factory=dict, repr=False)
    _recalled: dict[str, EarlyCall] = field(default_factory=dict, repr=False)
    _statements: list[Effect | None] = field(default_factory=list, repr=False)
    """The effect of each statement of this answer so far (``None``: a tool the catalog lacks)."""
    _began: float = field(default_factory=time.monotonic, repr=False)
    _writes: set[asyncio.Task[Any]] = field(default_factory=set, repr=False)
    _last_write: asyncio.Task[Any] | None = field(default=None, repr=False)
    """The record write queued last: each write waits for it, so records land in the order the
    states changed (the last record of a call says what became of it)."""
    _closed: bool = field(default=False, repr=False)
    _slots: asyncio.Semaphore | None = field(default=None, repr=False)
    settled: list[dict[str, Any]] = field(default_factory=list)
    """Once settled: the plan's ``meta.earlyStarts``."""
    saved_ms: float = 0.0
    """Once settled: about how much sooner the plan ends than plan-then-execute would
    (:func:`_saved_ms`)."""

    @property
    def scope(self) -> str:
        """What a later planning must share to adopt this one's calls after a crash: the
        request, else the query."""
        if self.request_id is not None:
            return f"request:{self.request_id}"
        return "query:" + hashlib.sha256(self.query.encode("utf-8", "surrogatepass")).hexdigest()

    # -- before planning -------------------------------------------------------------------

    async def recall(self) -> None:
        """Settle the early calls of an earlier planning of the same request (or query) that
        was interrupted (its process died: it neither stored its plan nor settled its calls),
        and load the finished ones: a call with the same key takes their output instead of
        calling the tool again. A call that was still running died with that process: it is
        recorded ``cancelled``. A planning that ended, even without a plan, settled its calls:
        they are never reused."""
        records = await asyncio.to_thread(
            EARLY_CALLS.find, self.store, {"scope": self.scope}, lookup_keys=[self.scope]
        )
        now = time.time()
        settled = {str(r.get("planId")) for r in records if r.get("status") in _SETTLED}
        last: dict[tuple[str, str], EarlyCall] = {}
        for record in records:  # oldest first: the last record of a call says where it is
            plan_id = str(record.get("planId"))
            if plan_id not in settled and plan_id != self.plan_id:
                last[(plan_id, str(record.get("step")))] = record
        stored: dict[str, bool] = {}
        for (plan_id, _), record in last.items():
            if plan_id not in stored:
                stored[plan_id] = await asyncio.to_thread(self.store.get_plan, plan_id) is not None
            if stored[plan_id]:
                continue  # stored, then killed before settling: its execution owns the calls
            if record.get("status") == "running":
                await asyncio.to_thread(self._settle_dead, record, "cancelled")
            elif (
                record.get("status") == "succeeded"
                and self.recall_outputs
                and now - float(record.get("at") or 0) <= RESUME_WINDOW
                and record.get("call") is not None
            ):
                self._recalled.setdefault(str(record["call"]), record)
            else:
                await asyncio.to_thread(self._settle_dead, record, "unused")

    def _settle_dead(self, record: EarlyCall, status: EarlyStatus) -> None:
        """Record how an early call of an interrupted planning ended (``settledBy`` this one)."""
        settled = _next_state(record, status)
        settled["settledBy"] = self.plan_id
        try:
            EARLY_CALLS.put(self.store, settled, lookup_keys=[self.scope])
        except Exception as error:  # the record is for resume and audit, not the call
            _log.warning(
                "an early call of %r could not be settled: %s", record.get("planId"), error
            )

    def _claim(self, record: EarlyCall) -> bool:
        """Take a recalled output for this planning, once: an idempotent record under the dead
        planning's call; ``False`` when another planning claimed it first."""
        claim = _next_state(record, "adopted")
        claim["adoptedBy"] = self.plan_id
        stored = EARLY_CALLS.put(
            self.store,
            claim,
            idempotency_key=f"claim:{record.get('planId')}:{record.get('call')}",
            lookup_keys=[self.scope],
        )
        return stored.get("adoptedBy") == self.plan_id

    # -- while the model writes ------------------------------------------------------------

    def new_answer(self) -> None:
        """A new answer is being written (a repair, a retry): its templates name its own steps."""
        self._current = {}
        self._statements = []

    def _effect(self, step: Mapping[str, Any]) -> Effect | None:
        """What ``step`` (as the model wrote it) may do; ``None`` for a tool the catalog lacks."""
        tool = step.get("tool")
        if not isinstance(tool, str) or tool not in self.catalog:
            return None
        effect = self.catalog.effect(tool)
        fallback = step.get("fallback")
        if isinstance(fallback, Mapping):
            other = fallback.get("tool")
            if not isinstance(other, str) or other not in self.catalog:
                return None
            effect = effect.union(self.catalog.effect(other))
        return effect

    def why_not(self, step: Mapping[str, Any]) -> str | None:
        """Why ``step`` (as the model wrote it) may not start early; ``None`` when it may."""
        tool = step.get("tool")
        if not isinstance(tool, str) or tool not in self.catalog:
            return "unknown tool"
        if any(step.get(key) not in (None, [], False) for key in ("forEach", "when", "fallback")):
            return "not a plain call"
        if step.get("approval") or self.catalog.gated(tool):
            return "waits for approval"
        if not self.catalog.read_only(tool):
            return "not read-only"
        reads = set(self.catalog.effect(tool).resources)
        for earlier in self._statements:
            if earlier is None:
                return "written after a call of an unknown tool"
            if not earlier.read_only and reads & set(earlier.resources):
                return "written after a side effect on what it reads"
        parameters = step.get("parameters") if step.get("parameters") is not None else {}
        issues = check_arguments(
            f"step {step.get('id')!r}", tool, parameters, self.catalog.info(tool).parameters
        )
        if issues:
            return issues[0].message
        for source in sorted(_waits_for(step)):
            early = self._current.get(source)
            if early is None or early.status == "failed":
                return f"its input {source!r} did not start early"
        return None

    def offer(self, step: Mapping[str, Any]) -> bool:
        """Start ``step`` now if it may start early (:meth:`why_not`); whether it started (or
        an identical call already runs)."""
        if self._closed or not isinstance(step.get("id"), str):
            return False
        reason = self.why_not(step)
        self._statements.append(self._effect(step))
        if reason is not None:
            _log.debug("step %r does not start early: %s", step.get("id"), reason)
            return False
        step_id, tool = str(step["id"]), str(step["tool"])
        parameters = step.get("parameters") if step.get("parameters") is not None else {}
        if not contains_template(parameters):
            same = self._by_key.get(self._key(tool, parameters))
            if same is not None and same.status != "failed":
                self._current[step_id] = same  # the same call, written again (a repair)
                return True
        early = _Early(step_id, tool, parameters, time.monotonic())
        sources = {source: self._current[source] for source in _waits_for(step)}
        early.task = asyncio.get_running_loop().create_task(
            self._run(early, sources), name=f"toolplan-early-{step_id}"
        )
        self._current[step_id] = early
        self._calls.append(early)
        self._tell(early, "started")
        return True

    async def _run(self, early: _Early, sources: Mapping[str, _Early]) -> Any:
        outputs = {}
        for source, dependency in sources.items():
            try:
                outputs[source] = await self._outcome(dependency)
            except _NotAdoptable:
                early.status, early.error = "failed", f"its input {source!r} failed"
                early.finished = time.monotonic()
                raise
        tool = self.catalog.get(early.tool)
        arguments = resolve(early.parameters, outputs, self.catalog.info(early.tool).parameters)
        early.key = self._key(early.tool, arguments)
        early.arguments = schema_arguments(tool, arguments)
        same = self._by_key.get(early.key)
        if same is not None and same is not early and same.status != "failed":
            output = await self._outcome(same)
            early.status, early.output, early.finished = "succeeded", output, time.monotonic()
            return output
        self._by_key[early.key] = early
        self._write(early, "running", arguments=arguments)
        recalled = self._recalled.pop(early.key, None)
        try:
            if recalled is not None and not await asyncio.to_thread(self._claim, recalled):
                recalled = None  # another planning took it first: call the tool
            if recalled is not None:
                output = recalled.get("output")
                early.recalled_from = str(recalled.get("planId"))
                early.recalled = recalled
            else:
                async with self._slot():
                    output = await self._call(tool, early, arguments)
        except asyncio.CancelledError:
            early.status, early.finished = "cancelled", time.monotonic()
            self._write(early, "cancelled")
            raise
        except Exception as error:  # a failed early call: the step runs as usual, if planned
            early.status, early.error, early.finished = "failed", str(error), time.monotonic()
            self._write(early, "failed")
            self._tell(early, "failed")
            raise _NotAdoptable(str(error)) from error
        early.status, early.output, early.finished = "succeeded", output, time.monotonic()
        # recorded before anyone adopts it: after a crash from here on, never called again; in
        # order with the other records even when this call is cancelled while it is written
        await asyncio.shield(self._write(early, "succeeded"))
        self._tell(early, "finished")
        return output

    def _key(self, tool: str, arguments: Any) -> str:
        """The key of a call of ``tool``: its name and its arguments as the schema reads them
        (so ``get(key="k")`` and ``get(key="k", seconds=0.0)`` are one call)."""
        return cache_key(tool, schema_arguments(self.catalog.get(tool), arguments))

    def _slot(self) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        """One of the :attr:`limit` slots early calls share (none when unlimited)."""
        if self.limit is None:
            return contextlib.nullcontext()
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limit)
        return self._slots

    async def _call(self, tool: BaseTool, early: _Early, arguments: Any) -> Any:
        """Call ``tool`` as the engine would (its config says the call started early)."""
        config: RunnableConfig = {
            "metadata": {
                "step_id": early.step_id,
                "attempt": 1,
                "idempotency_key": f"{self.plan_id}:{early.step_id}:early",
                "started_early": True,
            }
        }
        return normalize_output(await tool.ainvoke(arguments, config), tool=early.tool)

    async def _outcome(self, early: _Early) -> Any:
        """The output of ``early``'s call once it succeeded (waiting for it while it runs);
        :class:`_NotAdoptable` when it failed or was cancelled."""
        if early.task is None:
            raise _NotAdoptable(early.step_id)
        try:
            return await asyncio.shield(early.task)
        except (_NotAdoptable, asyncio.CancelledError) as error:
            if isinstance(error, asyncio.CancelledError) and not early.task.cancelled():
                raise  # the waiter itself was cancelled, not the call
            raise _NotAdoptable(early.step_id) from None
        except Exception as error:
            raise _NotAdoptable(early.step_id) from error

    # -- when the plan is stored, or planning failed -------------------------------------

    def settle(self, plan: Plan | None) -> list[dict[str, Any]]:
        """Settle every early call against the final ``plan`` (``None``: planning failed):
        ``adopted``, ``cancelled`` or ``unused``; recorded, and returned as the plan's
        ``meta.earlyStarts``: ``{step, tool, status, startedMs, durationMs, savedMs}`` each
        (``savedMs``: how long it ran before the plan was complete, the time plan-then-execute
        would have spent on it afterwards)."""
        ended = time.monotonic()
        kept = self._kept(plan) if plan is not None else set()
        settled: list[dict[str, Any]] = []
        for early in self._calls:
            if id(early) in kept and early.status in ("running", "succeeded"):
                early.settled = "adopted"
            elif early.status == "running" and early.task is not None:
                early.task.cancel()
                early.settled = "cancelled"
            else:
                early.settled = "unused"
            ran_until = min(early.finished or ended, ended)
            entry: dict[str, Any] = {
                "step": early.step_id,
                "tool": early.tool,
                "status": early.settled,
                "call": early.status,
                "startedMs": round((early.started - self._began) * 1000, 1),
                "durationMs": (
                    round((early.finished - early.started) * 1000, 1)
                    if early.finished is not None
                    else None
                ),
                "savedMs": (
                    round(max(0.0, ran_until - early.started) * 1000, 1)
                    if early.settled == "adopted"
                    else 0.0
                ),
            }
            if early.recalled_from is not None:
                entry["recalledFrom"] = early.recalled_from
            if early.recalled is not None and early.settled != "adopted":
                self._queue(self._settle_dead, early.recalled, "unused")
            settled.append(entry)
            self._write(early, early.settled)
            self._tell(early, early.settled)
        self._closed = True
        self.settled = settled
        if plan is not None and settled:
            self.saved_ms = _saved_ms(plan, settled)
            notify(self._event("saved", None, self.saved_ms), self.listener)
        return settled

    def _kept(self, plan: Plan) -> set[int]:
        """The early calls ``plan`` has: a step with the same ID and tool, the same arguments
        (as the tool's schema reads them; with templates, as written), and no
        ``forEach``/``when``/``fallback``/``approval`` since, that waits for no step not kept
        itself: not through its templates or ``dependsOn``, and not through an order edge (a
        read the final plan orders after a write must read after it)."""
        mine = {early.step_id: early for early in self._calls}
        latest = {**mine, **self._current}
        dependencies = {
            step.id: [*step.depends_on, *references(step.parameters)] for step in plan.steps
        }
        ordered = effect_order(plan, self.catalog, dependencies)
        kept: dict[str, _Early] = {}
        for step in plan.steps:
            early = latest.get(step.id)
            if (
                early is None
                or early.tool != step.tool
                or not self._same_arguments(early, step.parameters)
                or step.for_each is not None
                or step.when is not None
                or step.fallback is not None
                or step.approval
                or not all(
                    source in kept for source in {*dependencies[step.id], *ordered.get(step.id, {})}
                )
            ):
                continue
            kept[step.id] = early
        return {id(early) for early in kept.values()}

    def _same_arguments(self, early: _Early, parameters: Any) -> bool:
        """Whether ``parameters`` (a final step's) make the call ``early`` made."""
        if contains_template(parameters) or contains_template(early.parameters):
            return bool(early.parameters == parameters)
        return self._key(early.tool, parameters) == self._key(early.tool, early.parameters)

    async def close(self, *, ran: bool = True) -> None:
        """Cancel what still runs (planning failed, or the run ends) and wait for the records.
        ``ran=False``: the stored plan was not executed after all (it needs review, a replan
        identical to the last one): what it adopted is recorded ``cancelled`` or ``unused``."""
        if not self._closed:
            self.settle(None)
        elif not ran:
            for early in self._calls:
                if early.settled == "adopted":
                    # the call's own state decides: its output may be in, its record still
                    # being written
                    early.settled = "cancelled" if early.status == "running" else "unused"
                    self._write(early, early.settled)
                    self._tell(early, early.settled)
        for early in self._calls:
            if early.task is not None and not early.task.done():
                early.task.cancel()
        tasks = [early.task for early in self._calls if early.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    # -- the execution that follows --------------------------------------------------------

    def adopted(self) -> list[str]:
        """The step IDs whose early call the final plan has."""
        return [early.step_id for early in self._calls if early.settled == "adopted"]

    def adopting(self, catalog: ToolCatalog) -> ToolCatalog:
        """``catalog`` with each tool that has an adopted early call wrapped: a call with the
        same arguments takes that call's output (waiting while it runs) instead of calling
        the tool again; any other call, or one whose early call failed, calls the tool."""
        adopted = {early.tool for early in self._calls if early.settled == "adopted"}
        if not adopted:
            return catalog
        wrapped = ToolCatalog(
            [self._wrapped(tool) if tool.name in adopted else tool for tool in catalog]
        )
        wrapped.origin = catalog.origin
        return wrapped

    def _wrapped(self, tool: BaseTool) -> BaseTool:
        calls = {
            early.key: early
            for early in self._calls
            if early.settled == "adopted" and early.tool == tool.name and early.key is not None
        }
        pending = [e for e in self._calls if e.settled == "adopted" and e.tool == tool.name]

        async def call(config: RunnableConfig, **arguments: Any) -> Any:
            key = self._key(tool.name, arguments)
            early = calls.get(key)
            if early is None:  # resolved since settle: look again
                for candidate in pending:
                    if candidate.key == key:
                        early = calls[key] = candidate
            # only the step's first attempt adopts: one that timed out waiting for the early
            # call is retried as any attempt is, with a call of its own
            first = (config.get("metadata") or {}).get("attempt", 1) == 1
            if early is not None and first:
                with contextlib.suppress(_NotAdoptable):
                    return await self._outcome(early)
            return await tool.ainvoke(arguments, config)

        return StructuredTool(
            name=tool.name,
            description=tool.description,
            args_schema=tool.args_schema if tool.args_schema is not None else tool.tool_call_schema,
            coroutine=call,
            tags=tool.tags,
            metadata=tool.metadata,
        )

    # -- records and events ----------------------------------------------------------------

    def _write(
        self, early: _Early, status: EarlyStatus, *, arguments: Any = None
    ) -> asyncio.Task[Any]:
        """Record ``early``'s new ``status`` off the event loop, after every record queued
        before it (awaited by :meth:`close`)."""
        return self._queue(self._put, early, status, arguments)

    def _queue(self, write: Callable[..., None], *args: Any) -> asyncio.Task[Any]:
        """Run the blocking ``write(*args)`` off the event loop, after every record write
        queued before it (awaited by :meth:`close`): records land in the order the states
        changed."""
        previous = self._last_write

        async def run() -> None:
            if previous is not None:
                await asyncio.wait([previous])  # done, whether it wrote or failed
            await asyncio.to_thread(write, *args)

        task = asyncio.get_running_loop().create_task(run())
        self._last_write = task
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        return task

    def _put(self, early: _Early, status: EarlyStatus, arguments: Any) -> None:
        record: EarlyCall = {
            "scope": self.scope,
            "planId": self.plan_id,
            "requestId": self.request_id,
            "step": early.step_id,
            "tool": early.tool,
            "call": early.key,
            "status": status,
            "at": time.time(),
            "recordedAt": utc_now(),
        }
        if arguments is not None:
            record["arguments"] = arguments
        if status == "succeeded":
            record["output"] = early.output
        if early.error is not None:
            record["error"] = early.error
        if early.recalled_from is not None:
            record["recalledFrom"] = early.recalled_from
        try:
            EARLY_CALLS.put(self.store, record, lookup_keys=[self.scope])
        except Exception as error:  # the record is for resume and audit, not the call
            _log.warning("the early call of %r could not be recorded: %s", early.step_id, error)

    def _tell(self, early: _Early, what: str) -> None:
        finished = early.finished if early.finished is not None else time.monotonic()
        duration = round((finished - early.started) * 1000, 1) if what != "started" else None
        step = {"id": early.step_id, "tool": early.tool, "parameters": early.parameters}
        notify(self._event(what, step, duration), self.listener)

    def _event(self, what: str, step: dict[str, Any] | None, ms: float | None) -> PlanningEvent:
        return PlanningEvent(
            "early",
            self.model_name,
            attempt=1,
            attempts=1,
            elapsed_ms=(time.monotonic() - self._began) * 1000,
            llm_calls=0,
            step=step,
            early=what,
            duration_ms=ms,
        )


def _next_state(record: EarlyCall, status: EarlyStatus) -> EarlyCall:
    """A new record of the call ``record`` is about (its scope, plan, request, step, tool and
    key), now in ``status``."""
    return {
        "scope": record.get("scope", ""),
        "planId": record.get("planId", ""),
        "requestId": record.get("requestId"),
        "step": record.get("step", ""),
        "tool": record.get("tool", ""),
        "call": record.get("call"),
        "status": status,
        "at": time.time(),
        "recordedAt": utc_now(),
    }


def _waits_for(step: Mapping[str, Any]) -> set[str]:
    """The steps ``step`` waits for: those its templates name, and its ``dependsOn`` (an order
    the plan asks for, a read after a write say: never started before that step)."""
    depends = step.get("dependsOn") or []
    named = {str(d) for d in depends} if isinstance(depends, list) else {str(depends)}
    return references(step.get("parameters")) | named


def _saved_ms(plan: Plan, settled: list[dict[str, Any]]) -> float:
    """About how much sooner ``plan`` ends than plan-then-execute would: the most time run
    before the plan was complete along one chain of adopted steps (a step waits for the steps
    its templates name, so the time saved on a chain adds up; side by side, it does not)."""
    saved = {entry["step"]: entry["savedMs"] for entry in settled if entry["status"] == "adopted"}
    along: dict[str, float] = {}
    for step in plan.steps:  # a valid plan lists a step after the steps it names
        if step.id in saved:
            before = [along.get(source, 0.0) for source in references(step.parameters)]
            along[step.id] = saved[step.id] + max(before, default=0.0)
    return round(max(along.values(), default=0.0), 1)
