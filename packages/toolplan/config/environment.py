"""Environment variables, read with pydantic-settings into typed models.

Each settings class has a model of the variables it reads, a subclass of :class:`Variables` beside
it: a field ``max_depth`` reads ``TOOLPLAN_MAX_DEPTH`` (the model's ``env_prefix`` and the field
name, upper-case), or the variable its ``validation_alias`` names. The variables come from
``os.environ`` or from any mapping given (a test's, a process's recorded environment); values are
stripped and a blank one counts as unset. A value that does not parse is
:class:`~toolplan.errors.InvalidInput` naming the variable and the value, never a pydantic
``ValidationError``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Self, cast

from pydantic import ValidationError
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.sources.utils import parse_env_vars

from toolplan._caches import register_cache
from toolplan.errors import InvalidInput

__all__ = ["Variables"]


class _GivenEnvironment(EnvSettingsSource):
    """pydantic-settings' environment source (names, prefixes, aliases, blank values) over a
    given mapping instead of ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._env = env
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # The one method the source reads its variables through (its .env subclass replaces it
        # too). Only upper-case names: toolplan's variables are named exactly as documented,
        # where pydantic-settings would also take ``toolplan_store`` for ``TOOLPLAN_STORE``.
        named = {
            key: value.strip() if isinstance(value, str) else value
            for key, value in self._env.items()
            if key.isupper()
        }
        return parse_env_vars(
            named, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str
        )


class Variables(BaseSettings):
    """The variables one settings class reads; every field is optional, ``None`` when unset, so
    the settings class keeps its own defaults (:meth:`given`)."""

    model_config = SettingsConfigDict(
        env_prefix="TOOLPLAN_", env_ignore_empty=True, extra="ignore", frozen=True
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only what read() passes: a given mapping is the whole environment (os.environ must not
        # fill in behind it), and toolplan reads no .env file nor secrets folder.
        return (init_settings,)

    @classmethod
    def read(
        cls, env: Mapping[str, str] | None = None, *, fallback: Mapping[str, Any] | None = None
    ) -> Self:
        """The variables in ``env`` (default ``os.environ``), over ``fallback`` (field values of
        a source they win over, such as the project config)."""
        env = os.environ if env is None else env
        return cast(Self, _read(cls, frozenset(env.items()), frozenset((fallback or {}).items())))

    def given(self, **renamed: str) -> dict[str, Any]:
        """The fields that were set, by name: keyword arguments for the settings class, whose
        own defaults stand for the rest. With ``renamed`` (``target_name="field"``), only those
        fields, under the target's names."""
        values = self.model_dump(exclude_unset=True)
        if not renamed:
            return values
        return {target: values[field] for target, field in renamed.items() if field in values}

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable ``field`` is read from."""
        alias = cls.model_fields[field].validation_alias
        if isinstance(alias, str):
            return alias
        return f"{cls.model_config.get('env_prefix', '')}{field}".upper()

    @classmethod
    def _problem(cls, error: ErrorDetails) -> str:
        key = str(error["loc"][0]) if error["loc"] else ""
        name = cls.variable(key) if key in cls.model_fields else key
        return f"{name}={error['input']!r}{_why(error)}"


@lru_cache(maxsize=64)
def _read(
    cls: type[Variables], env: frozenset[tuple[str, str]], fallback: frozenset[tuple[str, Any]]
) -> Variables:
    # Cached by what is read: pydantic-settings works out every field's variable names again on
    # each read (about 2 ms for all of Settings' variables), while commands, graph contexts and
    # plan loading read the same environment over and over. The models are frozen.
    given = _GivenEnvironment(cls, dict(env))()
    try:
        return cls(**{**dict(fallback), **given})
    except ValidationError as error:
        raise InvalidInput("; ".join(cls._problem(e) for e in error.errors())) from None


register_cache(_read.cache_clear)


def _why(error: ErrorDetails) -> str:
    """What is wrong with a value, in the words toolplan's other messages use."""
    kind, limits = error["type"], error.get("ctx") or {}
    if kind == "int_parsing":
        return " is not a whole number"
    if kind == "float_parsing":
        return " is not a number"
    if kind == "bool_parsing":
        return " is not a yes/no value; use 1 or 0"
    if kind == "literal_error":
        choices = str(limits["expected"]).replace("'", "")  # 'a' or 'b' -> a or b
        return f"; use {choices}"
    if kind == "greater_than_equal":
        return " must not be negative" if limits["ge"] == 0 else f" must be at least {limits['ge']}"
    return f": {error['msg']}"
