"""Hostile input, one row of the fault report per test, through the real CLI (and the Python API):
exit 2 with one line naming what is wrong and where, one JSON object with ``--json``, nothing
stored. The seeded fuzz (``test_fuzz.py``) covers the same classes in bulk; these are the
readable cases.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import toolplan
from tests.e2e import cli_cases
from tests.e2e.conftest import ON_BOTH_STORES, Cli
from toolplan.config import Settings
from toolplan.errors import InvalidInput, PlanInvalid
from toolplan.plan_format.limits import InputLimits, check_json, check_text
from toolplan.plan_format.templates import find_templates, malformed_templates, resolve

pytestmark = pytest.mark.e2e

BLOG = json.loads(Path(cli_cases.BLOG_PLAN).read_text())


def _plans_stored(cli: Cli) -> int:
    path = cli.tmp / "toolplan.db"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM tp_plans").fetchone()[0])


def _refused(cli: Cli, *args: str | bytes, words: str) -> dict[str, Any]:
    done = cli(*args, "--json")  # type: ignore[arg-type]
    assert done.code == 2, (done.code, done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    assert len(done.stdout.splitlines()) == 1
    payload: dict[str, Any] = json.loads(done.stdout)
    assert payload["exitCode"] == 2 and words in payload["error"], payload["error"]
    assert _plans_stored(cli) == 0
    return payload


def _file(cli: Cli, data: bytes) -> str:
    path = cli.tmp / "plan.json"
    path.write_bytes(data)
    return str(path)


@ON_BOTH_STORES
def test_ten_thousand_steps_sharing_one_id_are_refused_for_the_step_limit(cli: Cli) -> None:
    # The hostile set's 600 KB plan: refused for its size alone, with one problem, not 20,000.
    step = {"id": "s", "tool": "echo", "parameters": {"value": "x" * 20}}
    plan = json.dumps({"steps": [step] * 10_000}).encode()
    payload = _refused(cli, "submit", "--file", _file(cli, plan), words="more than the limit of 50")
    assert payload["error"].startswith("the plan is invalid (1 problem)")
    assert [issue["code"] for issue in payload["issues"]] == ["limit"]


def test_plan_files_that_are_not_utf8_json(cli: Cli) -> None:
    text = json.dumps(BLOG).replace("Alice", "Alïce")
    for data, hint in (
        (text.encode("latin-1"), "save it as UTF-8"),
        (text.encode("utf-16"), "looks like UTF-16"),
        (gzip.compress(text.encode()), "gzip-compressed"),
        (b"\x00\xff\xfe" * 100, "not UTF-8 JSON"),
        (text.encode().replace(b"Al", b"\xc0\xaf"), "not UTF-8 JSON"),  # overlong "/"
        (text.encode().replace(b"Al", b"\xed\xa0\x80"), "not UTF-8 JSON"),  # an encoded surrogate
    ):
        payload = _refused(cli, "submit", "--file", _file(cli, data), words="not UTF-8 JSON")
        assert hint in payload["error"]
    bom = cli("submit", "--file", _file(cli, b"\xef\xbb\xbf" + text.encode()), "--json")
    assert bom.code == 0, bom.stderr  # a UTF-8 byte-order mark is still UTF-8


def test_lone_surrogates_are_refused_naming_where(cli: Cli) -> None:
    for path, where in (
        (("steps", 0, "parameters", "name"), "steps[0].parameters.name"),
        (("reasoning",), "reasoning"),
    ):
        plan = json.loads(json.dumps({**BLOG, "reasoning": "ok"}))
        target: Any = plan
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = "x\ud800"
        data = json.dumps(plan).encode()  # ASCII JSON with a \ud800 escape: valid UTF-8
        payload = _refused(cli, "run", "--file", _file(cli, data), words=where)
        assert "lone surrogate" in payload["error"]
    keyed = json.loads(json.dumps(BLOG))
    keyed["steps"][0]["parameters"]["na\udc80me"] = "x"
    _refused(cli, "submit", "--file", _file(cli, json.dumps(keyed).encode()), words="na\\udc80me")
    # argv is bytes: an encoded surrogate (CESU-8) is how one arrives on a command line
    query = b"a\xed\xa0\x80b"
    _refused(cli, "submit", "--file", cli_cases.BLOG_PLAN, "--query", query, words="the query")


def test_query_argument_with_invalid_utf8_is_exit_2_before_any_model(cli: Cli) -> None:
    for command in ("run", "plan"):
        payload = _refused(cli, command, b"make a blog \xff\xfe", words="not valid UTF-8")
        assert "byte 0xff" in payload["error"]


def test_deep_nesting_in_files_and_parameters(cli: Cli) -> None:
    for depth in (1_000, 100_000, 400_000):  # up to 800 KB: under the size limit
        _refused(
            cli,
            "submit",
            "--file",
            _file(cli, b"[" * depth + b"]" * depth),
            words="levels deep",
        )
    nested = json.dumps(BLOG).replace('"Alice"', '{"a":' * 5000 + "1" + "}" * 5000)
    _refused(cli, "submit", "--file", _file(cli, nested.encode()), words="levels deep")


def test_oversized_numbers(cli: Cli) -> None:
    digits = "9" * 5000
    plan = json.dumps(BLOG)
    _refused(
        cli,
        "submit",
        "--file",
        _file(cli, plan.replace('"Alice"', digits).encode()),
        words="digits",
    )
    timed = json.dumps({"steps": [{**BLOG["steps"][0], "timeout": 1}]}).replace(
        '"timeout": 1', f'"timeout": {digits}'
    )
    _refused(cli, "submit", "--file", _file(cli, timed.encode()), words="digits")
    for literal in ("1e999", "NaN", "-Infinity"):
        _refused(
            cli, "submit", "--file", _file(cli, plan.replace('"Alice"', literal).encode()), words=""
        )


def test_size_limits_are_clear_and_configurable(cli: Cli) -> None:
    huge = json.dumps(BLOG).replace('"Alice"', json.dumps("x" * 20_000_000))
    _refused(cli, "submit", "--file", _file(cli, huge.encode()), words="TOOLPLAN_MAX_PLAN_BYTES")
    numbers = json.dumps(BLOG).replace('"Alice"', json.dumps(list(range(1_000_000))))
    _refused(cli, "submit", "--file", _file(cli, numbers.encode()), words="TOOLPLAN_MAX_PLAN_BYTES")
    long = json.dumps(BLOG).replace('"Alice"', json.dumps("y" * 150_000))
    _refused(cli, "submit", "--file", _file(cli, long.encode()), words="TOOLPLAN_MAX_STRING_CHARS")
    cli.env["TOOLPLAN_MAX_STRING_CHARS"] = "200000"
    # A bigger limit lets it through to validation (createAuthor's name is a string: valid).
    assert cli("submit", "--file", _file(cli, long.encode()), "--json").code == 0


def test_unclosed_template_braces_are_parsed_in_linear_time(cli: Cli) -> None:
    """49,000 unclosed ``{{`` (98 KB): the old quadratic regex needed minutes for 20,000. The
    60 s subprocess timeout is a hang guard, not a speed assertion."""
    flood = json.dumps(BLOG).replace('"Alice"', json.dumps("{{" * 49_000))
    done = cli.subprocess("run", "--file", _file(cli, flood.encode()), "--json", timeout=60)
    assert done.code == 0, done.stderr[
        -1000:
    ]  # literal text: nothing closes, nothing is a template
    broken = json.dumps(BLOG).replace('"Alice"', json.dumps("{{" * 49_000 + "}}"))
    payload = _refused_after(cli, broken)
    assert "template" in payload["error"]


def _refused_after(cli: Cli, text: str) -> dict[str, Any]:
    before = _plans_stored(cli)
    done = cli.subprocess("submit", "--file", _file(cli, text.encode()), "--json", timeout=60)
    assert done.code == 2 and "Traceback" not in done.stderr, done.stderr[-1000:]
    assert _plans_stored(cli) == before
    payload: dict[str, Any] = json.loads(done.stdout)
    return payload


def test_templates_keep_their_meaning() -> None:
    """The linear scanner finds exactly what the old ``\\{\\{(.*?)\\}\\}`` regex found."""
    outputs = {"a": {"x": 1, "s": "t"}}
    assert resolve("{{a.x}}", outputs) == 1
    assert resolve("v={{a.x}} {{a.s}}}", outputs) == "v=1 t}"
    assert resolve("{{ a.s }}", outputs) == "t"
    assert [t.text for t in find_templates({"k": ["{{a}}{{b.c[0]}}", "{{"]})] == [
        "{{a}}",
        "{{b.c[0]}}",
    ]
    assert malformed_templates("x {{a{{b}} y") == ["{{a{{b}}"]
    assert malformed_templates("{{" * 1000) == []


def test_python_api_checks_the_same_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPLAN_STORE", f"sqlite:///{tmp_path / 'py.db'}")
    with pytest.raises(PlanInvalid, match="lone surrogate"):
        toolplan.validate_plan(
            {"steps": [{"id": "a", "tool": "echo", "parameters": {"v": "\udfff"}}]}
        )
    with pytest.raises(PlanInvalid, match="digits"):
        toolplan.run_plan_sync(
            {"steps": [{"id": "a", "tool": "get_weather", "parameters": {"location": 10**200}}]}
        )
    with pytest.raises(PlanInvalid, match="not UTF-8 JSON"):
        toolplan.load_plan(b"\xff{}")
    monkeypatch.setenv("TOOLPLAN_MAX_DEPTH", "3")
    with pytest.raises(PlanInvalid, match="nested more than 3 levels"):
        toolplan.validate_plan({"steps": [{"id": "a", "tool": "echo", "parameters": {"v": [[1]]}}]})


def test_limits_unit() -> None:
    limits = InputLimits(max_plan_bytes=100, max_string_chars=10, max_depth=2, max_number_digits=3)
    check_json({"a": [1, "short"]}, limits)
    for value, words in (
        ({"a": [[1]]}, "nested more than 2"),
        ({"a": "x" * 11}, "11 characters"),
        ({"a": 1234}, "more than 3 digits"),
        ({"a": float("inf")}, "not a finite number"),
        ({"a": list(range(60))}, "larger than 100 bytes"),
        ({"a": {1, 2}}, "a set is not a JSON value"),
        ({1: "a"}, "is not a string"),
    ):
        with pytest.raises(PlanInvalid, match=words):
            check_json(value, limits)
    with pytest.raises(InvalidInput, match="byte 0xff"):
        check_text("abc\udcff", "the query", limits)
    with pytest.raises(InvalidInput, match="TOOLPLAN_MAX_DEPTH"):
        Settings.from_env({"TOOLPLAN_MAX_DEPTH": "deep"})
    limits = Settings.from_env({"TOOLPLAN_MAX_PLAN_BYTES": "2_000_000"}).limits
    assert limits.max_plan_bytes == 2_000_000


def test_a_tool_output_with_lone_surrogates_is_stored_not_a_crash(tmp_path: Path) -> None:
    from langchain_core.tools import tool

    @tool
    def read_bytes(name: str) -> dict[str, Any]:
        """Return what a file read with surrogateescape gives for invalid UTF-8."""
        return {"text": b"caf\xe9".decode("utf-8", "surrogateescape"), "name": name}

    plan = {
        "steps": [
            {"id": "r", "tool": "read_bytes", "parameters": {"name": "x"}},
            {"id": "s", "tool": "read_bytes", "parameters": {"name": "{{r.text}}"}},
        ]
    }
    result = toolplan.run_plan_sync(
        plan, tools=[read_bytes], store=f"sqlite:///{tmp_path / 't.db'}"
    )
    assert result.status == "succeeded"
    assert result.outputs["r"] == {"text": "caf\ufffd", "name": "x"}
    assert result.outputs["s"]["name"] == "caf\ufffd"
