"""A seeded fuzz of plan documents through every entry point's edge.

Every hostile class from the fault report (:func:`hostile_cases`) plus 300 seeded mutations of
valid plans (:func:`fuzz_cases`; ``TOOLPLAN_FUZZ_SEED`` replays a run) go through:

- in process, all of them: :func:`toolplan.service.operations.submit_plan`, the function behind
  ``toolplan submit``/``run --file`` (given the file), the GraphQL ``submitPlan`` and the Python
  API (given the object), on a real SQLite store;
- a sample, through the real ``toolplan submit --file ... --json`` (the end-to-end ``cli``), the
  GraphQL API on a real uvicorn server, and the ``execute_plan`` meta-tool.

Each must either store the plan (then it reads back as validated) or refuse it with exit code 2
(``PLAN_INVALID``/``BAD_USER_INPUT`` in the API, an error tool message in the meta-tool),
leaving nothing stored. Never a traceback, never another exception, and with ``--json`` exactly
one JSON object on stdout.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_support import ServerFactory, server_factory
from tests.e2e.conftest import Cli
from tests.support.hostile import Case, fuzz_cases, hostile_cases
from toolplan.errors import ToolplanError
from toolplan.plan_format.limits import InputLimits
from toolplan.plan_format.plan import load_plan
from toolplan.service import operations
from toolplan.store import open_store
from toolplan.tools.loading import load_tool_modules

SEED = int(os.environ.get("TOOLPLAN_FUZZ_SEED") or 20241122)
FUZZ_COUNT = 300
CATALOG = load_tool_modules(["blog", "metrics", "weather", "tests.support.tools"])
LIMITS = InputLimits()


def all_cases() -> list[Case]:
    return [*hostile_cases(), *fuzz_cases(SEED, FUZZ_COUNT)]


def _counts(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as db:
        plans = db.execute("SELECT count(*) FROM tp_plans").fetchone()[0]
        requests = db.execute("SELECT count(*) FROM tp_requests").fetchone()[0]
    return plans, requests


def _submit_in_process(case: Case, store: Any, tmp: Path) -> tuple[int, str | None]:
    """(exit code, plan ID) as the edge gives them; any other exception fails the test."""
    source: Any = case.data
    if case.is_bytes:
        source = tmp / "case.json"
        source.write_bytes(case.data)
    try:
        ref = operations.submit_plan(
            source, store=store, catalog=CATALOG, max_steps=50, limits=LIMITS
        )
    except ToolplanError as error:
        assert "Traceback" not in error.message
        return error.exit_code, None
    return 0, ref.plan_id


def test_fuzz_in_process_every_case_is_stored_or_refused_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "fuzz.db"
    store = open_store(f"sqlite:///{path}")
    seen: dict[str, int] = {"accepted": 0, "refused": 0}
    try:
        cases = all_cases()
        assert len(cases) >= 300 + 40
        for case in cases:
            before = _counts(path)
            try:
                code, plan_id = _submit_in_process(case, store, tmp_path)
            except Exception as error:  # pragma: no cover - the failure this test looks for
                pytest.fail(f"{case.name}: {type(error).__name__}: {error}"[:2000])
            if code == 0:
                assert case.expect != "reject", f"{case.name}: accepted"
                assert plan_id is not None
                record = store.get_plan(plan_id)
                assert record is not None
                assert record.plan == load_plan(record.plan).to_json()  # reads back as stored
                assert _counts(path) == (before[0] + 1, before[1] + 1)
                seen["accepted"] += 1
            else:
                assert code == 2, f"{case.name}: exit {code}"
                assert case.expect != "accept", f"{case.name}: refused"
                assert _counts(path) == before, f"{case.name}: something was stored"
                seen["refused"] += 1
    finally:
        store.close()
    # The mutations keep some plans valid, so both outcomes are exercised.
    assert seen["accepted"] >= 10 and seen["refused"] >= 100, seen


def _sample(
    cases: list[Case], count: int, *, files: bool, seed: int, named: int | None = None
) -> list[Case]:
    """``named`` of the hostile classes (all by default) and ``count`` fuzzed cases."""
    classes = [c for c in cases if c.expect is not None and c.is_bytes == files]
    fuzzed = [c for c in cases if c.expect is None and c.is_bytes == files]
    rng = random.Random(seed)
    if named is not None:
        classes = rng.sample(classes, min(named, len(classes)))
    return classes + rng.sample(fuzzed, min(count, len(fuzzed)))


def test_fuzz_sample_through_the_cli_exit_codes_and_one_json_object(tmp_path: Path) -> None:
    """Real ``toolplan submit`` processes agree with the in-process edge: exit 0 or 2, one
    JSON object on stdout, no traceback, nothing stored on refusal. A sample: a CLI process
    costs about a second, and ``test_hostile_input.py`` runs each class through it by name."""
    cases = _sample(all_cases(), 6, files=True, seed=SEED, named=10)
    cli = Cli(tmp_path)
    db = tmp_path / "toolplan.db"
    reference = open_store(f"sqlite:///{tmp_path / 'reference.db'}")
    try:
        for index, case in enumerate(cases):
            file = tmp_path / f"case{index}.json"
            file.write_bytes(case.data)
            before = _counts(db) if db.exists() else (0, 0)
            done = cli("submit", "--file", str(file), "--json")
            assert "Traceback" not in done.stderr, (case.name, done.stderr[-2000:])
            lines = done.stdout.splitlines()
            assert len(lines) == 1, (case.name, done.stdout[:500])
            payload = json.loads(lines[0])
            assert isinstance(payload, dict)
            expected, _ = _submit_in_process(case, reference, tmp_path)
            assert done.code == expected, (case.name, done.code, done.stderr[-500:])
            if done.code == 2:
                assert payload["exitCode"] == 2 and payload["error"]
                assert (_counts(db) if db.exists() else (0, 0)) == before, case.name
            else:
                assert payload["status"] == "planned"
    finally:
        reference.close()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[ServerFactory]:
    yield from server_factory(tmp_path)


SUBMIT = "mutation($plan: JSON!) { submitPlan(plan: $plan) { planId status } }"


def _jsonable(case: Case) -> bool:
    try:
        json.dumps(case.data, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError):
        return False
    return True


def test_fuzz_sample_through_the_graphql_api(start_server: ServerFactory) -> None:
    """Object cases as ``submitPlan`` variables, and their files as raw JSON bodies: a plan ID,
    or ``PLAN_INVALID``/``BAD_USER_INPUT``/a 400; never ``INTERNAL_ERROR``."""
    server = start_server()
    client = server.client()
    cases = _sample(all_cases(), 40, files=False, seed=SEED + 1)
    try:
        for case in cases:
            if _jsonable(case):
                body = json.dumps({"query": SUBMIT, "variables": {"plan": case.data}})
                response = client.http.post(
                    "/graphql",
                    content=body.encode("utf-8", "surrogatepass"),
                    headers={"content-type": "application/json"},
                )
            else:  # what JSON cannot carry, the API cannot receive; send the raw text instead
                continue
            if response.status_code == 413:  # over the body size limit: refused unread
                continue
            assert response.status_code == 200, (case.name, response.text[:500])
            result = response.json()
            codes = [e["extensions"]["code"] for e in result.get("errors") or []]
            assert codes in ([], ["PLAN_INVALID"], ["BAD_USER_INPUT"]), (case.name, result)
            if case.expect == "reject":
                assert codes, case.name
            if case.expect == "accept":
                assert not codes, (case.name, result)
        for case in _sample(all_cases(), 10, files=True, seed=SEED + 2):
            if len(case.data) > 900_000:
                continue
            body = (
                b'{"query": "'
                + SUBMIT.replace('"', '\\"').encode()
                + b'", "variables": {"plan": '
                + case.data
                + b"}}"
            )
            response = client.http.post(
                "/graphql", content=body, headers={"content-type": "application/json"}
            )
            assert response.status_code in (200, 400), (case.name, response.status_code)
            codes = [e["extensions"]["code"] for e in response.json().get("errors") or []]
            assert "INTERNAL_ERROR" not in codes, (case.name, response.text[:500])
    finally:
        client.close()


async def test_fuzz_sample_through_the_meta_tool(tmp_path: Path) -> None:
    """The ``execute_plan`` tool gets objects and JSON strings: it runs the plan or answers
    with an error message; it never raises."""
    from toolplan import plan_tool
    from toolplan.config import Settings

    settings = Settings(store_uri=f"sqlite:///{tmp_path / 'meta.db'}")
    tool = plan_tool(CATALOG, settings=settings)
    # A model's tool call arguments are parsed from JSON: objects JSON cannot carry (a set,
    # a 5,000-digit integer) never reach a tool, and LangChain itself fails on them first.
    cases = [c for c in _sample(all_cases(), 15, files=False, seed=SEED + 3) if _jsonable(c)]
    cases += _sample(all_cases(), 10, files=True, seed=SEED + 4)
    try:
        for index, case in enumerate(cases):
            plan: Any = case.data
            if case.is_bytes:
                plan = case.data.decode("utf-8", "surrogateescape")
            call = {
                "name": "execute_plan",
                "args": {"plan": plan},
                "id": f"c{index}",
                "type": "tool_call",
            }
            message = await tool.ainvoke(call)
            if case.expect == "reject":
                assert message.status == "error", case.name
            assert "Traceback" not in str(message.content), case.name
    finally:
        tool.close()
