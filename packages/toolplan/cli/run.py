"""``toolplan run``: plan a query with the LLM, execute it and answer (the agent loop,
:mod:`toolplan.agent`, replanning after failures); with ``--no-answer`` or ``--file``, plan (or
read the plan) and execute it, without an answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from toolplan.cli import render
from toolplan.cli.options import (
    ApproveAllOption,
    ConcurrencyOption,
    FailFastOption,
    FileOption,
    JsonOption,
    MaxRepairsOption,
    MaxStepsOption,
    McpOption,
    ModelOption,
    NoCacheOption,
    NoInputOption,
    QueryOption,
    RequestIdOption,
    StoreOption,
    TemporalAddressOption,
    ThresholdOption,
    ToolsOption,
    YesOption,
)
from toolplan.cli.output import emit_json, finish_execution, guard, run_async, stderr, stdout
from toolplan.cli.session import (
    approval_prompt,
    new_client,
    planning_progress,
    progress,
    shown_store_uri,
)
from toolplan.errors import InvalidInput

if TYPE_CHECKING:
    from toolplan.agent.loop import AgentOutcome
    from toolplan.client import AsyncToolplan
    from toolplan.engine.result import ExecutionResult
    from toolplan.pipeline.flow import Planned

__all__ = ["run"]

QueryArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="QUERY",
        help="What to do, in natural language (needs a model; --model test plans offline).",
    ),
]


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
    approve_all: ApproveAllOption = False,
    no_input: NoInputOption = False,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--no-stream",
            help="Start read-only steps while the model still writes a Python plan "
            "($TOOLPLAN_STREAM_EXECUTION); side effects and approval-gated steps wait for the "
            "whole plan, as always.",
        ),
    ] = None,
) -> None:
    """Plan a query with the LLM, execute it and answer (replanning after failures); or run a
    plan --file."""

    def open_client() -> AsyncToolplan:
        return new_client(
            store,
            tools,
            concurrency=concurrency,
            fail_fast=fail_fast or None,
            max_steps=max_steps,
            mcp=mcp,
            no_cache=no_cache,
            temporal_address=temporal_address,
            model=model,
            approve_all=approve_all,
            stream_execution=stream,
        )

    if query_text is not None and file is None and not no_answer:
        _run_with_answer(
            query_text,
            open_client,
            request_id=request_id,
            max_replans=max_replans,
            approve=yes,
            as_json=as_json,
            no_reuse=no_reuse,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
        )
        return
    planning: dict[str, Any] = {}
    shown: list[str] = []
    ask = approval_prompt(no_input=no_input, as_json=as_json)

    def body() -> ExecutionResult:
        from toolplan.pipeline.flow import FromDocument, FromQuery

        if (file is None) == (query_text is None):
            raise InvalidInput(
                'give either a query (toolplan run "create author Alice ...") or a plan file '
                "(toolplan run --file plan.json)"
            )
        client = open_client()
        shown.append(shown_store_uri(client.store_uri))

        def show(planned: Planned) -> None:
            planning["planId"] = planned.ref.plan_id
            estimate = planned.ref.estimate.to_json() if planned.ref.estimate else None
            planning["estimate"] = estimate
            if planned.planning is not None:
                planning.update(planned.to_json())
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
                    f"stored {ref.plan_id} (request {ref.request_id}) in {client.store.uri}"
                )
            if not as_json:
                stderr.print(f"estimate: {render.estimate_text(estimate)}", highlight=False)

        try:
            if query_text is not None:
                reuse = "off" if no_reuse else client.settings.plan_reuse
                source: FromQuery | FromDocument = FromQuery(query_text, request_id, reuse)
            else:
                assert file is not None
                source = FromDocument(file, query=query, request_id=request_id)

            async def ran() -> ExecutionResult:
                outcome = await client.run(
                    source,
                    approve=yes,
                    on_planned=show,
                    on_event=progress(as_json),
                    max_repairs=max_repairs,
                    confidence_threshold=confidence_threshold,
                    on_planning=planning_progress(as_json),
                )
                assert outcome.result is not None  # review="refuse": a refused plan raised
                if ask is None:
                    return outcome.result
                return await client.ask(outcome.result, ask, on_event=progress(as_json))

            return run_async(ran())
        finally:
            client.close()

    result = guard(body, as_json=as_json, plan_id=lambda: planning.get("planId"))
    if as_json and "plan" in planning:
        emit_json(
            {
                **result.to_json(),
                "planStatus": planning["status"],
                "estimate": planning.get("estimate"),
                "plan": planning["plan"],
                "llmCalls": planning["llmCalls"],
                "usage": planning["usage"],
                "planningMs": planning["planningMs"],
                "changes": planning.get("changes", []),
                # streamed execution: the steps started while the model wrote the plan
                **{k: planning[k] for k in ("earlyStarts", "savedMs") if k in planning},
            }
        )
        raise typer.Exit(result.exit_code)
    if as_json and "reusedFrom" in planning:
        emit_json(
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
    finish_execution(result, as_json=as_json, store_uri=shown[0])


def _run_with_answer(
    query: str,
    open_client: Callable[[], AsyncToolplan],
    *,
    request_id: str | None,
    max_replans: int,
    approve: bool,
    as_json: bool,
    no_reuse: bool = False,
    max_repairs: int | None = None,
    confidence_threshold: float | None = None,
) -> None:
    """Plan, execute, answer (replanning at most ``max_replans`` times); print the answer last.
    Exits with the last plan's execution code (0 succeeded, 1 partial or failed)."""
    versions: list[str] = []
    store_uri: list[str] = []

    def show(planned: Planned) -> None:
        versions.append(planned.ref.plan_id)
        if as_json:
            return
        if len(versions) > 1:
            stderr.print(f"replanning: version {len(versions)} of request {planned.ref.request_id}")
        if planned.planning is not None:
            render.print_plan(stderr, planned.planning.plan, planned.planning.analysis)
        elif planned.reused_from is not None:
            ref = planned.ref
            stderr.print(
                f"reused {planned.reused_from} ({planned.reuse} match, 0 LLM calls) as "
                f"{ref.plan_id} (request {ref.request_id}); --no-reuse plans anew",
                highlight=False,
            )

    def body() -> AgentOutcome:
        with open_client() as client:
            store_uri.append(shown_store_uri(client.store_uri))
            return run_async(
                client.answer(
                    query,
                    request_id=request_id,
                    max_replans=max_replans,
                    approve=approve,
                    reuse="off" if no_reuse else None,
                    on_event=progress(as_json),
                    on_planned=show,
                    max_repairs=max_repairs,
                    confidence_threshold=confidence_threshold,
                    on_planning=planning_progress(as_json),
                )
            )

    outcome = guard(body, as_json=as_json)
    if as_json:
        emit_json(outcome.to_json())
        raise typer.Exit(outcome.exit_code)
    render.print_execution(stdout, outcome.result)
    for number, version in enumerate(outcome.plans, 1):
        replaces = f" (replan of {version['replanOf']})" if version.get("replanOf") else ""
        if version.get("reusedFrom"):
            replaces = f" (reused from {version['reusedFrom']}, 0 planning calls)"
        stdout.print(
            f"plan version {number}: {version['planId']} {version['status']}{replaces}",
            highlight=False,
        )
    usage = outcome.usage
    stdout.print(
        f"{outcome.llm_calls} LLM call(s), {usage['inputTokens']} input / "
        f"{usage['outputTokens']} output tokens; stored in {store_uri[0]}"
        f" — inspect with: toolplan show {outcome.request_id}",
        highlight=False,
    )
    if outcome.result.status == "waiting":
        for line in render.waiting_lines(outcome.result):
            stdout.print(line, highlight=False, markup=False)
    else:
        stdout.print(f"\n[bold]answer:[/] {escape(outcome.answer)}")
    raise typer.Exit(outcome.exit_code)
