"""Static analysis of a plan before anything runs: validation and the dependency DAG
(:mod:`~toolplan.analysis.dag`), template types against tool schemas
(:mod:`~toolplan.analysis.types`), literals made up where a tool's output belongs
(:mod:`~toolplan.analysis.grounding`) and IDs written where a name was given
(:mod:`~toolplan.analysis.id_by_name`), time and cost estimates
(:mod:`~toolplan.analysis.estimates`), and the keys under which a stored plan is reused
(:mod:`~toolplan.analysis.reuse`)."""

from toolplan.analysis.dag import (
    DEFAULT_MAX_STEPS,
    Analysis,
    analyze,
    check_arguments,
    check_tools,
)

__all__ = ["DEFAULT_MAX_STEPS", "Analysis", "analyze", "check_arguments", "check_tools"]
