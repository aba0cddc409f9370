"""Example tools for the README's approval section: ``toolplan run --file examples/wire.json
--tools examples.tools`` (from the repository root, with ``PYTHONPATH=.``).

``wire_money`` stands for any tool with a side effect a person should see first: it is tagged
``approval``, so a plan that calls it waits with the exact arguments until someone approves or
denies the step. Nothing here touches a bank: the "transfer" is only returned.
"""

from __future__ import annotations

import asyncio
from typing import Any

from typing_extensions import TypedDict

from toolplan import tagged

__all__ = ["TOOLS", "echo", "sleepy", "wire_money"]


class Transfer(TypedDict):
    """What a transfer returns: the amount sent and the account it went to."""

    sent: float
    to: str


class Slept(TypedDict):
    """What ``sleepy`` returns: its label and how long it slept."""

    label: str
    slept: float


def echo(value: Any) -> Any:
    """Return `value` unchanged (any JSON)."""
    return value


async def sleepy(label: str, seconds: float = 0.0) -> Slept:
    """Wait `seconds`, then return the label: an independent step that runs meanwhile."""
    await asyncio.sleep(seconds)
    return {"label": label, "slept": seconds}


def wire_money(to: str, amount: float) -> Transfer:
    """Send `amount` to the account `to` (pretend: it only returns the transfer). A side effect
    a person approves first, with the arguments shown."""
    return {"sent": float(amount), "to": to}


tagged(wire_money, "approval")

TOOLS = [echo, sleepy, wire_money]
