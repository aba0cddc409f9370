"""The LLM planning graph: tool selection, dependency analysis, repair loop, persistence."""
