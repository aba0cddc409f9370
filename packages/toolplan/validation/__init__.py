"""Validation of a plan before anything runs, the same for every entry point: one pass, every
problem at once, and the dependency DAG (:mod:`~toolplan.validation.dag`), control flow
(:mod:`~toolplan.validation.control_flow`), template types against tool schemas
(:mod:`~toolplan.validation.types`), conditions on text (:mod:`~toolplan.validation.conditions`)
and the edges between steps (:mod:`~toolplan.validation.edges`). Checks that only a planner's plan
gets (grounding, unasked steps) live in :mod:`toolplan.planning`."""

from toolplan.validation.dag import (
    DEFAULT_MAX_STEPS,
    Analysis,
    analyze,
    check_arguments,
    check_tools,
)

__all__ = ["DEFAULT_MAX_STEPS", "Analysis", "analyze", "check_arguments", "check_tools"]
