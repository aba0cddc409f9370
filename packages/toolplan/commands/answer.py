"""``toolplan run "QUERY"`` with an answer: the agent loop (:mod:`toolplan.agent`) behind the
``run`` command (``--no-answer`` and ``--file`` keep the plain plan-then-execute path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from toolplan import render
from toolplan.cli import Session, _emit_json, _guard, _run_async, _store_uri, stderr, stdout
from toolplan.limits import check_text

if TYPE_CHECKING:
    from toolplan.agent.loop import AgentOutcome
    from toolplan.pipeline import Planned

__all__ = ["run_with_answer"]


def run_with_answer(
    query: str,
    open_session: Callable[[], Session],
    *,
    planner: Callable[[Session], Any],
    request_id: str | None,
    max_replans: int,
    approve: bool,
    as_json: bool,
    no_reuse: bool = False,
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
        from toolplan.agent.graph import AgentContext
        from toolplan.agent.loop import run_agent

        session = open_session()
        store_uri.append(_store_uri(session.settings.store_uri))
        try:
            check_text(query, "the query", session.settings.limits)  # before any model setup
            ctx = AgentContext(
                planner(session),
                session.context(as_json=as_json),
                approve=approve,
                reuse="off" if no_reuse else session.settings.plan_reuse,
                on_planned=show,
            )
            return _run_async(run_agent(query, ctx, request_id=request_id, max_replans=max_replans))
        finally:
            session.close()

    outcome = _guard(body, as_json=as_json)
    if as_json:
        _emit_json(outcome.to_json())
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
    stdout.print(f"\n[bold]answer:[/] {escape(outcome.answer)}")
    raise typer.Exit(outcome.exit_code)
