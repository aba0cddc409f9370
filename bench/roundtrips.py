"""Measure 3: LLM round-trips, tokens and wall time, toolplan against a ReAct agent.

Both get the same tools (the built-in blog, metrics and weather toolsets plus four web/text tools,
each wrapped with the same simulated latency) and the same scripted model: a fixed latency per
call, replies that are the ideal decisions, and token counts taken from what each call receives.

- **toolplan**: the real agent loop (``run_agent``: the planning graph's one structured-output
  call, validation and persistence; the real engine on SQLite; the respond node's structured call,
  which sees the query and the plan's outputs and answers).
- **ReAct**: LangChain's ``create_agent``. "Ideal" is judged two ways: *parallel*, all tool calls
  whose inputs are known in one turn (what an OpenAI model with parallel tool calls does at
  best); *sequential*, one tool call per turn (the ReAct of the LLMCompiler paper).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from bench.scenarios import SCENARIOS, Scenario, bench_catalog, bench_tools
from bench.scripted import Policy, ScriptedChatModel
from bench.stats import median
from bench.tokens import encoding
from toolplan.agent.graph import AgentContext
from toolplan.agent.loop import run_agent
from toolplan.plan_format.templates import resolve
from toolplan.planning.graph import PlannerContext
from toolplan.runs.runner import ExecutionContext
from toolplan.store.protocol import Store
from toolplan.store.sqlite import SqliteStore

__all__ = ["AGENTS", "REACT_PROMPT", "run_round_trips", "run_scenario"]

REACT_PROMPT = (
    "You are a helpful assistant. Use the tools to do what the user asks. When several tool "
    "calls do not depend on each other, make them in the same turn. When everything is done, "
    "answer briefly."
)
AGENTS = ("toolplan", "react_parallel", "react_sequential")
COST_OUTPUT_WEIGHT = 4
"""Cost = input + 4 x output tokens (gpt-4o-mini's list-price ratio), for the cost comparison."""


def _llm_plan(scenario: Scenario) -> dict[str, Any]:
    return {
        "reasoning": scenario.reasoning,
        "steps": [
            {
                "id": step["id"],
                "tool": step["tool"],
                "parameters": json.dumps(step["parameters"], ensure_ascii=False),
                "dependsOn": [],
                "confidence": 0.9,
            }
            for step in scenario.steps
        ],
        "outputSteps": scenario.output_steps,
    }


def planner_policy(scenario: Scenario) -> Policy:
    """The ideal planner: the whole plan in one structured call; then the final answer, through
    the respond node's structured call."""

    def policy(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        names = {t.get("function", {}).get("name") for t in tools}
        if "LLMPlan" in names:
            return AIMessage(
                content="",
                tool_calls=[{"name": "LLMPlan", "args": _llm_plan(scenario), "id": "call_plan"}],
            )
        if "Respond" in names:
            answer = {"action": "answer", "answer": scenario.answer}
            return AIMessage(
                content="", tool_calls=[{"name": "Respond", "args": answer, "id": "call_answer"}]
            )
        return AIMessage(content=scenario.answer)

    return policy


def _tool_output(content: Any) -> Any:
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content


def react_policy(scenario: Scenario, *, parallel: bool) -> Policy:
    """The ideal ReAct model: each turn, the next ready tool call(s), arguments filled in from
    the tool results in the conversation; the final answer once every step has a result."""
    order = [step["id"] for step in scenario.steps]
    by_id = {step["id"]: step for step in scenario.steps}
    deps = scenario.dependencies

    def policy(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        called: set[str] = set()
        outputs: dict[str, Any] = {}
        for message in messages:
            if isinstance(message, AIMessage):
                called.update(str(call["id"]).removeprefix("call_") for call in message.tool_calls)
            elif isinstance(message, ToolMessage):
                outputs[message.tool_call_id.removeprefix("call_")] = _tool_output(message.content)
        ready = [s for s in order if s not in called and all(d in outputs for d in deps[s])]
        if not ready:
            return AIMessage(content=scenario.answer)
        batch = ready if parallel else ready[:1]
        return AIMessage(
            content="",
            tool_calls=[
                {
                    "name": by_id[s]["tool"],
                    "args": resolve(by_id[s]["parameters"], outputs),
                    "id": f"call_{s}",
                }
                for s in batch
            ],
        )

    return policy


def _totals(model: ScriptedChatModel, calls: slice = slice(None)) -> dict[str, int]:
    chosen = model.calls[calls]
    return {
        "llm_calls": len(chosen),
        "input_tokens": sum(c.input_tokens for c in chosen),
        "output_tokens": sum(c.output_tokens for c in chosen),
    }


async def _run_toolplan(
    scenario: Scenario, llm_latency: float, tool_delay: float, store: Store
) -> dict[str, Any]:
    model = ScriptedChatModel(policy=planner_policy(scenario), latency=llm_latency)
    catalog = bench_catalog(tool_delay)
    # the scripted model answers JSON plans (its ideal decision as a tool call)
    planner = PlannerContext(
        store=store, catalog=catalog, model=model, model_name="scripted:ideal", plan_format="json"
    )
    marks: dict[str, float] = {}

    def planned(_: Any) -> None:
        marks["planned"] = time.perf_counter()

    def step_event(_: Any) -> None:
        marks["executed"] = time.perf_counter()  # the last one: the last step finished

    execution = ExecutionContext(store=store, catalog=catalog, listener=step_event)
    started = time.perf_counter()
    outcome = await run_agent(
        scenario.query, AgentContext(planner, execution, on_planned=planned), max_replans=0
    )
    finished = time.perf_counter()
    if outcome.result.status != "succeeded" or outcome.answer != scenario.answer:
        raise RuntimeError(
            f"{scenario.key}: toolplan ended {outcome.result.status}: {outcome.to_json()}"
        )
    planning_calls = outcome.plans[0]["llmCalls"]
    plan_only = _totals(model, slice(0, planning_calls))
    if _totals(model)["input_tokens"] != outcome.usage["inputTokens"]:
        raise RuntimeError("the agent's recorded usage differs from the model's own count")
    return {
        **_totals(model),
        "wall_s": round(finished - started, 3),
        "planning_llm_calls": planning_calls,
        "planning": {**plan_only, "wall_s": round(marks["planned"] - started, 3)},
        "execution_s": round(marks["executed"] - marks["planned"], 3),
        "without_answer": {**plan_only, "wall_s": round(marks["executed"] - started, 3)},
    }


async def _run_react(
    scenario: Scenario, llm_latency: float, tool_delay: float, *, parallel: bool
) -> dict[str, Any]:
    model = ScriptedChatModel(policy=react_policy(scenario, parallel=parallel), latency=llm_latency)
    agent = create_agent(model, tools=bench_tools(tool_delay), system_prompt=REACT_PROMPT)
    started = time.perf_counter()
    state = await agent.ainvoke(
        {"messages": [HumanMessage(scenario.query)]}, {"recursion_limit": 100}
    )
    wall = time.perf_counter() - started
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    failed = [m.content for m in results if m.status == "error"]
    if failed or len(results) != len(scenario.steps):
        raise RuntimeError(f"{scenario.key}: ReAct ran {len(results)} tools, errors: {failed}")
    return {**_totals(model), "wall_s": round(wall, 3)}


async def run_scenario(
    scenario: Scenario, *, llm_latency: float, tool_delay: float, store: Store
) -> dict[str, Any]:
    """Every agent on one scenario, with ratios toolplan / ReAct."""
    row: dict[str, Any] = {
        "title": scenario.title,
        "steps": len(scenario.steps),
        "depth": scenario.depth,
        "toolplan": await _run_toolplan(scenario, llm_latency, tool_delay, store),
        "react_parallel": await _run_react(scenario, llm_latency, tool_delay, parallel=True),
        "react_sequential": await _run_react(scenario, llm_latency, tool_delay, parallel=False),
    }
    ours = row["toolplan"]
    for baseline in ("react_parallel", "react_sequential"):
        theirs = row[baseline]
        row[f"vs_{baseline}"] = {
            "wall_without_answer": round(ours["without_answer"]["wall_s"] / theirs["wall_s"], 3),
            "llm_calls": round(ours["llm_calls"] / theirs["llm_calls"], 3),
            "input_tokens": round(ours["input_tokens"] / theirs["input_tokens"], 3),
            "cost": round(_cost(ours) / _cost(theirs), 3),
            "wall": round(ours["wall_s"] / theirs["wall_s"], 3),
            "speedup": round(theirs["wall_s"] / ours["wall_s"], 2),
            "cost_saving": round(_cost(theirs) / _cost(ours), 2),
        }
    return row


def _cost(totals: dict[str, Any]) -> float:
    return float(totals["input_tokens"] + COST_OUTPUT_WEIGHT * totals["output_tokens"])


async def run_round_trips(
    *,
    llm_latency: float = 0.8,
    tool_delay: float = 0.2,
    scenarios: Sequence[Scenario] = SCENARIOS,
    warmup: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """All scenarios; goals are judged against both ReAct variants."""
    started = time.perf_counter()
    rows: dict[str, Any] = {}
    encoding()  # load the BPE file before anything is timed
    with tempfile.TemporaryDirectory(prefix="toolplan-bench-rt-") as directory:
        store = SqliteStore(Path(directory) / "round-trips.db")
        try:
            # Warm-up, discarded: first imports, checkpoint tables, tool schemas.
            if warmup:
                await run_scenario(scenarios[0], llm_latency=0.0, tool_delay=0.0, store=store)
            for scenario in scenarios:
                rows[scenario.key] = await run_scenario(
                    scenario, llm_latency=llm_latency, tool_delay=tool_delay, store=store
                )
                if log:
                    vs = rows[scenario.key]["vs_react_parallel"]
                    log(
                        f"  round trips: {scenario.key}: wall {vs['wall']}x, input tokens "
                        f"{vs['input_tokens']}x of ReAct (parallel calls)"
                    )
        finally:
            store.close()
    chains = [k for k, r in rows.items() if r["depth"] >= 3]
    goals: dict[str, Any] = {
        "planning_is_one_llm_call": all(
            r["toolplan"]["planning_llm_calls"] == 1 for r in rows.values()
        ),
        "answer_is_two_llm_calls": all(r["toolplan"]["llm_calls"] == 2 for r in rows.values()),
        "react_parallel_is_depth_plus_one": all(
            r["react_parallel"]["llm_calls"] == r["depth"] + 1 for r in rows.values()
        ),
    }
    for baseline in ("react_parallel", "react_sequential"):
        goals[f"input_tokens_le_0.5_on_chains_vs_{baseline}"] = all(
            rows[k][f"vs_{baseline}"]["input_tokens"] <= 0.5 for k in chains
        )
        goals[f"wall_le_0.5_vs_{baseline}"] = {
            k: r[f"vs_{baseline}"]["wall"] <= 0.5 for k, r in rows.items()
        }
        goals[f"wall_without_answer_le_0.5_vs_{baseline}"] = {
            k: r[f"vs_{baseline}"]["wall_without_answer"] <= 0.5 for k, r in rows.items()
        }
    summary = {
        baseline: {
            metric: round(median([r[f"vs_{baseline}"][metric] for r in rows.values()]), 3)
            for metric in (
                "llm_calls",
                "input_tokens",
                "cost",
                "wall",
                "speedup",
                "cost_saving",
                "wall_without_answer",
            )
        }
        for baseline in ("react_parallel", "react_sequential")
    }
    return {
        "llm_latency_s": llm_latency,
        "tool_latency_s": tool_delay,
        "encoding": "o200k_base",
        "cost_formula": f"input + {COST_OUTPUT_WEIGHT} x output tokens",
        "scenarios": rows,
        "chains_depth_ge_3": chains,
        "median_ratio": summary,
        "llmcompiler_published": {"max_speedup": 3.7, "max_cost_saving": 6.7},
        "goals": goals,
        "seconds": round(time.perf_counter() - started, 1),
    }
