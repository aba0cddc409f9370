"""A LangGraph server (Studio, ``langgraph dev``) shows toolplan's error messages to the client.

It passes on the message of a ``RuntimeError``/``ValueError`` and replaces any other exception's
with "An internal error occurred"; this test runs its own serializer on toolplan's errors."""

from __future__ import annotations

import pytest

from toolplan.config import PlannerSettings
from toolplan.errors import InvalidInput, StoreUnavailable, ToolplanError
from toolplan.planning.model import ModelNotConfigured, create_chat_model

serde = pytest.importorskip("langgraph_api.serde")


@pytest.mark.parametrize("error_type", [ToolplanError, InvalidInput, StoreUnavailable])
def test_a_langgraph_server_passes_toolplan_messages_on(error_type: type[ToolplanError]) -> None:
    shown = serde.default(error_type("what to do about it"))
    assert shown == {"error": error_type.__name__, "message": "what to do about it"}


def test_the_planner_without_a_key_says_what_to_do_through_the_server() -> None:
    with pytest.raises(ModelNotConfigured) as caught:
        create_chat_model(PlannerSettings(openai_api_key=None))
    shown = serde.default(caught.value)
    assert shown["error"] == "ModelNotConfigured"
    assert "OPENAI_API_KEY" in shown["message"] and "internal error" not in shown["message"]
