"""The store protocol, split by role: a backend plays five roles in one database.

- :class:`PlanRepository`: requests and their immutable plan versions;
- :class:`ExecutionLog`: executions and their per-step records, the source of truth of every
  step transition (resume, ``toolplan show``, the API and step events read only these);
- :class:`WorkQueue`: queued executions and the lease that lets one process run each;
- :class:`RecordStore`: documents the built-in toolsets keep (authors, blogs, ...), idempotent
  per step;
- :class:`ResultCache`: outputs of read-only tools by tool and arguments, each until its TTL
  passes, shared by every process and plan using the store;
- :class:`CheckpointStore`: a LangGraph checkpointer in the same database.

:class:`Store` is all six plus ``uri`` and ``close``: what ``open_store`` returns. Code that needs
one role asks for that role, so a narrower backend (or a test double) can serve it. Backends
(SQLite, MongoDB) pass :mod:`toolplan_conformance`.

The protocol is synchronous: the CLI, the API and workers call it directly; the async engine calls
it from a dedicated writer thread so the event loop never blocks on I/O.
"""

from __future__ import annotations

import base64
import binascii
import os
import socket
from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from toolplan.errors import InvalidInput
from toolplan.plan_format.ids import is_valid_id
from toolplan.store.codec import dumps

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

__all__ = [
    "CANCELLED_BEFORE_START",
    "CANCELLED_WHILE_RUNNING",
    "TERMINAL_EXECUTION_STATUSES",
    "CacheLookup",
    "CachedResult",
    "CheckpointStore",
    "Decision",
    "DecisionKind",
    "DecisionVia",
    "ExecutionLog",
    "ExecutionRecord",
    "ExecutionStatus",
    "ItemRecord",
    "LeaseReader",
    "ListedStatus",
    "PlanPage",
    "PlanRecord",
    "PlanRepository",
    "PlanStatus",
    "PlanSummary",
    "RecordStore",
    "RequestRecord",
    "ResultCache",
    "SkipReason",
    "StepRecord",
    "StepStatus",
    "Store",
    "StoreOptions",
    "TimeoutSource",
    "ToolStats",
    "WorkQueue",
    "cache_fresh",
    "cap_output",
    "decode_plan_cursor",
    "encode_plan_cursor",
    "lease_holder",
    "utc_now",
]

PlanStatus = Literal["planned", "needs_review"]
"""``needs_review``: the planner's confidence was under the threshold; run only with ``--yes``."""

ExecutionStatus = Literal[
    "queued", "running", "waiting", "succeeded", "partial", "failed", "cancelled"
]
"""``partial``: some steps succeeded, some failed or were skipped. ``failed``: none succeeded.
``cancelled``: stopped by a cancel request; its finished steps are kept. ``waiting``: nothing
can run until a person decides on the steps ``waiting_approval``; nobody holds it (not
terminal: an approval continues it)."""

StepStatus = Literal[
    "pending",
    "running",
    "waiting_approval",
    "succeeded",
    "failed",
    "skipped",
    "denied",
    "cancelled",
]
"""``cancelled``: the step was running (its tool call was cancelled) or had not started when its
execution was cancelled. ``waiting_approval``: its dependencies succeeded and its arguments are
resolved (``resolved_parameters``), but its tool is called only once a person approves.
``denied``: a person said no (``decision`` has who, when and why); its dependents are skipped."""

ListedStatus = Literal[
    "planned",
    "needs_review",
    "queued",
    "running",
    "waiting",
    "succeeded",
    "partial",
    "failed",
    "cancelled",
]
"""What :meth:`PlanRepository.recent_plans` filters on: the execution's status, or the plan's
(``planned``, ``needs_review``) when it was never executed."""

EXECUTION_STATUSES: frozenset[str] = frozenset(
    {"queued", "running", "waiting", "succeeded", "partial", "failed", "cancelled"}
)

TERMINAL_EXECUTION_STATUSES: frozenset[str] = frozenset(
    {"succeeded", "partial", "failed", "cancelled"}
)

SkipReason = Literal["condition", "condition-not-boolean"]
"""Why a step was skipped when it was not a failure: ``condition``, its ``when`` was falsy (or
that of a step it depends on); ``condition-not-boolean``, its ``when`` (or a dependency's)
resolved to text, which is not a yes/no value, so the step did not run (fails closed). A plan
whose only unsucceeded steps were skipped by a ``condition`` succeeds; one skipped for
``condition-not-boolean`` makes it partial: the plan could not decide, someone should look."""

CANCELLED_BEFORE_START = "cancelled before it started"
"""The error recorded on a step that had not started when its execution was cancelled."""

CANCELLED_WHILE_RUNNING = "cancelled while running: its tool call was cancelled"
"""The error recorded on a step whose tool call was in flight when its execution was cancelled."""

TimeoutSource = Literal["plan", "history", "default"]
"""Where a step's effective timeout came from: its ``timeout`` in the plan, the tool's observed
durations, or the default (``TOOLPLAN_TIMEOUT``)."""


@dataclass(frozen=True)
class ToolStats:
    """Observed behaviour of a tool over past executions (:meth:`ExecutionLog.tool_stats`)."""

    calls: int
    avg_duration_ms: float | None
    failure_rate: float | None


def utc_now() -> str:
    """The current time as ISO-8601 UTC with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class RequestRecord:
    """One user request; it owns one or more plan versions."""

    request_id: str
    query: str | None
    created_at: str


@dataclass(frozen=True)
class PlanRecord:
    """A stored plan. Immutable: a new version is a new plan under the same request."""

    plan_id: str
    request_id: str
    plan: dict[str, Any]
    """The canonical plan JSON."""
    analysis: dict[str, Any]
    """:meth:`toolplan.validation.Analysis.to_json` output."""
    status: PlanStatus
    created_at: str
    query: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    """Planning details: model, llmCalls, usage, planningMs, promptVersion, confidence, ..."""


@dataclass(frozen=True)
class ItemRecord:
    """The durable record of one item of a ``forEach`` step: a resume runs only the items that
    did not finish."""

    index: int
    status: StepStatus = "pending"
    attempts: int = 0
    output: Any = None
    error: str | None = None
    used_fallback: bool = False
    duration_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The stored form (and the ``items`` entries of ``toolplan show --json``)."""
        data: dict[str, Any] = {
            "index": self.index,
            "status": self.status,
            "attempts": self.attempts,
            "error": self.error,
        }
        if self.output is not None:
            data["output"] = self.output
        if self.used_fallback:
            data["usedFallback"] = True
        if self.duration_ms is not None:
            data["durationMs"] = self.duration_ms
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ItemRecord:
        """Inverse of :meth:`to_json`."""
        return cls(
            index=int(data["index"]),
            status=data.get("status", "pending"),
            attempts=int(data.get("attempts", 0)),
            output=data.get("output"),
            error=data.get("error"),
            used_fallback=bool(data.get("usedFallback")),
            duration_ms=data.get("durationMs"),
        )


@dataclass(frozen=True)
class PlanSummary:
    """One row of :meth:`PlanRepository.recent_plans`: a plan and its execution's status and
    times, without the plan document (``toolplan list``, GraphQL ``plans``)."""

    plan_id: str
    request_id: str
    query: str | None
    plan_status: PlanStatus
    created_at: str
    execution_status: ExecutionStatus | None = None
    """``None``: the plan was never executed."""
    started_at: str | None = None
    finished_at: str | None = None

    @property
    def status(self) -> ListedStatus:
        """The execution's status, or the plan's when it was never executed."""
        return self.execution_status or self.plan_status


@dataclass(frozen=True)
class PlanPage:
    """A page of :meth:`PlanRepository.recent_plans`, newest first."""

    items: list[PlanSummary]
    next_cursor: str | None
    """Pass it as ``after`` for the next page; ``None`` on the last page."""


def encode_plan_cursor(summary: PlanSummary) -> str:
    """The opaque cursor after ``summary``: its sort key (creation time, plan ID), URL-safe."""
    raw = f"{summary.created_at}|{summary.plan_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_plan_cursor(cursor: str) -> tuple[str, str]:
    """``(created_at, plan_id)`` of a cursor from :func:`encode_plan_cursor`;
    :class:`~toolplan.errors.InvalidInput` for anything else."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    created_at, _, plan_id = text.partition("|")
    if not created_at or not is_valid_id(plan_id, "plan"):
        shown = cursor if len(cursor) <= 40 else cursor[:37] + "..."
        raise InvalidInput(
            f"{shown!r} is not a plan list cursor: pass the nextCursor of the previous page"
        )
    return created_at, plan_id


DecisionKind = Literal["approved", "denied"]
"""A person's answer to a step ``waiting_approval``."""

DecisionVia = Literal["approveAll"]
"""How a decision was given when not on the step itself (:attr:`Decision.via`)."""


@dataclass(frozen=True)
class Decision:
    """A person's answer to a step ``waiting_approval``, stored on the step: what, who, when,
    why, and which arguments were shown (their fingerprint: an approval covers those arguments
    only; a call with others asks again)."""

    kind: DecisionKind
    by: str
    """Who decided (``--by``; default the OS user)."""
    at: str
    """When (ISO-8601 UTC)."""
    fingerprint: str
    """The fingerprint of the arguments shown when deciding
    (:func:`toolplan.engine.approval.fingerprint`)."""
    reason: str | None = None
    via: DecisionVia | None = None
    """How it was given: ``approveAll`` when a run's blanket approval (``--approve-all``,
    ``executePlan(approveAll: true)``) let the step through; ``None`` for a decision on the step
    itself (``toolplan approve``/``deny``, ``approveStep``/``denyStep``)."""

    def to_json(self) -> dict[str, Any]:
        """The stored form (and the ``decision`` of a step in ``toolplan show --json``)."""
        data: dict[str, Any] = {
            "decision": self.kind,
            "by": self.by,
            "at": self.at,
            "fingerprint": self.fingerprint,
            "reason": self.reason,
        }
        if self.via is not None:
            data["via"] = self.via
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """Inverse of :meth:`to_json`."""
        return cls(
            kind=data["decision"],
            by=str(data["by"]),
            at=str(data["at"]),
            fingerprint=str(data["fingerprint"]),
            reason=data.get("reason"),
            via=data.get("via"),
        )


@dataclass(frozen=True)
class StepRecord:
    """The durable record of one step in one execution."""

    step_id: str
    tool: str
    status: StepStatus = "pending"
    attempts: int = 0
    resolved_parameters: Any = None
    output: Any = None
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    duration_ms: float | None = None
    output_truncated: bool = False
    used_fallback: bool = False
    cached: bool = False
    """The output came from the result cache: the tool was not called."""
    cache_age_seconds: float | None = None
    """For a cached output: how old the cached result was when it was used."""
    timeout: float | None = None
    """The effective timeout of each attempt, in seconds (recorded when the step starts)."""
    timeout_source: TimeoutSource | None = None
    reused_from: str | None = None
    """The output is that of a succeeded step of an earlier version of the same request
    (``plan_...:stepId``), with the same tool and arguments: the tool was not called again."""
    reason: SkipReason | None = None
    """Why a ``skipped`` step was skipped when that was a decision, not a failure."""
    items: list[ItemRecord] | None = None
    """A ``forEach`` step's items, once its list is known (``None`` for any other step, and for
    every step of an execution read with ``get_execution(..., items=False)``)."""
    decision: Decision | None = None
    """A person's answer, once the step waited for approval (:meth:`ExecutionLog.decide_step`)."""

    @property
    def id(self) -> str:
        """The step's ID, as the plan and the JSON name it (``id``): :attr:`step_id`."""
        return self.step_id


STEP_FIELDS = frozenset(
    {
        "status",
        "attempts",
        "resolved_parameters",
        "output",
        "error",
        "started_at",
        "finished_at",
        "duration_ms",
        "output_truncated",
        "used_fallback",
        "cached",
        "cache_age_seconds",
        "timeout",
        "timeout_source",
        "reused_from",
        "reason",
        "items",
        "item",
        "decision",
    }
)
"""Fields :meth:`Store.update_step` may change. ``items`` sets a ``forEach`` step's whole list
of :class:`ItemRecord` (once its list is known); ``item`` is not a field but one
:class:`ItemRecord` that replaces the element at its ``index``, atomically on its own, so items
written concurrently (from several workers) never overwrite each other. Each item is a row (a
document) of its own, keyed by index: writing one item writes that item only, whatever the
length of the list (a ``forEach`` over 100,000 items costs 100,000 small writes, not a growing
list rewritten each time)."""


@dataclass(frozen=True)
class ExecutionRecord:
    """The execution of one plan: overall status plus one :class:`StepRecord` per step."""

    plan_id: str
    status: ExecutionStatus
    steps: list[StepRecord]
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    error: str | None = None
    worker_id: str | None = None
    lease_until: float | None = None
    owner_host: str | None = None
    """Host of the process holding the lease (recorded by ``claim``/``acquire``)."""
    owner_pid: int | None = None
    """Process ID of the lease holder on ``owner_host``: a dead one is taken over at once."""
    cancel_requested_at: str | None = None
    """When a cancel was requested (:meth:`ExecutionLog.request_cancel`); the process running
    the execution notices it and ends it ``cancelled``."""

    def step(self, step_id: str) -> StepRecord:
        """The record of ``step_id`` (``KeyError`` if absent)."""
        for record in self.steps:
            if record.step_id == step_id:
                return record
        raise KeyError(step_id)


@dataclass(frozen=True)
class CachedResult:
    """A cached tool output and when it was stored."""

    output: Any
    stored_at: float
    """Seconds since the epoch (``time.time()`` of the process that stored it)."""


@dataclass(frozen=True)
class CacheLookup:
    """What a look in the result cache found."""

    result: CachedResult | None
    """The cached output; ``None`` when there is none, it expired, or one of the resources it
    was read from has been written since."""
    versions: dict[str, int]
    """The version of each resource asked about, now: a result read from here on is stored
    with them (:meth:`ResultCache.cache_put`), and is stale once a write moves one."""


def cache_fresh(stored: Any, current: Mapping[str, int]) -> bool:
    """Whether a cache entry stored with the resource versions ``stored`` still holds, the
    versions being ``current`` now: every one the same. An entry stored before versions were
    kept (``stored`` not a mapping) never does."""
    if not isinstance(stored, Mapping):
        return False
    return all(stored.get(name) == version for name, version in current.items())


def lease_holder() -> tuple[str, int]:
    """The host and process ID a backend records with a lease it grants: the calling process's."""
    return socket.gethostname(), os.getpid()


@dataclass(frozen=True)
class StoreOptions:
    """How the built-in stores wait, as the settings say (``toolplan.config.Settings``
    ``store_options``: the variables below, read by the entry point that opens the store)."""

    busy_timeout: float = 30.0
    """Seconds a SQLite store waits for a lock another process holds, then gives up
    (``TOOLPLAN_STORE_BUSY_TIMEOUT``)."""
    mongo_timeout_ms: int = 5000
    """Milliseconds a MongoDB store waits to select a server and to connect (reads wait three
    times as long), unless the URI sets its own (``TOOLPLAN_MONGO_TIMEOUT_MS``)."""


def cap_output(value: Any, limit_bytes: int) -> tuple[Any, bool]:
    """Cap a step output to ``limit_bytes`` of JSON; returns (value, truncated).

    Oversized outputs are replaced by a marker object with a text preview, so no stored document
    grows without bound (MongoDB's 16 MB limit, and SQLite rows the CLI must print).
    """
    text = dumps(value)
    if len(text) * 4 <= limit_bytes or len(text.encode("utf-8")) <= limit_bytes:
        return value, False  # (a character is at most 4 bytes: most outputs are not encoded)
    preview = text.encode("utf-8")[: max(0, limit_bytes - 200)].decode("utf-8", "ignore")
    return {"truncated": True, "originalBytes": len(text.encode("utf-8")), "preview": preview}, True


class _Role(Protocol):
    uri: str
    """The store URI with any password hidden (safe to print, named in error messages)."""


@runtime_checkable
class PlanRepository(_Role, Protocol):
    """Requests and their plan versions. Plans are immutable: a new version is a new plan."""

    def save_plan(self, plan: PlanRecord, request: RequestRecord | None = None) -> None:
        """Store a plan (and its new request, when given) atomically: whole or not at all.

        Raises :class:`~toolplan.errors.InvalidInput` if the plan ID exists (plans are immutable)
        or the plan's request does not exist and none is given.
        """
        ...

    def get_request(self, request_id: str) -> RequestRecord | None:
        """The request, or ``None``."""
        ...

    def get_plan(self, plan_id: str) -> PlanRecord | None:
        """The plan, or ``None``."""
        ...

    def list_plans(self, request_id: str) -> list[PlanRecord]:
        """Every plan version of a request, oldest first."""
        ...

    def recent_plans(
        self,
        *,
        status: ListedStatus | None = None,
        request_id: str | None = None,
        limit: int = 20,
        after: str | None = None,
    ) -> PlanPage:
        """Plans newest first (by creation time, then plan ID), with their execution's status,
        at most ``limit`` (at least 1), from after the cursor ``after`` (a page's
        ``next_cursor``; :class:`~toolplan.errors.InvalidInput` for a malformed one).

        ``status`` keeps the plans whose :attr:`PlanSummary.status` is that (an execution
        status, or ``planned``/``needs_review`` for plans never executed); ``request_id`` the
        versions of one request. Read through indexes ordered by the sort key, so a page costs
        about ``limit`` rows whatever the store holds, not a scan of it."""
        ...


@runtime_checkable
class ExecutionLog(_Role, Protocol):
    """Executions and their step records: every transition, written before dependents start."""

    def create_execution(
        self, plan_id: str, steps: list[tuple[str, str]], *, status: ExecutionStatus
    ) -> ExecutionRecord:
        """Create the execution of a plan with (step id, tool) pairs; return the existing one
        unchanged if there is one already."""
        ...

    def get_execution(self, plan_id: str, *, items: bool = True) -> ExecutionRecord | None:
        """The execution of a plan, or ``None`` if it never started.

        ``items=False`` leaves every step's :attr:`StepRecord.items` ``None`` (not read): what a
        caller that reads the execution once per item uses, so that its reads do not grow with
        the number of items (:meth:`get_items` and :meth:`count_items` read them a page at a
        time)."""
        ...

    def get_items(
        self,
        plan_id: str,
        step_id: str,
        *,
        offset: int = 0,
        limit: int | None = None,
        status: StepStatus | None = None,
    ) -> list[ItemRecord]:
        """The item records of a ``forEach`` step in index order, those with ``status`` only when
        given: at most ``limit`` (all when ``None``) from the ``offset``-th on. Empty for a step
        without items (or no such step). A page costs about ``offset + limit`` index entries,
        not the whole list."""
        ...

    def count_items(self, plan_id: str, step_id: str) -> dict[StepStatus, int] | None:
        """How many items of a ``forEach`` step are in each status (statuses with none left
        out), or ``None`` when its list is not known (not a ``forEach`` step, not started, or no
        such step)."""
        ...

    def update_step(self, plan_id: str, step_id: str, changes: Mapping[str, Any]) -> None:
        """Atomically apply ``changes`` (keys from ``STEP_FIELDS``) to one step record."""
        ...

    def update_steps(self, plan_id: str, updates: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Apply several ``(step id, changes)`` updates of one execution in order, as
        :meth:`update_step` would, and make them durable together before returning: the engine's
        writer commits every transition queued since its last write this way (group commit).
        SQLite applies them in one transaction (all or nothing); MongoDB in one ordered bulk
        write, each update atomic on its step. An unknown step or field raises like
        :meth:`update_step`."""
        ...

    def set_execution_status(
        self,
        plan_id: str,
        status: ExecutionStatus,
        *,
        error: str | None = None,
        started_at: str | None = None,
        finished_at: str | None = None,
    ) -> None:
        """Change the execution status (and times, when given)."""
        ...

    def tool_stats(self) -> dict[str, ToolStats]:
        """Per-tool calls, average duration and failure rate over finished steps (steps answered
        from the result cache are not calls and are left out)."""
        ...

    def tool_durations(self, tools: Collection[str], limit: int) -> dict[str, list[float]]:
        """For each of ``tools``: the ``duration_ms`` of its latest ``limit`` steps that
        succeeded on their first attempt, without a fallback and not from the cache, newest
        first (by ``finished_at``). Tools never seen map to an empty list."""
        ...

    def request_cancel(self, plan_id: str, steps: list[tuple[str, str]]) -> ExecutionRecord:
        """Record a cancel request for the execution of a plan, atomically; return the record.

        - no execution yet: it is created ``cancelled``, every step ``cancelled``;
        - ``queued`` or ``waiting`` (nobody runs it): it becomes ``cancelled`` at once, with its
          unfinished steps (``waiting_approval`` ones too), and no worker can claim it any more;
        - ``running``: ``cancel_requested_at`` is set (once; repeated requests keep the first
          time). The process running it notices (:meth:`cancel_requested`) and ends it;
        - finished (``cancelled`` included): nothing changes.
        """
        ...

    def cancel_requested(self, plan_id: str) -> bool:
        """Whether a cancel was requested for the execution (a cheap read, polled by the process
        running it)."""
        ...

    def decide_step(self, plan_id: str, step_id: str, changes: Mapping[str, Any]) -> bool:
        """Apply ``changes`` (keys from ``STEP_FIELDS``, a ``decision`` among them) to one step
        only if it is ``waiting_approval``, atomically: ``True`` when applied; ``False``, and
        nothing changes, when it is not (never waited, or decided meanwhile: one decision wins).
        An unknown step raises ``KeyError`` like :meth:`update_step`."""
        ...

    def reopen(self, plan_id: str) -> bool:
        """Let a ``cancelled`` execution run again: status ``running`` without an owner, no
        cancel request, no finish time, its ``cancelled`` steps ``pending`` (finished steps are
        kept). ``False`` (and nothing changes) unless it was ``cancelled``."""
        ...


@runtime_checkable
class LeaseReader(Protocol):
    """An optional capability of a :class:`WorkQueue`: take the lease and read the execution
    under it in one call. The engine uses it when a store has it (both built-in stores do), and
    :meth:`WorkQueue.acquire` then :meth:`ExecutionLog.get_execution` otherwise."""

    def acquire_execution(
        self, plan_id: str, worker_id: str, lease_seconds: float, *, expected_owner: str | None
    ) -> ExecutionRecord | None:
        """:meth:`WorkQueue.acquire`, returning the execution as it stands once the lease is
        held (its steps as every earlier holder left them), or ``None`` when the lease was not
        taken."""
        ...


@runtime_checkable
class WorkQueue(_Role, Protocol):
    """Queued executions and their leases (``worker_id``, ``lease_until`` on the execution).

    The lease state machine every backend implements (and the conformance suite checks): an
    execution is *claimable* when queued, or running from the queue with an expired lease; a
    claim or an acquire makes it ``running`` with the caller as owner until ``now + lease``, and
    records the calling process (:func:`lease_holder`) as ``owner_host``/``owner_pid``; only
    the owner renews; a release puts a running execution back to ``queued`` and clears the owner.
    A ``waiting`` execution is not claimable (nobody can run it before a decision) but may be
    acquired (the process that records a decision continues it) or enqueued (for workers).
    """

    def enqueue(self, plan_id: str, steps: list[tuple[str, str]]) -> ExecutionRecord:
        """Queue an execution for workers (creates it with status ``queued`` if absent); a
        ``queued``, ``waiting`` or ``running`` one without a live lease is queued (again)."""
        ...

    def claim(self, worker_id: str, lease_seconds: float) -> str | None:
        """Atomically claim one queued execution, or one whose lease expired; return its plan ID."""
        ...

    def acquire(
        self, plan_id: str, worker_id: str, lease_seconds: float, *, expected_owner: str | None
    ) -> bool:
        """Compare-and-set the lease of one unfinished execution: succeeds when it has no owner, its
        lease expired, or it is held by ``worker_id`` or ``expected_owner`` (a dead process)."""
        ...

    def renew_lease(self, plan_id: str, worker_id: str, lease_seconds: float) -> bool:
        """Extend a held lease (heartbeat); ``False`` if the lease was lost."""
        ...

    def release(self, plan_id: str, worker_id: str) -> None:
        """Give up a lease without finishing: the execution is queued again."""
        ...


@runtime_checkable
class RecordStore(_Role, Protocol):
    """Documents in named collections: the built-in toolsets' records (found through the tool
    call's run config), and toolplan's own, each collection under a typed role
    (:mod:`toolplan.store.records`: the calls started early, the reuse index, the agent's
    answers)."""

    def put_record(
        self,
        collection: str,
        record: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        lookup_keys: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Insert a toolset record with a fresh ``_id``. With an idempotency key already used in
        that collection, return the earlier record instead of inserting. ``lookup_keys`` are
        indexed with the record (not stored in it) for :meth:`find_records`."""
        ...

    def find_records(
        self,
        collection: str,
        where: Mapping[str, Any],
        *,
        lookup_keys: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Records whose fields equal ``where`` (plain equality only), oldest first. With
        ``lookup_keys``, only records put with at least one of those keys (none for an empty
        collection), found through an index: the cost follows the records those keys select,
        not the size of the collection."""
        ...


@runtime_checkable
class ResultCache(_Role, Protocol):
    """Outputs of read-only tools, keyed by tool and resolved arguments (the engine computes the
    key), each kept until its TTL passes or a write moves the version of a resource it was read
    from (:mod:`toolplan.tools.effects`): no read after a write is answered from before it."""

    def cache_get(self, key: str, resources: Collection[str] = ()) -> CacheLookup:
        """The cached result under ``key`` unless absent, expired or stale (stored with other
        versions of ``resources`` than they have now, or before versions were kept), and the
        current versions of ``resources`` (0 for one never written)."""
        ...

    def cache_put(
        self,
        key: str,
        tool: str,
        output: Any,
        ttl_seconds: float,
        versions: Mapping[str, int] | None = None,
    ) -> None:
        """Store (or replace) the result under ``key`` for ``ttl_seconds``, read while its
        resources had ``versions`` (what :meth:`cache_get` gave before the tool was called)."""
        ...

    def cache_written(self, resources: Collection[str]) -> None:
        """A write on ``resources`` happened (or may have): move each one's version on, so
        every result read from it before is stale, in every process using this store."""
        ...

    def cache_clear(self, tool: str | None = None) -> int:
        """Remove every cached result (only ``tool``'s when given); return how many were live."""
        ...


@runtime_checkable
class CheckpointStore(_Role, Protocol):
    """A LangGraph checkpointer in the same database (the optional graph layer, Studio)."""

    def checkpointer(self) -> AbstractAsyncContextManager[BaseCheckpointSaver[Any]]:
        """An async context manager giving a LangGraph checkpointer in this same store."""
        ...

    def keep_checkpointer(self) -> AbstractAsyncContextManager[None]:
        """For long-lived callers (the API server, workers, batch): while inside, every
        :meth:`checkpointer` in this event loop shares one kept open instead of opening its own
        (opened on first use, closed on leaving). Nothing to do where one is shared anyway."""
        ...


@runtime_checkable
class Store(
    PlanRepository, ExecutionLog, WorkQueue, RecordStore, ResultCache, CheckpointStore, Protocol
):
    """Where toolplan keeps requests, plans, executions, queue state, toolset records, cached
    tool results and checkpoints: every role, in one database."""

    def close(self) -> None:
        """Release connections."""
        ...
