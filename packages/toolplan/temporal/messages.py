"""What the plan workflow and its activities send each other (Temporal payloads, as JSON).

Only small, fixed-size data crosses Temporal: plan and step IDs, policies, statuses and error
texts. Step outputs and template inputs never do: activities read them from the toolplan store
(:class:`~toolplan.engine.inputs.StoreInputs`) and write them there, so a workflow's history stays
small whatever the tools return, and the store stays the one record users read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

from toolplan.config.policies import ExecutionOptions, RetryPolicy, TimeoutPolicy
from toolplan.config.retry import TRANSIENT
from toolplan.engine.approval import current_user
from toolplan.errors import InvalidInput
from toolplan.runs.lease import ENGINE_HOLDER_PREFIX
from toolplan.store.protocol import SkipReason

__all__ = [
    "DECIDED_SIGNAL",
    "SETTLED_MEMO",
    "Decisions",
    "MapStarted",
    "PauseCall",
    "Paused",
    "PlanLayout",
    "PlanRun",
    "RunOptions",
    "SkipCall",
    "StepCall",
    "StepResult",
    "StepSpec",
    "lease_owner",
    "skip_reason",
    "workflow_id",
]

WORKFLOW_ID_PREFIX = "toolplan-"

DECIDED_SIGNAL = "toolplan.decided"
"""The signal a plan's workflow waits on while steps wait for approval: people's decisions were
recorded in the store (or the plan was executed or cancelled again): look at it."""

SETTLED_MEMO = "toolplan.settled"
"""The workflow's memo that tells a starter its signal was taken in: ``{"phase": "waiting" |
"done", "answered": [tokens]}``, written each time the workflow has read the store after
signals and waits for a person again (or ends). A memo, not a query: the server answers it
(``describe``), so a starter that stops asking leaves no query task behind on a worker."""


def workflow_id(plan_id: str) -> str:
    """The workflow ID of a plan's execution: one per plan, so starting it twice (from any
    process) finds the running workflow instead of starting a second one."""
    return f"{WORKFLOW_ID_PREFIX}{plan_id}"


def lease_owner(plan_id: str) -> str:
    """The lease owner a plan's workflow records on its execution: every run of the workflow
    shares it, and an in-process run of the same plan sees the plan as busy. Its prefix
    (:data:`~toolplan.runs.lease.ENGINE_HOLDER_PREFIX`) says no one process holds it."""
    return f"{ENGINE_HOLDER_PREFIX}temporal:{workflow_id(plan_id)}"


@dataclass(frozen=True)
class RunOptions:
    """The execution options a run was started with (fixed for the workflow's lifetime)."""

    concurrency: int
    fail_fast: bool
    default_timeout: float
    max_attempts: int
    initial_backoff: float
    backoff_factor: float
    max_backoff: float
    jitter: float
    output_limit_bytes: int
    heartbeat_seconds: float
    """A step's heartbeat timeout: how soon a lost worker's step is retried elsewhere."""
    cancel_poll: float = 0.25
    """Seconds between a running step's checks of the store for a cancel request."""
    cache: bool = True
    cache_ttl: float = 300.0
    adaptive_timeouts: bool = True
    timeout_min_observations: int = 20
    timeout_factor: float = 3.0
    timeout_history: int = 100
    approve_all: bool = False
    """No step waits for a person's approval (``--approve-all``)."""
    approver: str | None = None
    """Who ``approve_all`` approves as: named where the run was started (a worker's OS user is
    not the person who said ``--approve-all``)."""
    retry_on: list[str] | None = None
    """The failure kinds the run's retry policy retries (``None``: its default)."""

    @classmethod
    def of(cls, options: ExecutionOptions, *, heartbeat_seconds: float) -> RunOptions:
        """The workflow's copy of ``options``. A retry policy whose ``retry_on`` is a function
        cannot cross to the workers: :class:`~toolplan.errors.InvalidInput` says what to do."""
        retry = options.retry
        kinds = retry.kinds
        if kinds is None:
            raise InvalidInput(
                "a RetryPolicy whose retry_on is a function cannot run on Temporal: the workers, "
                "in other processes, cannot receive it. Give failure kinds "
                "(retry_on={'timeout', 'exception'}), or declare the function on the tool, "
                "which the workers load: toolplan.tagged(tool, retry_on=function)"
            )
        return cls(
            concurrency=options.concurrency,
            fail_fast=options.fail_fast,
            default_timeout=options.default_timeout,
            max_attempts=retry.max_attempts,
            initial_backoff=retry.initial_backoff,
            backoff_factor=retry.backoff_factor,
            max_backoff=retry.max_backoff,
            jitter=retry.jitter,
            output_limit_bytes=options.output_limit_bytes,
            heartbeat_seconds=heartbeat_seconds,
            cancel_poll=options.cancel_poll,
            cache=options.cache,
            cache_ttl=options.cache_ttl,
            adaptive_timeouts=options.timeouts.enabled,
            timeout_min_observations=options.timeouts.min_observations,
            timeout_factor=options.timeouts.factor,
            timeout_history=options.timeouts.history,
            approve_all=options.approve_all,
            approver=(options.approver or current_user()) if options.approve_all else None,
            retry_on=None if kinds == TRANSIENT else sorted(kinds),
        )

    def execution_options(self) -> ExecutionOptions:
        """Back to the engine's options (for the step runner in an activity)."""
        return ExecutionOptions(
            concurrency=self.concurrency,
            fail_fast=self.fail_fast,
            default_timeout=self.default_timeout,
            retry=RetryPolicy(
                max_attempts=self.max_attempts,
                initial_backoff=self.initial_backoff,
                backoff_factor=self.backoff_factor,
                max_backoff=self.max_backoff,
                jitter=self.jitter,
                retry_on=TRANSIENT if self.retry_on is None else frozenset(self.retry_on),  # type: ignore[arg-type]
            ),
            output_limit_bytes=self.output_limit_bytes,
            cancel_poll=self.cancel_poll,
            cache=self.cache,
            cache_ttl=self.cache_ttl,
            timeouts=TimeoutPolicy(
                enabled=self.adaptive_timeouts,
                min_observations=self.timeout_min_observations,
                factor=self.timeout_factor,
                history=self.timeout_history,
            ),
            graph_checkpoints=False,
            approve_all=self.approve_all,
            approver=self.approver,
        )


@dataclass(frozen=True)
class PlanRun:
    """The workflow's input."""

    plan_id: str
    options: RunOptions


@dataclass(frozen=True)
class StepSpec:
    """What the workflow needs to know about a step to schedule its activity."""

    tool: str
    timeout: float
    max_attempts: int
    fallback: bool
    timeout_source: str = "default"
    """Where ``timeout`` came from: ``plan``, ``history`` or ``default``."""
    conditional: bool = False
    """The step has a ``when`` condition, checked (an activity) before it runs."""
    for_each: bool = False
    """The step runs once per item of a list, each item an activity."""


@dataclass(frozen=True)
class FinishedStep:
    """A step an earlier run finished (its output stays in the store)."""

    status: str
    error: str | None = None


@dataclass(frozen=True)
class PlanLayout:
    """What ``start_plan`` found: the DAG and what earlier runs left, or that it is finished."""

    finished_status: str | None = None
    """Set when the execution already has a final status: nothing is left to run."""
    order: list[str] = field(default_factory=list)
    dependencies: dict[str, list[str]] = field(default_factory=dict)
    after: dict[str, list[str]] = field(default_factory=dict)
    """The order edges (:mod:`toolplan.validation.ordering`): steps each step runs after."""
    steps: dict[str, StepSpec] = field(default_factory=dict)
    finished: dict[str, FinishedStep] = field(default_factory=dict)
    prior_attempts: dict[str, int] = field(default_factory=dict)
    cancel_requested: bool = False
    """A cancel was requested before this run started: it ends ``cancelled`` at once."""


@dataclass(frozen=True)
class StepCall:
    """The input of the step activities."""

    plan_id: str
    step_id: str
    options: RunOptions
    prior_attempts: int = 0
    """Attempts an earlier, interrupted run made: attempt numbers go on from there."""
    attempts: int = 0
    """For ``give_up``: the attempts made."""
    error: str | None = None
    """For ``give_up``: the error the last attempt ended with."""
    timeout: float | None = None
    """The step's effective timeout, fixed when the run started (``None``: its own or the
    default)."""
    timeout_source: str | None = None
    item: int | None = None
    """For ``run_item``: the index of the item of a ``forEach`` step."""


@dataclass(frozen=True)
class StepResult:
    """How a step ended (its output is in the store)."""

    status: str
    error: str | None = None
    reason: str | None = None
    """For a step skipped by its condition: ``condition`` or ``condition-not-boolean``
    (:data:`~toolplan.store.SkipReason`)."""


@dataclass(frozen=True)
class MapStarted:
    """What ``start_map`` found: the items left to run, or the step's final result."""

    final: StepResult | None = None
    todo: list[int] = field(default_factory=list)
    prior_attempts: list[int] = field(default_factory=list)
    """Attempts an earlier run made, per item of ``todo``."""


@dataclass(frozen=True)
class SkipCall:
    """A step that will not run, and why."""

    plan_id: str
    step_id: str
    reason: str
    """The message recorded."""
    kind: str | None = None
    """``condition`` or ``condition-not-boolean`` when a condition decided it
    (:data:`~toolplan.store.SkipReason`)."""


def skip_reason(text: str | None) -> SkipReason | None:
    """The skip reason a message carries as text (messages are plain data), ``None`` for none."""
    for reason in get_args(SkipReason):
        if text == reason:
            return reason
    return None


@dataclass(frozen=True)
class Decisions:
    """The payload of :data:`DECIDED_SIGNAL`: the decisions the sender saw recorded on the
    plan's steps (step ID → ``approved`` or ``denied``), for the workflow's history. The store
    stays the truth: the workflow reads it again, and a step's tool is called only with an
    approval of its exact arguments, read there."""

    token: str
    """The sender's own mark: :data:`SETTLED_MEMO` tells it when this signal was taken in."""
    decisions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PauseCall:
    """The input of ``toolplan.pause_plan``: the steps the schedule left waiting."""

    plan_id: str
    waiting: list[str]


@dataclass(frozen=True)
class Paused:
    """What ``toolplan.pause_plan`` found: the execution ended meanwhile (``final_status``: a
    cancel), people decided on waiting steps (``decided``: schedule again from ``finished``),
    or nothing changed (the execution is stored ``waiting``, its lease given back)."""

    final_status: str | None = None
    decided: bool = False
    finished: dict[str, FinishedStep] = field(default_factory=dict)
    """With ``decided``: the steps in a final state, and those still waiting (``waiting``)."""
