"""The ``toolplan`` command line: a thin layer over :mod:`toolplan.operations`.

Exit codes: 0 all steps succeeded · 1 some step failed or was skipped · 2 invalid input, nothing
executed · 3 infrastructure unavailable (store, LLM) · 130 interrupted. A reader that goes away
(``toolplan run ... | head -2``, or stderr closed) changes neither the run nor the exit code: the
plan runs to its end, is recorded as it ended, and the command exits quietly with that outcome's
code (:mod:`toolplan.console`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import click
import typer
from rich.markup import escape

from toolplan import operations, render
from toolplan._help import use_metavars
from toolplan.client import execution_context
from toolplan.config import Settings
from toolplan.console import PipeConsole, stop_writing
from toolplan.errors import InvalidInput, ToolplanError
from toolplan.execution.context import ExecutionContext
from toolplan.limits import check_text
from toolplan.store import Store, open_store
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.loading import load_catalog

if TYPE_CHECKING:
    from toolplan.store.protocol import PlanRecord
    from toolplan.tools.sources import ToolSources

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolplan",
    help="Plan-then-execute tool orchestration: validate, store and run DAGs of tool calls.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
use_metavars()
stdout = PipeConsole(soft_wrap=True)
stderr = PipeConsole(stderr=True, soft_wrap=True)

T = TypeVar("T")

DEBUG_ENV = "TOOLPLAN_DEBUG"
"""Set to print the traceback of an internal error (a bug) on stderr."""

# -- shared options ------------------------------------------------------------------------------

ToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tools",
        metavar="MODULE",
        help="Tool module exposing TOOLS (repeatable); built-ins: blog, metrics, weather. "
        "Default: $TOOLPLAN_TOOLS or all built-ins.",
    ),
]
McpOption = Annotated[
    Path | None,
    typer.Option(
        "--mcp",
        metavar="FILE",
        help="mcpServers JSON file: also load these MCP servers' tools (stdio or HTTP). "
        "Default: $TOOLPLAN_MCP.",
    ),
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="URI",
        help="Store URI (sqlite:///file.db, mongodb://host/db) or a SQLite file path "
        "(.db, .sqlite). Default: $TOOLPLAN_STORE, the project config, or .toolplan/toolplan.db "
        "in the nearest folder upwards that has one (else here).",
    ),
]
TemporalAddressOption = Annotated[
    str | None,
    typer.Option(
        "--temporal-address",
        help="Run plans as Temporal workflows on this server (host:port). "
        "Default: $TOOLPLAN_TEMPORAL_ADDRESS; unset: run them here.",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        "--concurrency", min=1, metavar="N", help="Most steps running at once (default 10)."
    ),
]
FailFastOption = Annotated[
    bool,
    typer.Option("--fail-fast", help="Stop at the first failed step instead of failing forward."),
]
NoCacheOption = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Call every tool: do not answer read-only tools from the result cache.",
    ),
]
MaxStepsOption = Annotated[
    int | None,
    typer.Option(
        "--max-steps", min=1, metavar="N", help="Reject plans with more steps (default 50)."
    ),
]
FileOption = Annotated[
    Path | None,
    typer.Option(
        "--file", "-f", metavar="FILE", help="Plan JSON file (canonical or seed-002 form)."
    ),
]
QueryOption = Annotated[
    str | None,
    typer.Option("--query", metavar="TEXT", help="The request text to store with the plan."),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Run plans stored as needs_review.")]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="PROVIDER:MODEL",
        help="provider:model for planning (default $TOOLPLAN_MODEL or openai:gpt-4o-mini).",
    ),
]
RequestIdOption = Annotated[
    str | None,
    typer.Option(
        "--request-id", metavar="REQ_ID", help="Add the plan as a new version of this request."
    ),
]
MaxRepairsOption = Annotated[
    int | None,
    typer.Option(
        "--max-repairs",
        min=0,
        metavar="N",
        help="LLM repair attempts for invalid plans (default 2).",
    ),
]
ThresholdOption = Annotated[
    float | None,
    typer.Option(
        "--confidence-threshold",
        metavar="0..1",
        min=0,
        max=1,
        help="Plans whose lowest step confidence is below this are stored as needs_review (default 0.5).",
    ),
]
QueryArgument = Annotated[
    str | None,
    typer.Argument(metavar="QUERY", help="What to do, in natural language (needs a model)."),
]


class Session:
    """Settings, store and catalog for one command, opened lazily and closed at the end."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._store: Store | None = None
        self._catalog: ToolCatalog | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = open_store(self.settings.store_uri)
        return self._store

    @property
    def catalog(self) -> ToolCatalog:
        if self._catalog is None:
            self._catalog = load_catalog(self.settings)
        return self._catalog

    def use_plan_tools(self, plan_id: str) -> None:
        """When no tools were chosen, load the tools recorded with the stored plan, and say so
        (:class:`~toolplan.tools.recorded.RecordedTools`: exit 3 when they cannot be loaded)."""
        from toolplan.lookup import find_plan
        from toolplan.tools.recorded import RecordedTools

        if self._catalog is not None or self.settings.tool_sources_given:
            return

        def say(record: PlanRecord, sources: ToolSources) -> None:
            stderr.print(
                f"using the tools recorded with {record.plan_id}: {sources.describe()}",
                highlight=False,
            )

        recorded = RecordedTools(self.settings, on_load=say)
        self._catalog = recorded.catalog_for_sync(find_plan(self.store, plan_id))

    def context(self, *, as_json: bool) -> ExecutionContext:
        listener = None if as_json else render.ProgressPrinter(stderr)
        return execution_context(
            self.settings, store=self.store, catalog=self.catalog, listener=listener
        )

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def _session(
    store: str | None,
    tools: list[str] | None,
    *,
    concurrency: int | None = None,
    fail_fast: bool | None = None,
    max_steps: int | None = None,
    mcp: Path | None = None,
    no_cache: bool = False,
    temporal_address: str | None = None,
) -> Session:
    settings = Settings.from_env().with_overrides(
        store_uri=store,
        tool_modules=tools,
        concurrency=concurrency,
        fail_fast=fail_fast,
        max_steps=max_steps,
        mcp_config=str(mcp) if mcp else None,
        no_cache=no_cache,
        temporal_address=temporal_address,
    )
    return Session(settings)


def _store_uri(flag: str | None) -> str:
    from toolplan.store import redact_uri
    from toolplan.store.registry import store_uri_for

    return redact_uri(store_uri_for(flag or Settings.from_env().store_uri))


def _emit_json(data: Any) -> None:
    text = json.dumps(data, ensure_ascii=False, default=str)
    try:
        try:
            sys.stdout.write(text + "\n")
        except UnicodeEncodeError:
            # A lone surrogate (from a tool's output, say) cannot be written as UTF-8; JSON
            # escapes still carry it, so stdout stays one valid JSON object.
            sys.stdout.write(json.dumps(data, ensure_ascii=True, default=str) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| head`); the caller's exit code still holds
        stop_writing(sys.stdout)


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no message)"


def _guard(
    body: Callable[[], T], *, as_json: bool, plan_id: Callable[[], str | None] | None = None
) -> T:
    """Turn predictable failures into a clear message and the contract's exit code.

    ``plan_id`` tells the plan being executed, if any, for the hint after Ctrl-C."""
    try:
        return body()
    except ToolplanError as error:
        if as_json:
            payload: dict[str, Any] = {
                **error.details,
                "error": error.message,
                "exitCode": error.exit_code,
            }
            issues = getattr(error, "issues", None)
            if issues:
                payload["issues"] = [
                    {"code": i.code, "message": i.message, "step": i.step} for i in issues
                ]
            _emit_json(payload)
        stderr.print(f"[bold red]error:[/] {escape(error.message)}", highlight=False)
        raise typer.Exit(error.exit_code) from None
    except KeyboardInterrupt:
        interrupted = plan_id() if plan_id is not None else None
        if interrupted:
            stderr.print(
                "interrupted; finished steps are stored — resume with "
                f"`toolplan execute {interrupted}`",
                highlight=False,
            )
        else:
            stderr.print("interrupted", highlight=False)
        raise typer.Exit(130) from None
    except (typer.Exit, typer.Abort, click.exceptions.ClickException):
        raise
    except Exception as error:
        # A bug, not a predictable failure: still one line (and one JSON object with --json);
        # the traceback only on request.
        message = (
            f"internal error: {type(error).__name__}: {_one_line(str(error))[:500]} "
            f"(a bug in toolplan; set {DEBUG_ENV}=1 for the traceback)"
        )
        if as_json:
            _emit_json({"error": message, "exitCode": 1})
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        stderr.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
        raise typer.Exit(1) from None


def _run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def _finish_execution(result: operations.ExecutionResult, *, as_json: bool, store_uri: str) -> None:
    if as_json:
        _emit_json(result.to_json())
    else:
        render.print_execution(stdout, result)
        stdout.print(f"stored in {store_uri} — inspect with: toolplan show {result.plan_id}")
        if result.status == "cancelled":
            stdout.print(
                f"it was cancelled; continue it with: toolplan execute {result.plan_id} --resume"
            )
    raise typer.Exit(result.exit_code)


# -- commands ------------------------------------------------------------------------------------


def _print_version(value: bool) -> None:
    if value:
        from toolplan import __version__

        stdout.print(f"toolplan {__version__}", highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Plan-then-execute tool orchestration: validate, store and run DAGs of tool calls."""


@app.command()
def submit(
    file: FileOption = None,
    query: QueryOption = None,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    max_steps: MaxStepsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Validate a plan file and store it; prints its request and plan IDs. Nothing runs."""

    def body() -> None:
        if file is None:
            raise InvalidInput("give the plan with --file PLAN.json")
        session = _session(store, tools, max_steps=max_steps, mcp=mcp)
        try:
            ref = operations.submit_plan(
                file,
                store=session.store,
                catalog=session.catalog,
                query=query,
                max_steps=session.settings.max_steps,
                limits=session.settings.limits,
                estimates=session.settings.estimates,
            )
        finally:
            session.close()
        if as_json:
            _emit_json(ref.to_json())
        else:
            stdout.print(
                f"stored plan [bold]{ref.plan_id}[/] (request {ref.request_id}) in {session.store.uri}"
            )
            estimate = ref.estimate.to_json() if ref.estimate else None
            stdout.print(f"estimate: {render.estimate_text(estimate)}", highlight=False)
            stdout.print(f"run it with: toolplan execute {ref.plan_id}")

    _guard(body, as_json=as_json)


@app.command()
def execute(
    plan_id: Annotated[
        str, typer.Argument(metavar="PLAN_ID", help="The plan to run or resume (plan_...).")
    ],
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    concurrency: ConcurrencyOption = None,
    fail_fast: FailFastOption = False,
    no_cache: NoCacheOption = False,
    yes: YesOption = False,
    as_json: JsonOption = False,
    enqueue: Annotated[
        bool,
        typer.Option(
            "--enqueue",
            help="Queue it for `toolplan worker` processes (Temporal workers with "
            "--temporal-address) instead of waiting for it.",
        ),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue a cancelled execution: its finished steps are kept, the rest run.",
        ),
    ] = False,
    temporal_address: TemporalAddressOption = None,
) -> None:
    """Run a stored plan, or resume it after a crash. A finished plan prints its stored result.

    With a Temporal address the plan runs as a Temporal workflow on `toolplan worker --temporal`
    processes, and this command waits for it (or only queues it, with --enqueue).
    """

    def open_session() -> Session:
        return _session(
            store,
            tools,
            concurrency=concurrency,
            fail_fast=fail_fast or None,
            mcp=mcp,
            no_cache=no_cache,
            temporal_address=temporal_address,
        )

    if enqueue:
        _enqueue(plan_id, open_session, yes=yes, as_json=as_json, resume=resume)
        return

    def body() -> operations.ExecutionResult:
        session = open_session()
        try:
            finished = operations.finished_status(session.store, plan_id)
            if finished == "cancelled" and resume:
                session.use_plan_tools(plan_id)  # it runs again: with the tools it was made with
            elif finished is not None:
                stderr.print(
                    f"{plan_id} already finished ({finished}): this is its stored result; "
                    "no tool was called (submit the plan again to run it anew)",
                    highlight=False,
                )
            else:
                session.use_plan_tools(plan_id)
            return _run_async(
                operations.execute_stored_plan(
                    plan_id, session.context(as_json=as_json), approve=yes, resume=resume
                )
            )
        finally:
            session.close()

    _finish_execution(
        _guard(body, as_json=as_json, plan_id=lambda: plan_id),
        as_json=as_json,
        store_uri=_store_uri(store),
    )


def _enqueue(
    plan_id: str,
    open_session: Callable[[], Session],
    *,
    yes: bool,
    as_json: bool,
    resume: bool,
) -> None:
    def body() -> tuple[Any, str]:
        session = open_session()
        try:
            if session.settings.temporal.enabled:
                session.use_plan_tools(plan_id)
                record = _run_async(
                    operations.enqueue_execution(
                        plan_id, session.context(as_json=True), approve=yes, resume=resume
                    )
                )
                return record, f"on Temporal ({session.settings.temporal.address})"
            from toolplan.worker import enqueue_plan

            record = enqueue_plan(session.store, plan_id, approve=yes, resume=resume)
            return record, f"in {_store_uri(session.settings.store_uri)}"
        finally:
            session.close()

    record, where = _guard(body, as_json=as_json)
    if as_json:
        _emit_json({"planId": record.plan_id, "status": record.status})
    elif record.status == "queued":
        stdout.print(f"queued {record.plan_id} {where}; a `toolplan worker` will run it")
    else:
        stdout.print(
            f"{record.plan_id} is {record.status}, not queued again; see: toolplan show {record.plan_id}"
        )


@app.command()
def run(
    query_text: QueryArgument = None,
    file: FileOption = None,
    query: QueryOption = None,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    model: ModelOption = None,
    request_id: RequestIdOption = None,
    concurrency: ConcurrencyOption = None,
    fail_fast: FailFastOption = False,
    no_cache: NoCacheOption = False,
    max_steps: MaxStepsOption = None,
    max_repairs: MaxRepairsOption = None,
    confidence_threshold: ThresholdOption = None,
    yes: YesOption = False,
    no_reuse: Annotated[
        bool,
        typer.Option(
            "--no-reuse",
            help="Always plan with the LLM; by default a stored plan that succeeded for the "
            "same query is reused ($TOOLPLAN_PLAN_REUSE: off, exact, parametric).",
        ),
    ] = False,
    as_json: JsonOption = False,
    temporal_address: TemporalAddressOption = None,
    no_answer: Annotated[
        bool,
        typer.Option("--no-answer", help="Stop after the execution: no answer, no replanning."),
    ] = False,
    max_replans: Annotated[
        int,
        typer.Option("--max-replans", min=0, help="New plans allowed after a failed one."),
    ] = 1,
) -> None:
    """Plan a query with the LLM, execute it and answer (replanning after failures); or run a
    plan --file."""

    def open_session() -> Session:
        return _session(
            store,
            tools,
            concurrency=concurrency,
            fail_fast=fail_fast or None,
            max_steps=max_steps,
            mcp=mcp,
            no_cache=no_cache,
            temporal_address=temporal_address,
        )

    if query_text is not None and file is None and not no_answer:
        from toolplan.commands.answer import run_with_answer

        run_with_answer(
            query_text,
            open_session,
            planner=lambda session: _planner(session, model, max_repairs, confidence_threshold),
            request_id=request_id,
            max_replans=max_replans,
            approve=yes,
            as_json=as_json,
            no_reuse=no_reuse,
        )
        return
    planning: dict[str, Any] = {}

    def body() -> operations.ExecutionResult:
        from toolplan.pipeline import FromDocument, FromQuery, Planned, plan_then_execute

        if (file is None) == (query_text is None):
            raise InvalidInput(
                'give either a query (toolplan run "create author Alice ...") or a plan file '
                "(toolplan run --file plan.json)"
            )
        session = open_session()

        def show(planned: Planned) -> None:
            planning["planId"] = planned.ref.plan_id
            estimate = planned.ref.estimate.to_json() if planned.ref.estimate else None
            planning["estimate"] = estimate
            if planned.planning is not None:
                planning.update(planned.planning.to_json())
                if not as_json:
                    render.print_plan(stderr, planned.planning.plan, planned.planning.analysis)
            elif planned.reused_from is not None:
                planning.update(planned.to_json(), planStatus=planned.ref.status)
                if not as_json:
                    ref = planned.ref
                    stderr.print(
                        f"reused {planned.reused_from} ({planned.reuse} match, 0 LLM calls) as "
                        f"{ref.plan_id} (request {ref.request_id}); --no-reuse plans anew",
                        highlight=False,
                    )
            elif not as_json:
                ref = planned.ref
                stderr.print(
                    f"stored {ref.plan_id} (request {ref.request_id}) in {session.store.uri}"
                )
            if not as_json:
                stderr.print(f"estimate: {render.estimate_text(estimate)}", highlight=False)

        try:
            if query_text is not None:
                # The query is checked before a model is even set up: bad input is exit 2.
                check_text(query_text, "the query", session.settings.limits)
                reuse = "off" if no_reuse else session.settings.plan_reuse
                source: FromQuery | FromDocument = FromQuery(query_text, request_id, reuse)
                planner = _planner(session, model, max_repairs, confidence_threshold)
            else:
                assert file is not None
                source, planner = FromDocument(file, query=query, request_id=request_id), None
            outcome = _run_async(
                plan_then_execute(
                    source,
                    session.context(as_json=as_json),
                    max_steps=session.settings.max_steps,
                    planner=planner,
                    approve=yes,
                    on_planned=show,
                    limits=session.settings.limits,
                )
            )
        finally:
            session.close()
        assert outcome.result is not None  # review="refuse": a refused plan raised instead
        return outcome.result

    result = _guard(body, as_json=as_json, plan_id=lambda: planning.get("planId"))
    if as_json and "plan" in planning:
        _emit_json(
            {
                **result.to_json(),
                "planStatus": planning["status"],
                "estimate": planning.get("estimate"),
                "plan": planning["plan"],
                "llmCalls": planning["llmCalls"],
                "usage": planning["usage"],
                "planningMs": planning["planningMs"],
            }
        )
        raise typer.Exit(result.exit_code)
    if as_json and "reusedFrom" in planning:
        _emit_json(
            {
                **result.to_json(),
                "planStatus": planning["planStatus"],
                "reusedFrom": planning["reusedFrom"],
                "reuse": planning["reuse"],
                "estimate": planning.get("estimate"),
                "llmCalls": 0,
                "usage": {"inputTokens": 0, "outputTokens": 0},
            }
        )
        raise typer.Exit(result.exit_code)
    _finish_execution(result, as_json=as_json, store_uri=_store_uri(store))


def _planner(
    session: Session,
    model: str | None,
    max_repairs: int | None,
    confidence_threshold: float | None,
) -> Any:
    from toolplan.planning.setup import planner_context_from_env

    return planner_context_from_env(
        settings=session.settings,
        store=session.store,
        catalog=session.catalog,
        model=model,
        max_repairs=max_repairs,
        confidence_threshold=confidence_threshold,
    )


@app.command()
def plan(
    query_text: Annotated[
        str, typer.Argument(metavar="QUERY", help="What to do, in natural language.")
    ],
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    model: ModelOption = None,
    request_id: RequestIdOption = None,
    max_steps: MaxStepsOption = None,
    max_repairs: MaxRepairsOption = None,
    confidence_threshold: ThresholdOption = None,
    as_json: JsonOption = False,
) -> None:
    """Plan a query with the LLM (one call, plus bounded repairs), validate and store it."""

    def body() -> Any:
        from toolplan.planning.planner import create_plan

        session = _session(store, tools, max_steps=max_steps, mcp=mcp)
        try:
            check_text(query_text, "the query", session.settings.limits)
            planner = _planner(session, model, max_repairs, confidence_threshold)
            return _run_async(create_plan(query_text, planner, request_id=request_id))
        finally:
            session.close()

    outcome = _guard(body, as_json=as_json)
    if as_json:
        _emit_json(outcome.to_json())
        return
    render.print_plan(stdout, outcome.plan, outcome.analysis)
    if outcome.plan.get("reasoning"):
        stdout.print(f"reasoning: {outcome.plan['reasoning']}", highlight=False)
    usage = outcome.usage
    stdout.print(
        f"stored [bold]{outcome.ref.plan_id}[/] (request {outcome.ref.request_id}), status "
        f"{outcome.ref.status}; {outcome.llm_calls} LLM call(s), {usage['inputTokens']} input / "
        f"{usage['outputTokens']} output tokens, {outcome.planning_ms:.0f} ms"
    )
    estimate = outcome.ref.estimate.to_json() if outcome.ref.estimate else None
    stdout.print(f"estimate: {render.estimate_text(estimate)}", highlight=False)
    if outcome.ref.status == "needs_review":
        stdout.print(
            f"[yellow]needs review:[/] low planner confidence; run it with "
            f"`toolplan execute {outcome.ref.plan_id} --yes`"
        )
    else:
        stdout.print(f"run it with: toolplan execute {outcome.ref.plan_id}")


@app.command()
def show(
    identifier: Annotated[
        str,
        typer.Argument(metavar="ID", help="A plan ID (plan_...) or request ID (req_...)."),
    ],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a plan with its latest execution, or a request with its plans."""

    def body() -> dict[str, Any]:
        session = _session(store, None)
        try:
            return operations.describe(session.store, identifier)
        finally:
            session.close()

    data = _guard(body, as_json=as_json)
    if as_json:
        _emit_json(data)
        return
    render.print_described(stdout, data)


@app.command()
def cancel(
    plan_id: Annotated[str, typer.Argument(help="The plan whose execution to cancel (plan_...).")],
    store: StoreOption = None,
    wait: Annotated[
        float,
        typer.Option(
            "--wait",
            min=0,
            help="Seconds to wait for a running execution to end (default 10; 0: do not wait).",
        ),
    ] = 10.0,
    as_json: JsonOption = False,
) -> None:
    """Cancel a plan's execution, wherever it runs.

    Works from any process that reaches the store: the plan may run here, in another
    `toolplan execute`, a worker or the API server. Running tool calls are cancelled; they and the steps not started yet are recorded as
    cancelled, finished steps are kept. Idempotent; a finished plan is left as it is. Exit
    code 0 unless the plan is unknown (2) or the store is unreachable (3).
    """

    def body() -> operations.ExecutionResult:
        session = _session(store, None)
        try:
            return _run_async(
                operations.cancel_execution(
                    plan_id,
                    session.store,
                    wait=wait,
                    lease_seconds=session.settings.execution.lease_seconds,
                )
            )
        finally:
            session.close()

    result = _guard(body, as_json=as_json)
    if as_json:
        _emit_json(result.to_json())
        return
    if result.status == "cancelled":
        cancelled = sum(1 for step in result.steps if step.status == "cancelled")
        kept = sum(1 for step in result.steps if step.status != "cancelled")
        stdout.print(
            f"plan {result.plan_id} is cancelled: {cancelled} step(s) cancelled, {kept} finished "
            f"step(s) kept; continue it with: toolplan execute {result.plan_id} --resume"
        )
    elif result.finished:
        stdout.print(
            f"plan {result.plan_id} had already finished ({result.status}); nothing was cancelled"
        )
    else:
        stdout.print(
            f"cancel of {result.plan_id} requested; it is still {result.status}: its executor "
            f"ends it as soon as it notices — see: toolplan show {result.plan_id}"
        )


cache_app = typer.Typer(
    help="The shared result cache of read-only tools (kept in the store).", no_args_is_help=True
)
app.add_typer(cache_app, name="cache")


@cache_app.command("clear")
def cache_clear(
    store: StoreOption = None,
    tool: Annotated[
        str | None, typer.Option("--tool", help="Only this tool's cached results.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Empty the result cache (every tool's, or one tool's): the next calls run the tools."""

    def body() -> int:
        session = _session(store, None)
        try:
            return session.store.cache_clear(tool)
        finally:
            session.close()

    removed = _guard(body, as_json=as_json)
    if as_json:
        _emit_json({"cleared": removed, "tool": tool})
        return
    which = f" of {tool}" if tool else ""
    stdout.print(f"cleared {removed} cached result(s){which}", highlight=False)


@app.command("tools")
def list_tools(
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="Show this tool in full instead of the list."),
    ] = None,
    tools: ToolsOption = None,
    mcp: McpOption = None,
    store: StoreOption = None,
    tag: Annotated[
        str | None,
        typer.Option("--tag", metavar="TAG", help="Only tools with this capability tag."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the tools plans can use, with their arguments, tags and observed statistics; with
    NAME, show one tool in full."""

    def body() -> list[Any]:
        session = _session(store, tools, mcp=mcp)
        try:
            return operations.list_tools(session.store, session.catalog, tag=tag, name=name)
        finally:
            session.close()

    infos = _guard(body, as_json=as_json)
    if as_json:
        _emit_json(infos[0].to_json() if name else {"tools": [info.to_json() for info in infos]})
    elif name:
        render.print_tool(stdout, infos[0])
    else:
        render.print_tools(stdout, infos)


def _register_command_modules() -> None:
    import importlib
    import pkgutil

    from toolplan import commands

    for module in pkgutil.iter_modules(commands.__path__):
        importlib.import_module(f"{commands.__name__}.{module.name}")


_register_command_modules()

_SHORT_HELP = {
    "submit": "Validate a plan file and store it; nothing runs.",
    "execute": "Run a stored plan, or resume it after a crash.",
    "run": "Plan a query (or take --file), store it and execute it.",
    "plan": "Plan a query with the LLM, validate and store it.",
    "show": "Show a plan and its execution, or a request and its plans.",
    "tools": "List the tools plans can use, or show one: toolplan tools NAME.",
    "batch": "Plan, and with --execute run, every query of a file.",
    "serve": "Serve the GraphQL API.",
    "worker": "Run queued executions until stopped.",
}
"""One line per command for ``toolplan -h``, which otherwise cuts docstrings at 80 columns."""
for _command in app.registered_commands:
    _name = _command.name or (_command.callback.__name__ if _command.callback else "")
    if _name in _SHORT_HELP and _command.short_help is None:
        _command.short_help = _SHORT_HELP[_name]


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
