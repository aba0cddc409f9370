"""Controllable tools for engine and CLI tests (importable as ``tests.support.tools``).

Every call is appended to the file named by ``$TOOLPLAN_TEST_LOG`` (if set) as one JSON line,
so a test in another process can see which steps were called, when, and with which key.

Their effects (:mod:`toolplan.tools.effects`): the controllable tools only append to that log,
which commutes, so they are tagged ``commutative`` and run side by side as the engine tests
expect; ``lookup``, ``lookup_hourly`` and ``held_read`` are read-only; ``wire_money`` is a side
effect on the resource ``bank`` (commutative: transfers add up in any order). ``put`` and ``get`` are a key-value store on the resource ``kv``
(the store's records), for the order a plan's reads and writes keep.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import ToolException, tool

from toolplan.builtin_tools._records import records_for
from toolplan.tools import tagged


def _log(event: str, config: RunnableConfig, **extra: Any) -> None:
    path = os.environ.get("TOOLPLAN_TEST_LOG")
    if not path:
        return
    metadata = config.get("metadata") or {}
    line = {
        "event": event,
        "step": metadata.get("step_id"),
        "attempt": metadata.get("attempt"),
        "key": metadata.get("idempotency_key"),
        "item": metadata.get("item"),
        "t": time.time(),
        "pid": os.getpid(),
        **extra,
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


@tool
async def sleepy(label: str, config: RunnableConfig, seconds: float = 0.0) -> dict[str, Any]:
    """Sleep for `seconds`, then return {"label": label}."""
    _log("start", config, label=label)
    await asyncio.sleep(seconds)
    _log("end", config, label=label)
    return {"label": label, "slept": seconds}


@tool
def echo(value: Any, config: RunnableConfig) -> Any:
    """Return `value` unchanged."""
    _log("call", config)
    return value


@tool
def text(value: str, config: RunnableConfig) -> str:
    """Return `value` as a plain string (the engine parses JSON objects/lists in strings)."""
    _log("call", config)
    return value


@tool
def business_error(message: str, config: RunnableConfig) -> str:
    """Always report a business error (ToolException)."""
    _log("call", config)
    raise ToolException(message)


@tool
def flaky(failures: int, config: RunnableConfig) -> dict[str, Any]:
    """Raise a transient error on the first `failures` attempts, then succeed."""
    attempt = (config.get("metadata") or {}).get("attempt", 1)
    _log("call", config)
    if attempt <= failures:
        raise ConnectionError(f"transient failure on attempt {attempt}")
    return {"attempt": attempt}


@tool
async def hang(config: RunnableConfig) -> str:
    """Never return (until cancelled)."""
    _log("start", config)
    await asyncio.sleep(3600)
    return "unreachable"


@tool
async def gate(label: str, config: RunnableConfig) -> dict[str, Any]:
    """Wait until the file named by $TOOLPLAN_TEST_GATE exists, then return {"label": label}."""
    _log("start", config, label=label)
    path = os.environ.get("TOOLPLAN_TEST_GATE", "")
    while path and not os.path.exists(path):
        await asyncio.sleep(0.01)
    _log("end", config, label=label)
    return {"label": label}


@tool
async def held(label: str, config: RunnableConfig) -> dict[str, Any]:
    """Hold a resource until the file named by $TOOLPLAN_TEST_GATE exists, then return
    {"label": label}. Cancelled, it releases the resource (logged as "released") and re-raises."""
    _log("start", config, label=label)
    path = os.environ.get("TOOLPLAN_TEST_GATE", "")
    try:
        while not path or not os.path.exists(path):
            await asyncio.sleep(0.01)
    except asyncio.CancelledError:
        _log("released", config, label=label)
        raise
    _log("end", config, label=label)
    return {"label": label}


@tool
async def gate_if(label: str, wait: bool, config: RunnableConfig) -> dict[str, Any]:
    """Return {"label": label}; when `wait`, first wait until the file named by
    $TOOLPLAN_TEST_GATE exists (one item of a map held while the others finish)."""
    _log("start", config, label=label)
    path = os.environ.get("TOOLPLAN_TEST_GATE", "")
    while wait and not (path and os.path.exists(path)):
        await asyncio.sleep(0.01)
    _log("end", config, label=label)
    return {"label": label}


@tool
def lookup(key: str, config: RunnableConfig) -> dict[str, Any]:
    """Read-only: look `key` up and return {"key": key, "value": ...}; the key "bad" fails
    (a ToolException). Tagged read-only, so its results are cached."""
    _log("call", config, key_arg=key)
    if key == "bad":
        raise ToolException(f"no such key: {key}")
    return {"key": key, "value": key.upper()}


@tool
def lookup_hourly(key: str, config: RunnableConfig) -> dict[str, Any]:
    """Read-only with its own cache TTL of an hour: return {"key": key}."""
    _log("call", config, key_arg=key)
    return {"key": key}


@tool
def wire_money(to: str, amount: float, config: RunnableConfig) -> dict[str, Any]:
    """Send `amount` to the account `to` (a side effect): tagged approval, so a person approves
    each call, with its arguments shown, before it is made."""
    _log("call", config, to=to, amount=amount)
    return {"sent": amount, "to": to}


@tool
async def held_read(label: str, config: RunnableConfig) -> dict[str, Any]:
    """Read-only: wait until the file named by $TOOLPLAN_TEST_GATE exists, then return
    {"label": label}. Cancelled, it logs "released" and re-raises."""
    _log("start", config, label=label)
    path = os.environ.get("TOOLPLAN_TEST_GATE", "")
    try:
        while not path or not os.path.exists(path):
            await asyncio.sleep(0.01)
    except asyncio.CancelledError:
        _log("released", config, label=label)
        raise
    _log("end", config, label=label)
    return {"label": label}


@tool
async def put(key: str, value: Any, config: RunnableConfig, seconds: float = 0.0) -> dict[str, Any]:
    """Set `key` to `value` (a write on the resource kv), after `seconds`."""
    _log("start", config, key_arg=key)
    await asyncio.sleep(seconds)
    stored = records_for(config).insert("kv", {"key": key, "value": value})
    _log("end", config, key_arg=key)
    return {"key": key, "value": stored["value"]}


@tool
async def get(
    key: str, config: RunnableConfig, seconds: float = 0.0, wait: bool = False
) -> dict[str, Any]:
    """Read `key` (read-only, resource kv), after `seconds` (and, with `wait`, once the file
    named by $TOOLPLAN_TEST_GATE exists): {"key", "value"} (null if unset)."""
    _log("start", config, key_arg=key)
    await asyncio.sleep(seconds)
    path = os.environ.get("TOOLPLAN_TEST_GATE", "")
    while wait and not (path and os.path.exists(path)):
        await asyncio.sleep(0.01)
    found = records_for(config).find("kv", key=key)
    _log("end", config, key_arg=key)
    return {"key": key, "value": found[-1]["value"] if found else None}


@tool
async def notify(message: str, config: RunnableConfig, seconds: float = 0.0) -> dict[str, Any]:
    """Send `message` (a commutative write on the resource outbox), after `seconds`."""
    _log("start", config, message=message)
    await asyncio.sleep(seconds)
    records_for(config).insert("outbox", {"message": message})
    _log("end", config, message=message)
    return {"sent": message}


@tool
async def outbox(config: RunnableConfig, seconds: float = 0.0) -> dict[str, Any]:
    """The messages sent so far (read-only, resource outbox)."""
    _log("start", config)
    await asyncio.sleep(seconds)
    sent = [r["message"] for r in records_for(config).find("outbox")]
    _log("end", config)
    return {"messages": sent, "count": len(sent)}


for _logging_only in (sleepy, echo, text, business_error, flaky, hang, gate, gate_if, held):
    tagged(_logging_only, "commutative")
tagged(put, resource="kv")
tagged(get, "read-only", resource="kv", cache_ttl=3600)
tagged(notify, "commutative", resource="outbox")
tagged(outbox, "read-only", resource="outbox")
tagged(held_read, "read-only")
tagged(lookup, "read-only", cost_usd=0.001)
tagged(wire_money, "approval", "commutative", resource="bank")  # transfers add up in any order
tagged(lookup_hourly, "read-only", cache_ttl=3600)

TOOLS = [
    sleepy,
    echo,
    text,
    business_error,
    flaky,
    hang,
    gate,
    gate_if,
    held,
    held_read,
    lookup,
    lookup_hourly,
    wire_money,
    put,
    get,
    notify,
    outbox,
]
