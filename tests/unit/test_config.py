"""Configuration lives in one place: every variable the README and the documentation site
(docs/) document is read by Settings
(or by the one settings object of the layer it configures), and process-wide caches are keyed by
what they depend on and can be emptied."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

import pytest

from toolplan.cli.options import MaxRepairsOption
from toolplan.config import (
    DEFAULT_MODEL,
    DEFAULT_TOOL_MODULES,
    Settings,
    clear_caches,
    limits_from_env,
)
from toolplan.config.tuning import MOVED_VARIABLES, SettingMoved, Tuning
from toolplan.errors import InvalidInput
from toolplan.plan_format.limits import InputLimits
from toolplan.project import TUNING_KEYS

ROOT = Path(__file__).parents[2]
DOCUMENTED = "\n".join(
    path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
)
"""The README and every page of the documentation site, where the variables are documented."""

SAMPLES: dict[str, tuple[str, Callable[[Settings], Any], Any]] = {
    "TOOLPLAN_STORE": ("sqlite:///x.db", lambda s: s.store_uri, "sqlite:///x.db"),
    "TOOLPLAN_TOOLS": ("blog, weather", lambda s: s.tool_modules, ("blog", "weather")),
    "TOOLPLAN_CONCURRENCY": ("3", lambda s: s.execution.concurrency, 3),
    "TOOLPLAN_MAX_STEPS": ("7", lambda s: s.max_steps, 7),
    "TOOLPLAN_MAX_ITEMS": ("9", lambda s: s.execution.max_items, 9),
    "TOOLPLAN_TIMEOUT": ("2.5", lambda s: s.execution.default_timeout, 2.5),
    "TOOLPLAN_MCP": ("servers.json", lambda s: s.mcp_config, "servers.json"),
    "TOOLPLAN_MODEL": ("openai:gpt-4o", lambda s: s.planner.model, "openai:gpt-4o"),
    "TOOLPLAN_MAX_REPAIRS": ("4", lambda s: s.planner.max_repairs, 4),
    "TOOLPLAN_CONFIDENCE_THRESHOLD": ("0.7", lambda s: s.planner.confidence_threshold, 0.7),
    "TOOLPLAN_STREAM_EXECUTION": ("1", lambda s: s.planner.stream_execution, True),
    "TOOLPLAN_PLAN_FORMAT": ("json", lambda s: s.planner.plan_format, "json"),
    "TOOLPLAN_STRUCTURED_METHOD": (
        "json_schema",
        lambda s: s.planner.structured_method,
        "json_schema",
    ),
    "TOOLPLAN_LLM_TIMEOUT": ("12.5", lambda s: s.planner.llm_timeout, 12.5),
    "TOOLPLAN_PLANNING_DEADLINE": ("90", lambda s: s.planner.planning_deadline_seconds, 90.0),
    "OPENAI_API_KEY": ("sk-x", lambda s: s.planner.openai_api_key, "sk-x"),
    "OPENAI_BASE_URL": ("http://h/v1", lambda s: s.planner.openai_base_url, "http://h/v1"),
    "TOOLPLAN_MAX_PLAN_BYTES": ("2000", lambda s: s.limits.max_plan_bytes, 2000),
    "TOOLPLAN_MAX_STRING_CHARS": ("300", lambda s: s.limits.max_string_chars, 300),
    "TOOLPLAN_MAX_DEPTH": ("8", lambda s: s.limits.max_depth, 8),
    "TOOLPLAN_MAX_NUMBER_DIGITS": ("20", lambda s: s.limits.max_number_digits, 20),
    "TOOLPLAN_LLM_MAX_TOKENS": ("900", lambda s: s.planner.llm_max_tokens, 900),
    "TOOLPLAN_PLANNER_REWRITES": ("none", lambda s: s.planner.rewrites, "none"),
    "TOOLPLAN_TEMPORAL_ADDRESS": ("h:7233", lambda s: s.temporal.address, "h:7233"),
    "TOOLPLAN_TEMPORAL_NAMESPACE": ("ns", lambda s: s.temporal.namespace, "ns"),
    "TOOLPLAN_TEMPORAL_TASK_QUEUE": ("q", lambda s: s.temporal.task_queue, "q"),
    "TOOLPLAN_PLAN_REUSE": ("parametric", lambda s: s.plan_reuse, "parametric"),
    "TOOLPLAN_STORE_BUSY_TIMEOUT": ("2.5", lambda s: s.store_options.busy_timeout, 2.5),
    "TOOLPLAN_MONGO_TIMEOUT_MS": ("700", lambda s: s.store_options.mongo_timeout_ms, 700),
}
"""Every variable users set, which Settings reads: a valid value and where it lands."""

TUNED: dict[str, tuple[Any, Callable[[Settings], Any], Any]] = {
    "backoff": (0.1, lambda s: s.execution.retry.initial_backoff, 0.1),
    "lease_seconds": (9, lambda s: s.execution.lease_seconds, 9),
    "cancel_poll": (0.5, lambda s: s.execution.cancel_poll, 0.5),
    "cache_ttl": (60, lambda s: s.execution.cache_ttl, 60),
    "output_limit_bytes": (1234, lambda s: s.execution.output_limit_bytes, 1234),
    "graph_checkpoints": (True, lambda s: s.execution.graph_checkpoints, True),
    "adaptive_timeouts": (False, lambda s: s.execution.timeouts.enabled, False),
    "timeout_min_observations": (5, lambda s: s.execution.timeouts.min_observations, 5),
    "timeout_factor": (2, lambda s: s.execution.timeouts.factor, 2),
    "timeout_history": (50, lambda s: s.execution.timeouts.history, 50),
    "estimate_default_ms": (250, lambda s: s.estimates.default_ms, 250),
    "prices": ("prices.json", lambda s: Path(s.estimates.prices_file or "").name, "prices.json"),
    "temporal_heartbeat": (2, lambda s: s.temporal.heartbeat_seconds, 2),
    "typed_schema_max_tools": (0, lambda s: s.planner.typed_schema_max_tools, 0),
    "prompts_dir": ("my_prompts", lambda s: Path(s.planner.prompts_dir or "").name, "my_prompts"),
    "llm_retries": (0, lambda s: s.planner.llm_retries, 0),
}
"""Every tuning knob of the project config: a valid value and where it lands."""

OTHER_HOMES = {
    "TOOLPLAN_API_TOKEN": "toolplan.api.settings.ApiSettings (the server's own settings)",
    "TOOLPLAN_TEMPORAL_HEARTBEAT": "the former variable of the tuning knob temporal_heartbeat",
    "TOOLPLAN_TEST_MONGODB_URI": "tests only",
    "TOOLPLAN_FUZZ_SEED": "tests only (replays a fuzz run)",
    "TOOLPLAN_DEBUG": "toolplan.cli.output (prints an internal error's traceback)",
    "TOOLPLAN_TEST_LLM_BASE_URL": "tests only (the real_llm tests)",
    "TOOLPLAN_ERROR": "not a variable: an API error code (the GraphQL page's table)",
}


def test_settings_read_every_documented_environment_variable() -> None:
    documented = set(re.findall(r"\b(?:TOOLPLAN|OPENAI)_[A-Z_]*[A-Z]", DOCUMENTED))
    assert documented == set(SAMPLES) | set(OTHER_HOMES)
    settings = Settings.from_env({name: value for name, (value, _, _) in SAMPLES.items()})
    for name, (_, read, expected) in SAMPLES.items():
        assert read(settings) == expected, name
        assert read(Settings.from_env({})) != expected, f"{name}'s sample is its default"
    assert "sk-x" not in repr(settings)  # the key is never printed

    with pytest.raises(InvalidInput, match="TOOLPLAN_CONCURRENCY='many'"):
        Settings.from_env({"TOOLPLAN_CONCURRENCY": "many"})
    with pytest.raises(InvalidInput, match="concurrency must be at least 1"):
        Settings.from_env({"TOOLPLAN_CONCURRENCY": "0"})
    with pytest.raises(InvalidInput, match="TOOLPLAN_MAX_REPAIRS='x'"):
        Settings.from_env({"TOOLPLAN_MAX_REPAIRS": "x"})
    with pytest.raises(InvalidInput, match="TOOLPLAN_STREAM_EXECUTION='maybe'"):
        Settings.from_env({"TOOLPLAN_STREAM_EXECUTION": "maybe"})
    with pytest.raises(InvalidInput, match="TOOLPLAN_LLM_MAX_TOKENS=0 must be at least 1"):
        Settings.from_env({"TOOLPLAN_LLM_MAX_TOKENS": "0"})
    with pytest.raises(InvalidInput, match="TOOLPLAN_PLAN_FORMAT='yaml'; use json or python"):
        Settings.from_env({"TOOLPLAN_PLAN_FORMAT": "yaml"})
    with pytest.raises(InvalidInput, match="use function_calling or json_schema"):
        Settings.from_env({"TOOLPLAN_STRUCTURED_METHOD": "xml"})
    with pytest.raises(InvalidInput, match="TOOLPLAN_PLAN_REUSE must be off, exact or parametric"):
        Settings.from_env({"TOOLPLAN_PLAN_REUSE": "always"})
    with pytest.raises(InvalidInput, match="TOOLPLAN_PLANNER_REWRITES='some'"):
        Settings.from_env({"TOOLPLAN_PLANNER_REWRITES": "some"})


PARSED = sorted(
    name for name, (_, _, expected) in SAMPLES.items() if isinstance(expected, (bool, int, float))
)
"""The variables whose values are numbers or yes/no flags."""


@pytest.mark.parametrize("name", PARSED)
def test_a_value_that_does_not_parse_names_its_variable(name: str) -> None:
    with pytest.raises(InvalidInput, match=f"^{name}='junk' is not a ") as caught:
        Settings.from_env({name: "junk"})
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no pydantic


def _refused(read: Callable[[dict[str, str]], object], env: dict[str, str]) -> str:
    with pytest.raises(InvalidInput) as caught:
        read(env)
    return str(caught.value)


def test_every_bad_value_of_a_settings_class_is_named_at_once() -> None:
    bad = {"TOOLPLAN_CONCURRENCY": "many", "TOOLPLAN_TIMEOUT": "long"}
    assert _refused(Settings.from_env, bad) == (
        "TOOLPLAN_CONCURRENCY='many' is not a whole number; TOOLPLAN_TIMEOUT='long' is not a number"
    )
    assert _refused(Settings.from_env, {"TOOLPLAN_STORE_BUSY_TIMEOUT": "-1"}) == (
        "TOOLPLAN_STORE_BUSY_TIMEOUT='-1' must not be negative"
    )
    assert _refused(limits_from_env, {"TOOLPLAN_MAX_DEPTH": "0"}) == (
        "TOOLPLAN_MAX_DEPTH='0' must be at least 1"
    )
    assert _refused(Settings.from_env, {"TOOLPLAN_STRUCTURED_METHOD": "xml"}) == (
        "TOOLPLAN_STRUCTURED_METHOD='xml'; use function_calling or json_schema"
    )


def test_variables_are_read_by_their_exact_names_stripped_and_blank_is_unset() -> None:
    assert Settings.from_env({}) == Settings()  # no variable: every class's own defaults
    assert Settings.from_env({"toolplan_concurrency": "3", "Toolplan_Model": "x:y"}) == Settings()
    stripped = Settings.from_env(
        {
            "TOOLPLAN_CONCURRENCY": " 3 ",
            "TOOLPLAN_STREAM_EXECUTION": " on ",
            "TOOLPLAN_MODEL": " ",
        }
    )
    assert stripped.execution.concurrency == 3 and stripped.planner.stream_execution
    assert stripped.planner.model == DEFAULT_MODEL
    assert Settings.from_env({"TOOLPLAN_PLAN_REUSE": " Parametric "}).plan_reuse == "parametric"
    assert Settings.from_env({"TOOLPLAN_MAX_PLAN_BYTES": "2_000"}).limits.max_plan_bytes == 2000


def test_a_given_mapping_is_the_whole_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPLAN_MODEL", "openai:from-os")
    monkeypatch.setenv("TOOLPLAN_MAX_DEPTH", "7")
    assert Settings.from_env({}).planner.model == DEFAULT_MODEL
    assert Settings.from_env({}).limits.max_depth == InputLimits().max_depth
    from_os = Settings.from_env(project=False)
    assert (from_os.planner.model, from_os.limits.max_depth) == ("openai:from-os", 7)


def test_the_environment_wins_over_the_project_config_over_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "toolplan.toml").write_text(
        'tools = ["blog"]\nmcp = "m.json"\nstore = "sqlite:///p.db"\n'
    )
    monkeypatch.chdir(tmp_path)

    def chosen(env: dict[str, str]) -> tuple[object, ...]:
        settings = Settings.from_env(env, project=True)
        return settings.tool_modules, settings.mcp_config, settings.store_uri

    project = (("blog",), str(tmp_path / "m.json"), f"sqlite:///{tmp_path / 'p.db'}")
    assert chosen({}) == project
    env = {
        "TOOLPLAN_TOOLS": "weather",
        "TOOLPLAN_MCP": "e.json",
        "TOOLPLAN_STORE": "sqlite:///e.db",
    }
    assert chosen(env) == (("weather",), "e.json", "sqlite:///e.db")
    assert chosen(dict.fromkeys(env, "")) == project  # an empty variable is unset
    assert chosen({"TOOLPLAN_TOOLS": "weather"}) == (("weather",), *project[1:])  # one by one
    (tmp_path / "toolplan.toml").write_text("")
    default = (DEFAULT_TOOL_MODULES, None, f"sqlite:///{tmp_path / '.toolplan' / 'toolplan.db'}")
    assert chosen({}) == default


def test_flags_win_over_the_environment() -> None:
    env = {
        "TOOLPLAN_STORE": "sqlite:///e.db",
        "TOOLPLAN_TOOLS": "blog",
        "TOOLPLAN_MCP": "e.json",
        "TOOLPLAN_CONCURRENCY": "3",
        "TOOLPLAN_MAX_STEPS": "7",
        "TOOLPLAN_TEMPORAL_ADDRESS": "e:7233",
    }
    settings = Settings.from_env(env)
    assert settings.with_overrides() == settings  # no flag, no change
    flagged = settings.with_overrides(
        store_uri="sqlite:///f.db",
        tool_modules=["weather"],
        mcp_config="f.json",
        concurrency=5,
        fail_fast=True,
        max_steps=9,
        no_cache=True,
        temporal_address="f:7233",
    )
    assert (flagged.store_uri, flagged.tool_modules, flagged.mcp_config) == (
        "sqlite:///f.db",
        ("weather",),
        "f.json",
    )
    assert (flagged.max_steps, flagged.temporal.address) == (9, "f:7233")
    assert flagged.execution == replace(
        settings.execution, concurrency=5, fail_fast=True, cache=False
    )
    assert flagged.estimates.concurrency == 5


def test_settings_are_values_usable_as_cache_keys() -> None:
    env = {"TOOLPLAN_STORE": "sqlite:///a.db", "OPENAI_API_KEY": "k"}
    assert Settings.from_env(env) == Settings.from_env(dict(env))
    assert hash(Settings.from_env(env)) == hash(Settings.from_env(dict(env)))
    assert Settings.from_env(env) != Settings.from_env({**env, "TOOLPLAN_MODEL": "openai:o"})


def test_default_graph_contexts_follow_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolplan.adapters.studio import execution_context

    monkeypatch.setenv("TOOLPLAN_TOOLS", "weather")
    monkeypatch.setenv("TOOLPLAN_STORE", f"sqlite:///{tmp_path / 'a.db'}")
    first = execution_context()
    assert execution_context().store is first.store  # one client per distinct settings
    monkeypatch.setenv("TOOLPLAN_STORE", f"sqlite:///{tmp_path / 'b.db'}")
    second = execution_context()
    assert second.store is not first.store and second.store.uri.endswith("b.db")
    assert "get_weather" in second.catalog.names and "createAuthor" not in second.catalog
    clear_caches()
    third = execution_context()
    assert third.store is not second.store
    for ctx in (first, second, third):
        ctx.store.close()


def test_tool_statistics_are_cached_per_store_object(tmp_path: Path) -> None:
    from toolplan.service.estimates import _recent_tool_stats
    from toolplan.store.sqlite import SqliteStore
    from toolplan.tools.catalog import ToolStats

    class Counting(SqliteStore):
        calls = 0

        def tool_stats(self) -> dict[str, ToolStats]:
            type(self).calls += 1
            return {"t": ToolStats(type(self).calls, None, None)}

    one, two = (
        Counting(tmp_path / "a.db", uri="x://same"),
        Counting(tmp_path / "b.db", uri="x://same"),
    )
    assert _recent_tool_stats(one)["t"].calls == 1
    assert _recent_tool_stats(one)["t"].calls == 1  # cached
    assert _recent_tool_stats(two)["t"].calls == 2  # same URI, another store: not shared
    clear_caches()
    assert _recent_tool_stats(one)["t"].calls == 3
    one.close()
    two.close()


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        (None, 60.0),
        ("https://api.openai.com/v1", 60.0),
        ("https://llm.example.com:8443/v1", 60.0),
        ("http://localhost:11434/v1", 300.0),
        ("http://127.0.0.1:8080/v1", 300.0),
        ("http://[::1]:8000/v1", 300.0),
        ("http://192.168.1.20:1234/v1", 300.0),
        ("http://10.0.0.7/v1", 300.0),
        ("http://gpu-box.local:11434/v1", 300.0),
        ("http://host.docker.internal:11434/v1", 300.0),
    ],
)
def test_a_local_model_gets_a_longer_llm_timeout_by_default(
    base_url: str | None, expected: float
) -> None:
    # A first planning call on a CPU took 70 s before its first token: past the 60 s default.
    env = {} if base_url is None else {"OPENAI_BASE_URL": base_url}
    assert Settings.from_env(env).planner.llm_timeout_seconds == expected
    given = Settings.from_env({**env, "TOOLPLAN_LLM_TIMEOUT": "12.5"}).planner
    assert given.llm_timeout_seconds == 12.5  # the variable always wins


def test_the_chat_model_gets_the_timeout_in_effect() -> None:
    from toolplan.planning.model import create_chat_model

    local = {"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}
    chat: Any = create_chat_model(Settings.from_env(local).planner)
    assert chat.request_timeout == 300.0
    hosted: Any = create_chat_model(Settings.from_env({"OPENAI_API_KEY": "sk-x"}).planner)
    assert hosted.request_timeout == 60.0


# -- tuning knobs: keys of the project config -----------------------------------------------------


def _toml(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value).replace("'", '"')


def test_every_tuning_knob_is_a_key_of_the_project_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        set(TUNING_KEYS) == set(Tuning.model_fields) == set(TUNED) == set(MOVED_VARIABLES.values())
    )
    (tmp_path / "toolplan.toml").write_text(
        "".join(f"{key} = {_toml(value)}\n" for key, (value, _, _) in TUNED.items())
    )
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({}, project=True)
    for key, (_, read, expected) in TUNED.items():
        assert read(settings) == expected, key
        assert read(Settings.from_env({})) != expected, f"{key}'s sample is its default"
    assert settings.estimates.prices_file == str(tmp_path / "prices.json")  # from its folder


def test_the_tuning_table_documents_exactly_the_keys() -> None:
    page = (ROOT / "docs" / "operations.md").read_text()
    table = page.split("### Tuning (project config)", 1)[1].split("\n\n| key |", 1)[1]
    table = table.split("\n\n", 1)[0]
    documented = {
        key
        for line in table.splitlines()[2:]
        for key in re.findall(r"`([a-z_]+)`", line.split("|")[1])
    }
    assert documented == set(TUNING_KEYS)


def test_a_former_variable_still_sets_its_knob_over_the_project_and_says_where_it_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "toolplan.toml").write_text("backoff = 0.2\ntemporal_heartbeat = 4\n")
    monkeypatch.chdir(tmp_path)
    for variable, key in MOVED_VARIABLES.items():
        value, read, expected = TUNED[key]
        with pytest.warns(SettingMoved, match=f"^{variable} is a tuning knob .* `{key} = "):
            settings = Settings.from_env(
                {variable: str(int(value) if isinstance(value, bool) else value)}, project=True
            )
        assert read(settings) == expected, variable
    with pytest.warns(SettingMoved, match="write `graph_checkpoints = true`"):
        Settings.from_env({"TOOLPLAN_GRAPH_CHECKPOINTS": "1"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the variables users set never warn
        Settings.from_env({name: value for name, (value, _, _) in SAMPLES.items()})


def test_a_bad_tuning_value_names_the_key_the_value_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "toolplan.toml"
    monkeypatch.chdir(tmp_path)
    config.write_text('timeout_factor = 0.5\nbackoff = "soon"\n')
    message = _refused(lambda env: Settings.from_env(env, project=True), {})
    assert message.startswith(f"in the project config {str(config)!r}: ")
    assert "backoff='soon': Input should be a valid number" in message
    assert "timeout_factor=0.5: Input should be greater than or equal to 1" in message
    config.write_text("timeout_history = 5\ntimeout_min_observations = 10\n")
    assert "timeout_history (5) must be at least timeout_min_observations (10)" in _refused(
        lambda env: Settings.from_env(env, project=True), {}
    )
    config.write_text("cache_tll = 5\n")
    with pytest.raises(InvalidInput, match=r"unknown key\(s\) cache_tll .*cache_ttl"):
        Settings.from_env({}, project=True)


def test_the_repair_default_is_the_one_the_docs_and_the_help_give() -> None:
    """Three repairs: Python, its repair, JSON asked afresh and that plan's repair
    (docs/planning.md); the operations table and ``--max-repairs``'s help say the same."""
    default = Settings.from_env({}).planner.max_repairs
    assert default == 3
    assert f"| `TOOLPLAN_MAX_REPAIRS` | {default} |" in DOCUMENTED
    option = get_args(MaxRepairsOption)[1]
    assert f"(default {default})" in option.help
