"""MCP tool servers end to end: real FastMCP server processes over stdio and streamable HTTP.

``tests/support/mcp_server.py`` runs as a child process: spawned per call over stdio (tools
prefixed ``s_``), and as an HTTP server on a free loopback port. Catalog loading, planning with a
fake model, execution through the engine, tool errors and servers dying mid-run are covered.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from tests.support.fake_models import ToolCallingFake
from tests.support.mcp_http import SERVER, HttpServer, start_http_server
from tests.support.plans import QUERY
from tests.support.ports import first_pick_taken, free_port
from toolplan.adapters.plan_tool import plan_tool
from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.result import ExecutionResult
from toolplan.errors import InvalidInput
from toolplan.pipeline.planning import create_plan
from toolplan.planning.graph import PlannerContext
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import execute_stored_plan, submit_plan
from toolplan.store.sqlite import SqliteStore
from toolplan.tools import ToolCatalog
from toolplan.tools.loading import aload_catalog, load_catalog
from toolplan.tools.mcp import MCPServerUnavailable, load_mcp_config, mcp_output

pytestmark = pytest.mark.e2e

LOCAL = Settings(tool_modules=("tests.support.tools",))
FAST = ExecutionOptions(retry=RetryPolicy(initial_backoff=0.01, jitter=0), default_timeout=60)


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """An HTTP server shared by the tests that do not kill it."""
    server = start_http_server(tmp_path_factory.mktemp("mcp"))
    yield server
    server.kill()


@pytest.fixture
def doomed(tmp_path: Path) -> Iterator[HttpServer]:
    """An HTTP server of one's own, to kill."""
    server = start_http_server(tmp_path)
    yield server
    if server.process.poll() is None:
        server.kill()


def stdio_entry(log: Path) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(SERVER), "stdio", "--prefix", "s_"],
        "env": {"MCP_TEST_LOG": str(log)},
    }


def write_config(tmp: Path, servers: dict[str, Any]) -> Path:
    path = tmp / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "toolplan.db")
    yield store
    store.close()


@pytest.fixture
def engine_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where ``tests.support.tools`` log their calls; also sets up the ``gate`` tool."""
    monkeypatch.setenv("TOOLPLAN_TEST_GATE", str(tmp_path / "gate.open"))
    path = tmp_path / "engine.jsonl"
    monkeypatch.setenv("TOOLPLAN_TEST_LOG", str(path))
    return path


async def run(store: SqliteStore, catalog: ToolCatalog, plan: dict[str, Any]) -> ExecutionResult:
    ref = submit_plan(plan, store=store, catalog=catalog, max_steps=50)
    ctx = ExecutionContext(store=store, catalog=catalog, options=FAST)
    return await execute_stored_plan(ref.plan_id, ctx)


async def wait_for(condition: Any, what: str, running: asyncio.Future[Any]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if running.done():
            raise AssertionError(f"the run ended before {what}: {running.result()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


# -- configuration and outputs (no server needed) ------------------------------------------------


def test_config_forms_and_mistakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRM_TOKEN", "t0k$n")
    servers = load_mcp_config(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server-filesystem", "."]},
                "crm": {
                    "url": "https://crm.test/mcp",
                    "headers": {"Authorization": "Bearer ${CRM_TOKEN}"},
                },
                "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                "off": {"command": "nope", "disabled": True},
            }
        }
    )
    assert [(s.name, s.transport) for s in servers] == [
        ("files", "stdio"),
        ("crm", "streamable_http"),
        ("legacy", "sse"),
    ]
    assert servers[1].connection["headers"] == {"Authorization": "Bearer t0k$n"}
    assert servers[0].where == "stdio: npx -y server-filesystem ."

    mistakes = {
        "missing": (tmp_path / "nope.json", "does not exist"),
        "not json": (write_text(tmp_path / "bad.json", "{"), "is not valid JSON"),
        "no key": ({"servers_": {}}, '"mcpServers"'),
        "neither": ({"mcpServers": {"x": {"args": []}}}, "server 'x' has neither 'command'"),
        "transport": ({"mcpServers": {"x": {"url": "http://h/mcp", "transport": "ws"}}}, "'ws'"),
        "args": ({"mcpServers": {"x": {"command": "a", "args": "b"}}}, "server 'x': 'args'"),
        "url": ({"mcpServers": {"x": {"url": "ftp://h"}}}, "server 'x': 'url'"),
    }
    for label, (source, expected) in mistakes.items():
        with pytest.raises(InvalidInput) as caught:
            load_mcp_config(source)
        assert expected in caught.value.message, label


def write_text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_outputs_become_json_for_the_engine() -> None:
    def text(value: str) -> dict[str, Any]:
        return {"type": "text", "text": value, "id": "lc_1"}

    wrapped = {"structured_content": {"result": 3}}
    assert mcp_output([text("3")], wrapped) == 3
    obj = {"id": "u", "tags": ["a"]}
    assert mcp_output([text(json.dumps(obj, indent=2))], {"structured_content": obj}) == obj
    real = {"result": 5}  # a tool that really returns {"result": 5} keeps it
    assert mcp_output([text('{"result": 5}')], {"structured_content": real}) == real
    assert (
        mcp_output([text('{"a": 1}')], {"structured_content": {"result": '{"a": 1}'}}) == '{"a": 1}'
    )
    assert mcp_output([text('{"a": 1}')], None) == '{"a": 1}'  # the engine parses JSON text
    assert mcp_output([text('{"n": 1}'), text("plain")], None) == [{"n": 1}, "plain"]
    image = {"type": "image", "base64": "AAAA", "mime_type": "image/png", "id": "lc_2"}
    assert mcp_output([image], None) == [
        {"type": "image", "base64": "AAAA", "mime_type": "image/png"}
    ]


# -- listing -------------------------------------------------------------------------------------


async def test_catalog_lists_mcp_tools_with_schemas(remote: HttpServer, tmp_path: Path) -> None:
    config = write_config(
        tmp_path, {"remote": {"url": remote.url}, "local": stdio_entry(tmp_path / "s.jsonl")}
    )
    catalog = await aload_catalog(LOCAL, mcp_config=config)
    assert {"echo", "gate", "lookup_user", "s_lookup_user"} <= set(catalog.names)
    info = catalog.info("lookup_user")
    assert info.source == "mcp:remote" and info.tags == ("mcp", "mcp:remote")
    assert info.description.startswith("Look up a user by ID.")
    assert info.parameters["required"] == ["user_id"]
    assert info.parameters["properties"]["user_id"]["type"] == "string"
    orders = catalog.info("s_list_orders")
    assert orders.source == "mcp:local" and orders.parameters["required"] == ["email"]
    assert orders.parameters["properties"]["limit"] == {"default": 3, "type": "integer"}
    assert [i.name for i in catalog.infos(tag="mcp:local")][:3] == [
        "s_add",
        "s_lookup_user",
        "s_list_orders",
    ]
    assert len(catalog.infos(tag="mcp")) == 16


def test_sync_loading_inside_and_outside_an_event_loop(remote: HttpServer) -> None:
    config = {"mcpServers": {"remote": {"url": remote.url}}}
    catalog = load_catalog(LOCAL, mcp_config=config)
    # Loaded in one event loop, called from another: MCP tools keep no session between calls.
    assert asyncio.run(catalog.get("add").ainvoke({"a": 2, "b": 3})) == 5
    assert catalog.get("shout").invoke({"text": "sync"}) == "SYNC"  # for sync agents too

    async def inside() -> ToolCatalog:
        return load_catalog(LOCAL, mcp_config=config)

    assert "add" in asyncio.run(inside())


async def test_a_server_that_fails_to_start_is_named_and_the_rest_still_loads(
    remote: HttpServer, tmp_path: Path
) -> None:
    crash = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(2)"]}
    missing = {"command": str(tmp_path / "no-such-server"), "args": []}
    down = {"url": f"http://127.0.0.1:{free_port()}/mcp"}
    config = {
        "mcpServers": {
            "remote": {"url": remote.url},
            "crash": crash,
            "missing": missing,
            "down": down,
        }
    }
    warnings: list[str] = []
    catalog = await aload_catalog(LOCAL, mcp_config=config, warn=warnings.append)
    assert "lookup_user" in catalog and "echo" in catalog
    by_server = {w.split("'")[1]: w for w in warnings}
    assert set(by_server) == {"crash", "missing", "down"}
    assert "the server closed the connection" in by_server["crash"]
    assert "command not found" in by_server["missing"] and "no-such-server" in by_server["missing"]
    assert "connection refused" in by_server["down"]
    assert all(w.endswith("continuing without its tools") for w in warnings)

    with pytest.raises(MCPServerUnavailable) as caught:
        await aload_catalog(LOCAL, mcp_config={"mcpServers": {"down": down}}, strict=True)
    assert caught.value.exit_code == 3 and caught.value.server == "down"
    assert caught.value.message.startswith(f"MCP server 'down' ({down['url']}) could not be loaded")


def test_an_http_server_whose_port_was_taken_starts_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its port is chosen free before the server binds it: another process can take it between."""
    with first_pick_taken(monkeypatch) as picks:
        server = start_http_server(tmp_path)
        try:
            taken, port = picks
            assert server.url == f"http://127.0.0.1:{port}/mcp"
            said = (tmp_path / f"mcp-http-{taken}.stderr").read_text()
            assert "address already in use" in said, "the first launch did not meet the taken port"
            config = {"mcpServers": {"remote": {"url": server.url}}}
            assert load_catalog(LOCAL, mcp_config=config).get("add").invoke({"a": 2, "b": 3}) == 5
        finally:
            server.kill()


# -- planning and execution ----------------------------------------------------------------------


async def test_planning_with_mcp_tools_then_running_the_plan(
    remote: HttpServer, store: SqliteStore
) -> None:
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": {"remote": {"url": remote.url}}})
    plan = {
        "reasoning": "Find the user, then their orders.",
        "steps": [
            {
                "id": "user",
                "tool": "lookup_user",
                "parameters": '{"user_id": "u1"}',
                "dependsOn": [],
                "confidence": 0.9,
            },
            {
                "id": "orders",
                "tool": "list_orders",
                "parameters": '{"email": "{{user.email}}", "limit": 2}',
                "dependsOn": [],
                "confidence": 0.9,
            },
        ],
        "outputSteps": ["orders"],
    }
    ToolCallingFake.seen = []
    model = ToolCallingFake(
        messages=iter(
            [AIMessage(content="", tool_calls=[{"name": "LLMPlan", "args": plan, "id": "c1"}])]
        )
    )
    ctx = PlannerContext(
        store=store, catalog=catalog, model=model, model_name="fake:model", plan_format="json"
    )
    outcome = await create_plan(QUERY, ctx)
    system = ToolCallingFake.seen[0][0].content
    assert "## lookup_user" in system and "Tags: mcp, mcp:remote" in system
    assert '"required": ["email"]' in system  # list_orders' schema, as the server declared it
    assert outcome.analysis["dependencies"]["orders"] == ["user"]

    result = await execute_stored_plan(
        outcome.ref.plan_id, ExecutionContext(store=store, catalog=catalog, options=FAST)
    )
    assert result.status == "succeeded"
    assert result.outputs["orders"] == [
        {"order": "o-1", "email": "u1@example.test", "total": 10},
        {"order": "o-2", "email": "u1@example.test", "total": 20},
    ]


async def test_a_plan_mixing_local_stdio_and_http_tools(
    remote: HttpServer, store: SqliteStore, tmp_path: Path, engine_log: Path
) -> None:
    stdio_log = tmp_path / "stdio.jsonl"
    servers = {"remote": {"url": remote.url}, "local": stdio_entry(stdio_log)}
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": servers})
    plan = {
        "steps": [
            {"id": "seed", "tool": "echo", "parameters": {"value": {"id": "u7", "n": 4}}},
            {"id": "user", "tool": "lookup_user", "parameters": {"user_id": "{{seed.id}}"}},
            {
                "id": "orders",
                "tool": "s_list_orders",
                "parameters": {"email": "{{user.email}}", "limit": "{{seed.n}}"},
            },
            {
                "id": "sum",
                "tool": "add",
                "parameters": {"a": "{{orders[0].total}}", "b": "{{orders[3].total}}"},
            },
            {"id": "loud", "tool": "s_shout", "parameters": {"text": "order {{orders[1].order}}"}},
            {
                "id": "parsed",
                "tool": "json_text",
                "parameters": {"payload": '{"items": [1, 2, 3]}'},
            },
            {
                "id": "last",
                "tool": "text",
                "parameters": {"value": "{{loud}} / {{sum}} / {{parsed.items[2]}}"},
            },
        ],
        "outputSteps": ["last", "parsed"],
    }
    result = await run(store, catalog, plan)
    assert result.status == "succeeded", [s.error for s in result.steps]
    assert result.step("user").output["email"] == "u7@example.test"
    assert result.step("orders").resolved_parameters == {"email": "u7@example.test", "limit": 4}
    assert result.step("sum").output == 50
    assert result.step("parsed").output == {"items": [1, 2, 3]}  # JSON text became JSON
    assert result.outputs["last"] == "ORDER O-2 / 50 / 3"
    stdio_calls = [json.loads(line) for line in stdio_log.read_text().splitlines()]
    assert [c["tool"] for c in stdio_calls] == ["list_orders", "shout"]  # unprefixed in the log
    assert len({c["pid"] for c in stdio_calls}) == 2  # one process per call (see tools/mcp.py)
    assert {"tool": "lookup_user", "args": {"user_id": "u7"}} in [
        {k: c[k] for k in ("tool", "args")} for c in remote.calls()
    ]


async def test_an_mcp_tool_error_is_a_failed_step(remote: HttpServer, store: SqliteStore) -> None:
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": {"remote": {"url": remote.url}}})
    plan = {
        "steps": [
            {"id": "bad", "tool": "fail", "parameters": {"message": "no such customer"}},
            {"id": "after", "tool": "shout", "parameters": {"text": "{{bad}}"}},
            {"id": "wrong", "tool": "add", "parameters": {"a": "{{ok.label}}", "b": 1}},
            {"id": "ok", "tool": "echo", "parameters": {"value": {"label": "x"}}},
        ]
    }
    result = await run(store, catalog, plan)
    assert result.status == "partial"
    bad = result.step("bad")
    assert (bad.status, bad.attempts) == ("failed", 1)  # a tool error is not retried
    assert bad.error == (
        "tool 'fail' reported an error: MCP server 'remote': Error executing tool fail: "
        "no such customer"
    )
    assert result.step("after").status == "skipped"
    wrong = result.step("wrong")  # the server rejects a resolved argument of the wrong type
    assert wrong.status == "failed" and "MCP server 'remote'" in (wrong.error or "")
    assert "valid integer" in (wrong.error or "")
    assert result.step("ok").status == "succeeded"


async def test_server_killed_while_its_step_runs(
    doomed: HttpServer, store: SqliteStore, engine_log: Path
) -> None:
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": {"remote": {"url": doomed.url}}})
    plan = {
        "steps": [
            {"id": "long", "tool": "slow", "parameters": {"seconds": 60}, "maxAttempts": 1},
            {"id": "after", "tool": "shout", "parameters": {"text": "{{long.label}}"}},
            {"id": "local", "tool": "sleepy", "parameters": {"label": "independent"}},
        ]
    }
    running = asyncio.ensure_future(run(store, catalog, plan))
    await wait_for(lambda: any(c["tool"] == "slow" for c in doomed.calls()), "the call", running)
    doomed.kill()
    result = await asyncio.wait_for(running, 30)  # not the step's 60 s: the break is noticed
    long = result.step("long")
    assert long.status == "failed"
    assert long.error is not None and long.error.startswith(
        f"tool 'slow' raised MCPServerError: MCP server 'remote' ({doomed.url}) disconnected "
        "while 'slow' was running"
    )
    assert result.step("after").status == "skipped"
    assert result.step("local").status == "succeeded"
    assert result.status == "partial"


async def test_server_dead_before_a_later_step(
    doomed: HttpServer, store: SqliteStore, engine_log: Path, tmp_path: Path
) -> None:
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": {"remote": {"url": doomed.url}}})
    plan = {
        "steps": [
            {"id": "first", "tool": "add", "parameters": {"a": 1, "b": 2}},
            {"id": "wait", "tool": "gate", "parameters": {"label": "after {{first}}"}},
            {
                "id": "second",
                "tool": "add",
                "parameters": {"a": "{{first}}", "b": 10},
                "dependsOn": ["wait"],
                "maxAttempts": 2,
            },
            {"id": "local", "tool": "echo", "parameters": {"value": "{{wait.label}}"}},
        ]
    }
    running = asyncio.ensure_future(run(store, catalog, plan))
    await wait_for(engine_log.exists, "the gate step", running)
    doomed.kill()
    (tmp_path / "gate.open").touch()
    result = await asyncio.wait_for(running, 30)
    assert result.step("first").output == 3
    second = result.step("second")
    assert (second.status, second.attempts) == ("failed", 2)  # retried: the server may come back
    assert second.error == (
        f"tool 'add' raised MCPServerError: MCP server 'remote' ({doomed.url}) failed when "
        "calling 'add': connection refused or host unreachable (All connection attempts "
        "failed) (after 2 attempts)"
    )
    assert result.step("local").output == "after 3"
    assert result.status == "partial"


async def test_a_stdio_server_that_crashes_mid_call(store: SqliteStore, tmp_path: Path) -> None:
    servers = {"local": stdio_entry(tmp_path / "s.jsonl")}
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": servers})
    plan = {
        "steps": [
            {"id": "boom", "tool": "s_crash", "parameters": {}, "maxAttempts": 1},
            {"id": "fine", "tool": "s_add", "parameters": {"a": 2, "b": 2}},
        ]
    }
    result = await run(store, catalog, plan)
    boom = result.step("boom")
    assert boom.status == "failed" and boom.error is not None
    assert (
        "MCP server 'local' (stdio: " in boom.error
        and "failed when calling 's_crash'" in boom.error
    )
    assert "the server closed the connection" in boom.error
    assert result.step("fine").output == 4  # a fresh process for the next call


async def test_the_meta_tool_runs_plans_over_mcp_tools(
    remote: HttpServer, store: SqliteStore
) -> None:
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": {"remote": {"url": remote.url}}})
    meta = plan_tool(catalog, store=store, settings=Settings(store_uri=store.uri, execution=FAST))
    plan = {
        "steps": [
            {"id": "user", "tool": "lookup_user", "parameters": {"user_id": "zed"}},
            {
                "id": "orders",
                "tool": "list_orders",
                "parameters": {"email": "{{user.email}}", "limit": 1},
            },
        ],
        "outputSteps": ["orders"],
    }
    message = await meta.ainvoke(
        {"name": "execute_plan", "args": {"plan": plan}, "id": "c1", "type": "tool_call"}
    )
    assert isinstance(message, ToolMessage) and message.status == "success"
    assert message.content.endswith(
        '  [{"order": "o-1", "email": "zed@example.test", "total": 10}]'
    )
    assert "User zed" not in message.content  # the intermediate lookup stays in the artifact
    assert message.artifact["steps"][0]["output"]["name"] == "User zed"


def test_cli_mcp_flag_and_env_load_the_servers_tools(remote: HttpServer, tmp_path: Path) -> None:
    """`--mcp servers.json` / TOOLPLAN_MCP reach every command through the CLI session."""
    from tests.e2e.conftest import Cli

    cli = Cli(tmp_path)
    config = write_config(tmp_path, {"remote": {"url": remote.url, "transport": "streamable_http"}})
    listed = cli("tools", "--mcp", str(config), "--tag", "mcp:remote", "--json")
    assert listed.code == 0, listed.stderr
    assert "add" in {t["name"] for t in listed.json()["tools"]}

    plan = {
        "steps": [
            {"id": "sum", "tool": "add", "parameters": {"a": 2, "b": 3}},
            {"id": "echo", "tool": "echo", "parameters": {"value": "{{sum}}"}},
        ]
    }
    cli.env["TOOLPLAN_MCP"] = str(config)
    done = cli("run", "--file", cli.write_plan(plan), "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == {"sum": 5, "echo": 5}

    cli.env.pop("TOOLPLAN_MCP")
    rejected = cli("run", "--file", cli.write_plan(plan), "--json")
    assert rejected.code == 2 and "unknown tool 'add'" in rejected.stdout


async def test_a_tool_name_two_servers_export_is_prefixed_by_server_and_said(
    store: SqliteStore, tmp_path: Path, engine_log: Path
) -> None:
    logs = {name: tmp_path / f"{name}.jsonl" for name in ("alpha", "beta.v2")}
    servers = {
        name: {
            "command": sys.executable,
            "args": [str(SERVER), "stdio"],
            "env": {"MCP_TEST_LOG": str(log)},
        }
        for name, log in logs.items()
    }
    # A third server whose names are its own keeps them as they are.
    servers["solo"] = stdio_entry(tmp_path / "solo.jsonl")
    warnings: list[str] = []
    catalog = await aload_catalog(LOCAL, mcp_config={"mcpServers": servers}, warn=warnings.append)
    names = {tool.name for tool in catalog}
    assert {"alpha_add", "beta_v2_add", "alpha_shout", "beta_v2_shout", "s_add"} <= names
    assert "add" not in names and "shout" not in names  # never one server's tool at random
    (warning,) = warnings
    assert "'add' as 'alpha_add', 'beta_v2_add'" in warning
    assert "'shout' as 'alpha_shout', 'beta_v2_shout'" in warning and "s_add" not in warning
    assert "MCP server 'beta.v2'" in catalog.get("beta_v2_add").description

    plan = {
        "steps": [
            {"id": "one", "tool": "alpha_add", "parameters": {"a": 1, "b": 2}},
            {"id": "two", "tool": "beta_v2_add", "parameters": {"a": "{{one}}", "b": 10}},
        ]
    }
    result = await run(store, catalog, plan)
    assert result.status == "succeeded", [s.error for s in result.steps]
    assert result.step("two").output == 13
    # each server was called under the tool's own name, with its own step's arguments
    for name, args in [("alpha", {"a": 1, "b": 2}), ("beta.v2", {"a": 3, "b": 10})]:
        (call,) = [json.loads(line) for line in logs[name].read_text().splitlines()]
        assert (call["tool"], call["args"]) == ("add", args)
