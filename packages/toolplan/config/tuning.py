"""Tuning knobs: settings nobody but an operator tuning a deployment changes, set in the project
config (``toolplan.toml``, or ``[tool.toolplan]`` in ``pyproject.toml``) beside its tools and
store, and documented in one table (docs/operations.md, "Tuning").

Each knob was an environment variable once (``TOOLPLAN_`` and its key, upper-case;
``TOOLPLAN_TEMPORAL_HEARTBEAT`` for ``temporal_heartbeat``). Such a variable still works and
wins over the project config, as variables do, but it warns once (:class:`SettingMoved`), naming
the key to write instead. The variables users set are the short list in docs/operations.md,
"Configuration".
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolplan.errors import InvalidInput
from toolplan.project import TUNING_KEYS

if TYPE_CHECKING:
    from toolplan.project import ProjectConfig

__all__ = ["MOVED_VARIABLES", "SettingMoved", "Tuning", "warn_moved"]

_Positive = Annotated[float, Field(gt=0)]
_NotNegative = Annotated[float, Field(ge=0)]


class Tuning(BaseModel):
    """The tuning knobs a project config sets, checked once; ``None``: not set there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backoff: _NotNegative | None = None
    """Seconds before a failed call's second attempt (doubling after each; default 0.5)."""
    lease_seconds: _Positive | None = None
    """An execution's lease, renewed every third of it (default 30)."""
    cancel_poll: _Positive | None = None
    """Seconds between a running execution's checks for a cancel request (default 0.25)."""
    cache_ttl: _NotNegative | None = None
    """Seconds a read-only tool's result is reused; 0: never (default 300)."""
    output_limit_bytes: Annotated[int, Field(ge=1)] | None = None
    """Step outputs larger than this, as JSON, are stored truncated (default 1,000,000)."""
    graph_checkpoints: bool | None = None
    """Also run executions through the LangGraph execution graph (default false)."""
    adaptive_timeouts: bool | None = None
    """Timeouts learned from each tool's history (default true)."""
    timeout_min_observations: Annotated[int, Field(ge=1)] | None = None
    """Observed durations a tool needs before its history sets its timeout (default 20)."""
    timeout_factor: Annotated[float, Field(ge=1)] | None = None
    """A learned timeout is this many times the p99 of the history (default 3)."""
    timeout_history: Annotated[int, Field(ge=1)] | None = None
    """Latest durations per tool that are read (default 100)."""
    estimate_default_ms: _NotNegative | None = None
    """A plan estimate's duration for a tool never observed (default 1000)."""
    prices: str | None = None
    """The price table (JSON) estimates price planning calls with (default none)."""
    temporal_heartbeat: _Positive | None = None
    """Seconds without a heartbeat before a lost Temporal worker's step runs elsewhere
    (default 10)."""
    typed_schema_max_tools: Annotated[int, Field(ge=0)] | None = None
    """Catalogs with more tools are planned with the generic schema; 0: always (default 64)."""
    prompts_dir: str | None = None
    """Read prompt files from this folder instead of the shipped ones."""
    llm_retries: Annotated[int, Field(ge=0)] | None = None
    """Retries of a transient LLM error: 429, 5xx, a timeout (default 3)."""

    @model_validator(mode="after")
    def _history_holds_the_observations(self) -> Self:
        history, needed = self.timeout_history, self.timeout_min_observations
        if history is not None and needed is not None and history < needed:
            raise ValueError(
                f"timeout_history ({history}) must be at least timeout_min_observations ({needed})"
            )
        return self

    @classmethod
    def of(cls, config: ProjectConfig | None) -> Tuning:
        """The knobs ``config`` sets; :class:`~toolplan.errors.InvalidInput` naming each bad
        one, its value and the file."""
        if config is None or not config.tuning:
            return cls()
        try:
            return cls.model_validate(dict(config.tuning))
        except ValidationError as error:
            problems = "; ".join(
                (f"{error['loc'][0]}={error['input']!r}: " if error["loc"] else "")
                + error["msg"].removeprefix("Value error, ")
                for error in error.errors()
            )
            raise InvalidInput(f"in the project config {str(config.path)!r}: {problems}") from None

    def values(self, **renamed: str) -> dict[str, Any]:
        """The knobs set, as keyword values: ``renamed`` (``target="knob"``) picks and renames."""
        given = self.model_dump(exclude_none=True)
        return {target: given[knob] for target, knob in renamed.items() if knob in given}


MOVED_VARIABLES: Mapping[str, str] = {
    (
        "TOOLPLAN_TEMPORAL_HEARTBEAT" if key == "temporal_heartbeat" else f"TOOLPLAN_{key.upper()}"
    ): key
    for key in TUNING_KEYS
}
"""Each tuning knob's former environment variable, and its key in the project config."""


class SettingMoved(DeprecationWarning):
    """A tuning knob was set by its former environment variable: it still works, and says which
    project config key to write instead. The CLI prints it on a terminal."""

    def __init__(self, variable: str, value: str) -> None:
        key = MOVED_VARIABLES[variable]
        super().__init__(
            f"{variable} is a tuning knob now set in the project config: write `{key} = "
            f"{_toml(key, value)}` in toolplan.toml (or under [tool.toolplan] in pyproject.toml); "
            "the variable still works for now"
        )
        self.variable = variable
        self.key = key


def _toml(key: str, value: str) -> str:
    """``value`` as the project config writes it for ``key``: true/false, a number, or text."""
    text = value.strip()
    if key in _FLAGS:
        return "false" if text.lower() in ("0", "false", "no", "off") else "true"
    try:
        float(text)
    except ValueError:
        return f'"{text}"'
    return text


_FLAGS = frozenset({"graph_checkpoints", "adaptive_timeouts"})


def warn_moved(env: Mapping[str, str]) -> None:
    """Warn (:class:`SettingMoved`) for each tuning knob ``env`` sets by its former variable."""
    for variable in MOVED_VARIABLES:
        value = env.get(variable)
        if value is not None and value.strip():
            warnings.warn(SettingMoved(variable, value), stacklevel=3)
