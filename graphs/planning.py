"""LangGraph entry module for the ``planner`` graph (see langgraph.json).

Input: ``{"query": "..."}`` (optionally ``"request_id"``). Output state includes ``request_id``,
``plan_id``, ``plan`` and ``errors``. Compiled without a checkpointer: ``langgraph dev`` and
LangGraph Platform bring their own. Model, tools and store come from ``TOOLPLAN_MODEL``,
``OPENAI_API_KEY``/``OPENAI_BASE_URL``, ``TOOLPLAN_TOOLS`` and ``TOOLPLAN_STORE``.
"""

from toolplan.adapters.studio import planner_graph

graph = planner_graph()
