"""The mutations :mod:`bench.mutation` plants, and the test files that cover each module.

Each is one bug a person could plausibly write into the engine, approvals, cancel, items (and
the template and analysis checks behind issue 42's nine; its planning one, in the duplicate
merge, went with that rule in issue 53). Its snippet must be found
exactly once in its module; when the code moves on, the mutation reports ``not-applicable``
until its snippet is updated.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANALYSIS", "ENGINE", "MUTATIONS", "PLANNING", "STREAMING", "TEMPLATES", "Mutation"]


@dataclass(frozen=True)
class Mutation:
    """One planted bug: ``original`` (exactly once in ``path``) becomes ``mutated``."""

    name: str
    path: str
    """The module, relative to the repository root."""
    original: str
    mutated: str
    description: str
    """The bug, as a person would describe it."""
    tests: tuple[str, ...]
    """The test files that cover the module (run with ``-x -q``)."""


# -- the covering tests -----------------------------------------------------------------------

_UNIT_ENGINE = (
    "tests/unit/test_regressions_issue42.py",
    "tests/unit/test_scheduler.py",
    "tests/unit/test_items.py",
    "tests/unit/test_attempts.py",
    "tests/unit/test_retries.py",
    "tests/unit/test_recorder.py",
    "tests/unit/test_engine.py",
    "tests/unit/test_approvals.py",
    "tests/unit/test_approval_interrupts.py",
    "tests/unit/test_backends.py",
    "tests/unit/test_timeouts.py",
    "tests/unit/test_toolcall.py",
    "tests/unit/test_result_cache.py",
    "tests/unit/test_observers.py",
    "tests/unit/test_step_errors.py",
)
_E2E_ENGINE = (
    "tests/e2e/test_regressions_issue42.py",
    "tests/e2e/test_gates.py",
    "tests/e2e/test_foreach.py",
    "tests/e2e/test_approvals.py",
    "tests/e2e/test_api_approvals.py",
    "tests/e2e/test_cancel.py",
    "tests/e2e/test_cli_resume_tools.py",
    "tests/e2e/test_cache.py",
    "tests/e2e/test_workers.py",
    "tests/faults/test_sqlite_faults.py",
)
ENGINE = (
    _UNIT_ENGINE + _E2E_ENGINE + ("tests/unit/test_ordering.py", "tests/e2e/test_program_order.py")
)
"""Every test file that runs the engine, approvals, cancel or items: the modules under
``engine/`` and ``runs/`` are covered by all of them (a step's bug shows anywhere)."""

TEMPLATES = (
    "tests/unit/test_templates.py",
    "tests/unit/test_template_types.py",
    "tests/unit/test_engine.py",
    "tests/e2e/test_regressions_issue42.py",
)
ANALYSIS = (
    "tests/unit/test_ordering.py",
    "tests/e2e/test_program_order.py",
    "tests/unit/test_regressions_issue42.py",
    "tests/unit/test_template_types.py",
    "tests/unit/test_analysis.py",
    "tests/unit/test_gated_reuse.py",
    "tests/e2e/test_gates.py",
)
STREAMING = (
    "tests/unit/test_early_start.py",
    "tests/e2e/test_program_order_streaming.py",
    "tests/e2e/test_stream_execution.py",
)
PLANNING = (
    "tests/unit/test_planning.py",
    "tests/unit/test_grounding.py",
    "tests/unit/test_planning_rewrites.py",
)

_ENGINE = "packages/toolplan/engine/"
_EXECUTION = "packages/toolplan/runs/"
_RETRY = "packages/toolplan/config/retry.py"


def _m(name: str, module: str, original: str, mutated: str, description: str) -> Mutation:
    tests: tuple[str, ...] = ENGINE
    if module.startswith("packages/toolplan/plan_format/"):
        tests = TEMPLATES
    elif module.startswith("packages/toolplan/validation/"):
        tests = ANALYSIS
    elif module.startswith("packages/toolplan/planning/"):
        tests = PLANNING
    elif module.startswith("packages/toolplan/pipeline/"):
        tests = STREAMING
    return Mutation(name, module, original, mutated, description, tests)


MUTATIONS: tuple[Mutation, ...] = (
    # -- gates and approvals -------------------------------------------------------------------
    _m(
        "gate-restart-waiting-counts-done",
        _ENGINE + "scheduler.py",
        'if outcomes.get(dep, _PENDING).status != "succeeded"',
        'if outcomes.get(dep, _PENDING).status not in ("succeeded", "waiting")',
        "when the schedule restarts, a dependency still waiting for approval counts as done",
    ),
    _m(
        "gate-restart-waiting-skips",
        _ENGINE + "scheduler.py",
        'if step in outcomes and outcomes[step].status not in ("succeeded", "waiting"):',
        'if step in outcomes and outcomes[step].status != "succeeded":',
        "when the schedule restarts, a waiting step's dependents are skipped as if it failed",
    ),
    _m(
        "gate-waiting-dependents-skipped",
        _ENGINE + "scheduler.py",
        'elif result.status != "waiting":',
        "else:",
        "a step that starts waiting for approval has its dependents skipped",
    ),
    _m(
        "gate-denied-not-stopping",
        _ENGINE + "scheduler.py",
        '_STOPPED = ("failed", "denied")',
        '_STOPPED = ("failed",)',
        "a denied step's dependents are reported as skipped for a failure, not the denial",
    ),
    _m(
        "approval-any-arguments",
        _ENGINE + "approval.py",
        "        and decision.fingerprint == fingerprint(tool, arguments)\n",
        "",
        "an approval covers the call whatever arguments it was given for",
    ),
    _m(
        "approval-plan-flag-ignored",
        _ENGINE + "approval.py",
        "return step.approval or gated_tool(tool)",
        "return gated_tool(tool)",
        'a step the plan marks "approval": true runs without one',
    ),
    _m(
        "approval-destructive-hint-ignored",
        "packages/toolplan/tools/catalog.py",
        'return (tool.metadata or {}).get("destructiveHint") is True',
        "return False",
        "an MCP tool annotated destructiveHint runs without approval",
    ),
    _m(
        "approval-approve-all-ignored",
        _ENGINE + "attempts.py",
        "        if self.options.approve_all:\n            decision = Decision(",
        "        if False:\n            decision = Decision(",
        "--approve-all does not pre-approve: gated steps wait anyway",
    ),
    _m(
        "approval-approve-all-unrecorded",
        _ENGINE + "attempts.py",
        "            await self.recorder.approved(step.id, decision)\n",
        "",
        "--approve-all lets a gated step through with no decision on record",
    ),
    _m(
        "approval-gated-fallback-called",
        _ENGINE + "attempts.py",
        "        if self.catalog.gated(tool):\n",
        "        if False:\n",
        "a fallback calls a gated tool with no approval (a plan stored before validation refused it)",
    ),
    _m(
        "approval-gated-fallback-valid",
        "packages/toolplan/validation/dag.py",
        "elif fallback and catalog.gated(tool):",
        "elif False:",
        "validation accepts a fallback that names a gated tool",
    ),
    _m(
        "approval-empty-list-approves-all",
        _EXECUTION + "approvals.py",
        "    if step_ids is not None and not step_ids:",
        "    if False:",
        "approveStep(stepIds: []) approves every waiting step",
    ),
    _m(
        "error-unexpected-exception-unrecorded",
        _ENGINE + "attempts.py",
        "        except RUN_STOPPERS:\n            raise\n        except Exception as error:\n            failed = internal_error(",
        "        except RUN_STOPPERS:\n            raise\n        except ZeroDivisionError as error:\n            failed = internal_error(",
        "an unexpected exception in a forEach item is not written on the item: it ends the step",
    ),
    _m(
        "approval-foreach-ungated",
        _ENGINE + "foreach.py",
        "            if caller.gated(step):\n",
        "            if step.approval:\n",
        "a forEach step over a gated tool asks no approval unless the plan says so",
    ),
    _m(
        "approval-decider-race-ignored",
        _EXECUTION + "approvals.py",
        "if not store.decide_step(plan_id, step.step_id, changes):",
        "if store.decide_step(plan_id, step.step_id, changes) is None:",
        "a decision that lost the race to another person's is reported as taken",
    ),
    _m(
        "approval-finished-plan-decidable",
        _EXECUTION + "approvals.py",
        "if execution.status in TERMINAL_EXECUTION_STATUSES:",
        'if execution.status == "succeeded":',
        "a decision on a plan that failed or was cancelled is accepted",
    ),
    _m(
        "approval-deny-without-reason",
        _EXECUTION + "approvals.py",
        "    if not reason:\n",
        "    if reason is None:\n",
        "a denial with an empty reason is accepted",
    ),
    _m(
        "approval-resume-forgets-decisions",
        _EXECUTION + "runner.py",
        "decisions={s.step_id: s.decision for s in execution.steps if s.decision is not None},",
        "decisions={},",
        "a run continued after an approval ignores it and asks again",
    ),
    _m(
        "approval-meanwhile-not-restarted",
        _EXECUTION + "runner.py",
        "    if len(still) == len(waiting):\n",
        "    if still:\n",
        "an approval given while other steps ran is left for a later run unless all were decided",
    ),
    # -- errors that are recorded --------------------------------------------------------------
    _m(
        "error-fallback-template-escapes",
        _ENGINE + "attempts.py",
        "except (TemplateError, AttemptFailed) as failure:",
        "except AttemptFailed as failure:",
        "a fallback whose template cannot resolve leaves the step running",
    ),
    _m(
        "error-index-past-end",
        "packages/toolplan/plan_format/templates.py",
        "if index >= len(current):",
        "if index > len(current):",
        "an index one past the end of a list escapes as IndexError (the step stays pending)",
    ),
    _m(
        "error-step-finish-unshielded",
        _ENGINE + "attempts.py",
        "        return await asyncio.shield(writing)\n",
        "        return await writing\n",
        "a step cancelled while its success is recorded loses the record (a resume calls it again)",
    ),
    _m(
        "error-run-exception-swallowed",
        _EXECUTION + "cancel.py",
        "        if task.done():\n            task.result()  # its exception, if any\n",
        "        if task.done():\n",
        "a run that fails with a store error ends as if it had finished",
    ),
    # -- retries and resume --------------------------------------------------------------------
    _m(
        "retry-permanent-failures",
        _RETRY,
        "if attempts >= self.max_attempts or not self.retries(failure, tool):",
        "if attempts >= self.max_attempts:",
        "a failure that is not transient (a business error) is retried: its side effect repeats",
    ),
    _m(
        "retry-one-too-many",
        _RETRY,
        "if attempts >= self.max_attempts or not self.retries(failure, tool):",
        "if attempts > self.max_attempts or not self.retries(failure, tool):",
        "one attempt more than maxAttempts",
    ),
    _m(
        "retry-numbers-restart",
        _ENGINE + "attempts.py",
        "    number = prior\n    while True:",
        "    number = 0\n    while True:",
        "after a resume, attempts are numbered from 1 again (idempotency metadata repeats)",
    ),
    _m(
        "retry-resume-fresh-attempts",
        _ENGINE + "attempts.py",
        "delay = after(failed, number)",
        "delay = after(failed, number - prior)",
        "a resumed step gets a fresh set of attempts: 5 recorded, not 3, and handed to its fallback",
    ),
    _m(
        "retry-step-max-attempts-ignored",
        _ENGINE + "attempts.py",
        "policy = self.options.retry.for_call(self.catalog.get(step.tool), step.max_attempts)",
        "policy = self.options.retry.for_call(self.catalog.get(step.tool))",
        "a step's own maxAttempts is ignored",
    ),
    _m(
        "retry-tool-policy-ignored",
        _RETRY,
        "        if metadata.get(RETRY_ON_KEY) is not None:\n",
        "        if False:\n",
        "a tool's own retry_on is ignored: the run's decides for it",
    ),
    _m(
        "retry-fallback-timeout-default",
        _ENGINE + "attempts.py",
        "                step.timeout or self.options.default_timeout,\n",
        "                self.options.default_timeout,\n",
        "a fallback ignores the step's timeout",
    ),
    _m(
        "resume-prior-attempts-lost",
        _ENGINE + "step.py",
        "prior = self.prior_attempts.get(step_id, 0)",
        "prior = 0",
        "a step resumed after a crash counts its attempts from zero",
    ),
    _m(
        "resume-denied-not-final",
        _EXECUTION + "runner.py",
        'if s.status in ("succeeded", "failed", "skipped", "denied")',
        'if s.status in ("succeeded", "failed", "skipped")',
        "a denied step is not final on resume: it runs (and waits) again",
    ),
    _m(
        "resume-pending-attempts-lost",
        _EXECUTION + "runner.py",
        'if s.status in ("running", "pending") and s.attempts',
        'if s.status == "running" and s.attempts',
        "attempts of a step reopened after a cancel are counted from zero",
    ),
    # -- items ---------------------------------------------------------------------------------
    _m(
        "items-resume-failed",
        _ENGINE + "items.py",
        'todo = [r.index for r in records if r.status not in ("succeeded", "failed")]',
        'todo = [r.index for r in records if r.status != "succeeded"]',
        "on resume, items that failed for good run again",
    ),
    _m(
        "items-resume-other-list",
        _ENGINE + "items.py",
        "if prior is None or len(prior) != count:",
        "if prior is None:",
        "on resume, item records of a list of another length are reused",
    ),
    _m(
        "items-cancelled-count-succeeded",
        _ENGINE + "items.py",
        'failed = [r for r in ordered if r.status != "succeeded"]',
        'failed = [r for r in ordered if r.status == "failed"]',
        "a map whose items were cancelled or never ran adds up to succeeded",
    ),
    _m(
        "items-max-items-ignored",
        _ENGINE + "items.py",
        "    if own is not None and own < ceiling:\n",
        "    if False:\n",
        "a step's maxItems is ignored",
    ),
    _m(
        "items-max-items-lifts-ceiling",
        _ENGINE + "items.py",
        "    ceiling = default_limit\n",
        "    ceiling = step.max_items or default_limit\n",
        "a plan's maxItems lifts the operator's TOOLPLAN_MAX_ITEMS",
    ),
    _m(
        "items-slot-not-taken-back",
        _ENGINE + "items.py",
        "        raise\n    await slots.take()\n",
        "        raise\n",
        "a map does not take its slot back: the concurrency limit is exceeded afterwards",
    ),
    _m(
        "items-record-unshielded",
        _ENGINE + "foreach.py",
        "        return await surviving_cancel(\n",
        "        return await (\n",
        "an item cancelled while its success is being recorded is lost",
    ),
    _m(
        "items-attempts-from-zero",
        _ENGINE + "foreach.py",
        ".run(prior_attempts)",
        ".run(0)",
        "a resumed item counts its attempts from zero",
    ),
    _m(
        "items-resume-after-cancel",
        _EXECUTION + "runner.py",
        'if s.items is not None and s.status in ("running", "pending", "cancelled")',
        'if s.items is not None and s.status in ("running", "pending")',
        "a map resumed after a cancel runs its finished items again",
    ),
    _m(
        "condition-not-inverted",
        _ENGINE + "items.py",
        "        return not value, (\n",
        "        return value is None, (\n",
        'a {"not": ...} condition holds for false, 0 and empty values',
    ),
    # -- cancel --------------------------------------------------------------------------------
    _m(
        "cancel-expired-lease",
        _EXECUTION + "cancel.py",
        "return execution.lease_until < time.time() or holder_is_dead(execution)",
        "return holder_is_dead(execution)",
        "cancelling a run whose lease expired does not end it",
    ),
    _m(
        "cancel-waiting-approval-kept",
        _EXECUTION + "cancel.py",
        'elif step.status in ("pending", "waiting_approval"):',
        'elif step.status == "pending":',
        "a step waiting for approval is not marked cancelled",
    ),
    _m(
        "cancel-requested-before-lease-ignored",
        _EXECUTION + "runner.py",
        "cancelled = current.cancel_requested_at is not None or await while_holding(",
        "cancelled = await while_holding(",
        "a cancel requested while nobody held the run is ignored by the next runner",
    ),
    _m(
        "lease-dead-holder-waits-for-expiry",
        _EXECUTION + "lease.py",
        "expected = execution.worker_id if holder_is_dead(execution) else None",
        "expected = None",
        "a run whose process died is not taken over until its lease expires",
    ),
    _m(
        "lease-renewed-too-late",
        _EXECUTION + "lease.py",
        "await asyncio.sleep(lease / 3)",
        "await asyncio.sleep(lease)",
        "the lease is renewed only as it expires: another worker may take a live run over",
    ),
    _m(
        "recorder-stale-decision-kept",
        _ENGINE + "recorder.py",
        '            "decision": None,\n',
        "",
        "a step that waits again keeps the decision given for other arguments",
    ),
    # -- analysis and planning -----------------------------------------------------------------
    _m(
        "analysis-open-object-closed",
        "packages/toolplan/validation/types.py",
        'elif properties and not shape.get("additionalProperties"):',
        "elif properties:",
        "an object output that declares some keys but allows others is treated as closed",
    ),
    # -- program order (issue 49) -----------------------------------------------------------
    _m(
        "order-edges-ignored",
        _ENGINE + "scheduler.py",
        "unended[step] = sum(1 for dep in earlier if not _ended(outcomes.get(dep)))",
        "unended[step] = 0",
        "the scheduler starts a step without waiting for the steps it is ordered after",
    ),
    _m(
        "order-waiting-releases",
        _ENGINE + "scheduler.py",
        """        if result.status != "waiting":
            release_followers(step)""",
        """        release_followers(step)""",
        "a write waiting for approval lets the reads ordered after it run before it happened",
    ),
    _m(
        "order-failure-holds-forever",
        _ENGINE + "scheduler.py",
        'return outcome is not None and outcome.status != "waiting"',
        'return outcome is not None and outcome.status == "succeeded"',
        "a failed write never releases the steps ordered after it (they stay pending)",
    ),
    _m(
        "order-write-skips-reads",
        "packages/toolplan/validation/ordering.py",
        "before = state.reads or state.writes",
        "before = state.writes",
        "a write waits for the last write only, not for the reads of its resource since",
    ),
    _m(
        "order-reads-not-held",
        "packages/toolplan/validation/ordering.py",
        """            if what.read_only:
                before = state.writes""",
        """            if what.read_only:
                before = []""",
        "a read written after a write does not wait for it",
    ),
    _m(
        "cache-write-not-told",
        _ENGINE + "attempts.py",
        "if not effect.read_only and self.written_to is not None:",
        "if False and self.written_to is not None:",
        "a write does not move its resources' versions: the cache serves reads from before it",
    ),
    _m(
        "cache-stale-served",
        "packages/toolplan/store/protocol.py",
        "return all(stored.get(name) == version for name, version in current.items())",
        "return True",
        "a cached result is served whatever was written since",
    ),
    _m(
        "early-read-after-write",
        "packages/toolplan/pipeline/early_start.py",
        "if not earlier.read_only and reads & set(earlier.resources):",
        "if False:",
        "a read written after a write on its resource starts early, before the write",
    ),
    _m(
        "early-adopts-other-arguments",
        "packages/toolplan/pipeline/early_start.py",
        "return self._key(early.tool, parameters) == self._key(early.tool, early.parameters)",
        "return True",
        "an early call is adopted by a final step that makes another call",
    ),
)
