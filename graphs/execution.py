"""LangGraph entry module for the ``executor`` graph (see langgraph.json).

Input: ``{"plan_id": "plan_..."}``. Compiled without a checkpointer: ``langgraph dev`` and
LangGraph Platform bring their own. Tools and the store come from ``TOOLPLAN_TOOLS`` and
``TOOLPLAN_STORE``.
"""

from toolplan.adapters.studio import executor_graph

graph = executor_graph()
