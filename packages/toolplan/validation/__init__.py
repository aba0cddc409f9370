"""Validation every entry point runs on a plan before anything runs: every problem at once, and
the dependency DAG (:func:`analyze`). The checks only a planner's plan gets are in
:mod:`toolplan.planning`."""

from toolplan.validation.dag import (
    DEFAULT_MAX_STEPS,
    Analysis,
    analyze,
    check_arguments,
    check_tools,
    ordered_for,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "Analysis",
    "analyze",
    "check_arguments",
    "check_tools",
    "ordered_for",
]
