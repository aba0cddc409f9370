"""The agent loop: plan, execute, respond (answer or replan), as the ``agent`` LangGraph graph."""
