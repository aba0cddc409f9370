"""Thin layers over one :class:`~toolplan.client.Toolplan` client each: the module-level
functions of :mod:`toolplan` (:mod:`~toolplan.adapters.functions`), the ``execute_plan``
meta-tool (:mod:`~toolplan.adapters.plan_tool`), lease-queue workers
(:mod:`~toolplan.adapters.queue_worker`) and LangGraph Studio's graphs
(:mod:`~toolplan.adapters.studio`). The CLI and the GraphQL API are the two larger ones, in
packages of their own."""
