"""An existing LangChain agent with its single tools plus toolplan's ``execute_plan`` meta-tool.

    python scripts/agent_with_plan_tool.py                      # offline: a scripted fake model
    OPENAI_API_KEY=... python scripts/agent_with_plan_tool.py   # a real model (TOOLPLAN_MODEL)
    python scripts/agent_with_plan_tool.py --fake "Compare the weather in Tokyo and London"

The model may call ``get_weather`` and friends one at a time, as before, or write one plan: the
engine runs it (in parallel where it can), stores it with its IDs, and the model reads only the
outputs it asked for. Everything else is in the tool message's artifact, printed at the end.
Plans are stored in ``$TOOLPLAN_STORE`` (default ``sqlite:///./.toolplan/toolplan.db``).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from toolplan.adapters.plan_tool import plan_tool
from toolplan.builtin_tools.weather import TOOLS
from toolplan.config import Settings
from toolplan.planning.model import create_chat_model, model_spec

SYSTEM = (
    "You answer questions about the weather with the tools. When you know every call you need "
    "and how their results feed each other, send them as one plan with execute_plan, and list "
    "in outputSteps only the steps whose results you need for the answer."
)

PLAN = {
    "reasoning": "Fetch both cities in parallel, then compare them.",
    "steps": [
        {"id": "tokyo", "tool": "get_weather", "parameters": {"location": "Tokyo"}},
        {"id": "london", "tool": "get_weather", "parameters": {"location": "London"}},
        {
            "id": "comparison",
            "tool": "compare_data",
            "parameters": {"data_a": "{{tokyo}}", "data_b": "{{london}}"},
        },
    ],
    "outputSteps": ["comparison"],
}


class ScriptedModel(BaseChatModel):
    """Offline stand-in for a chat model: first a plan, then an answer built from its summary."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"Here is what the plan found:\n{last.content}")
        else:
            call = {"name": "execute_plan", "args": {"plan": PLAN}, "id": "call_plan"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def main() -> None:
    """Run the agent once and print the conversation, then the plan's artifact."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("query", nargs="?", default="Compare the weather in Tokyo and London.")
    parser.add_argument(
        "--fake", action="store_true", help="use the scripted model even with a key"
    )
    args = parser.parse_args()

    real = bool(os.environ.get("OPENAI_API_KEY")) and not args.fake
    planner = Settings.from_env().planner
    model: BaseChatModel = create_chat_model(planner) if real else ScriptedModel()
    meta = plan_tool(TOOLS)  # opt-in: without it, the agent is exactly what it was
    agent = create_agent(model, [*TOOLS, meta], system_prompt=SYSTEM)
    try:
        state = agent.invoke({"messages": [HumanMessage(args.query)]})
    finally:
        meta.close()

    print(f"model: {model_spec(None, planner) if real else 'scripted (offline)'}\n")
    for message in state["messages"]:
        label = getattr(message, "name", None) or message.type
        calls = getattr(message, "tool_calls", None)
        text = message.content or (json.dumps(calls) if calls else "")
        print(f"[{label}] {text}\n")
    llm_calls = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
    print(f"LLM calls: {llm_calls}")
    for message in state["messages"]:
        if isinstance(message, ToolMessage) and message.name == "execute_plan" and message.artifact:
            artifact = message.artifact
            print(f"\nartifact of {artifact['planId']} (request {artifact['requestId']}):")
            for step in artifact["steps"]:
                print(
                    f"  {step['id']:<12} {step['status']:<10} {step['durationMs']} ms  "
                    f"parameters={json.dumps(step['resolvedParameters'])[:70]}"
                )


if __name__ == "__main__":
    main()
