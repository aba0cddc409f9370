"""LangGraph entry module for the ``agent`` graph (see langgraph.json): planner → executor →
respond, with an edge back to the planner when the model asks for a new plan.

Input: ``{"query": "..."}`` (optionally ``"request_id"``, ``"max_replans"``). Output state includes
``answer``, ``plans`` (every version), ``llm_calls`` and ``usage``. Compiled without a
checkpointer: ``langgraph dev`` and LangGraph Platform bring their own. Model, tools and store
come from the environment, as for the ``planner`` graph.
"""

from toolplan.adapters.studio import agent_graph

graph = agent_graph()
