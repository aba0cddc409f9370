"""The options (and the query argument) that several commands share, with their help text."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "ApproveAllOption",
    "ByOption",
    "ConcurrencyOption",
    "FailFastOption",
    "FileOption",
    "JsonOption",
    "MaxRepairsOption",
    "MaxStepsOption",
    "McpOption",
    "ModelOption",
    "NoCacheOption",
    "NoInputOption",
    "QueryOption",
    "RequestIdOption",
    "StoreOption",
    "TemporalAddressOption",
    "ThresholdOption",
    "ToolsOption",
    "YesOption",
]

ToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tools",
        metavar="MODULE",
        help="Tool module exposing TOOLS (repeatable); built-ins: blog, metrics, weather. "
        "Default: $TOOLPLAN_TOOLS or all built-ins.",
    ),
]
McpOption = Annotated[
    Path | None,
    typer.Option(
        "--mcp",
        metavar="FILE",
        help="mcpServers JSON file: also load these MCP servers' tools (stdio or HTTP). "
        "Default: $TOOLPLAN_MCP.",
    ),
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="URI",
        help="Store URI (sqlite:///file.db, mongodb://host/db) or a SQLite file path "
        "(.db, .sqlite). Default: $TOOLPLAN_STORE, the project config, or .toolplan/toolplan.db "
        "in the nearest folder upwards that has one (else here).",
    ),
]
TemporalAddressOption = Annotated[
    str | None,
    typer.Option(
        "--temporal-address",
        help="Run plans as Temporal workflows on this server (host:port). "
        "Default: $TOOLPLAN_TEMPORAL_ADDRESS; unset: run them here.",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        "--concurrency", min=1, metavar="N", help="Most steps running at once (default 10)."
    ),
]
FailFastOption = Annotated[
    bool,
    typer.Option("--fail-fast", help="Stop at the first failed step instead of failing forward."),
]
NoCacheOption = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Call every tool: do not answer read-only tools from the result cache.",
    ),
]
MaxStepsOption = Annotated[
    int | None,
    typer.Option(
        "--max-steps", min=1, metavar="N", help="Reject plans with more steps (default 50)."
    ),
]
FileOption = Annotated[
    Path | None,
    typer.Option(
        "--file", "-f", metavar="FILE", help="Plan JSON file (canonical or seed-002 form)."
    ),
]
QueryOption = Annotated[
    str | None,
    typer.Option("--query", metavar="TEXT", help="The request text to store with the plan."),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Run plans stored as needs_review.")]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="PROVIDER:MODEL",
        help="provider:model for planning, or test: plan offline by fixed rules (default "
        "$TOOLPLAN_MODEL or openai:gpt-4o-mini).",
    ),
]
RequestIdOption = Annotated[
    str | None,
    typer.Option(
        "--request-id", metavar="REQ_ID", help="Add the plan as a new version of this request."
    ),
]
MaxRepairsOption = Annotated[
    int | None,
    typer.Option(
        "--max-repairs",
        min=0,
        metavar="N",
        help="LLM repair attempts for invalid plans (default 3).",
    ),
]
ThresholdOption = Annotated[
    float | None,
    typer.Option(
        "--confidence-threshold",
        metavar="0..1",
        min=0,
        max=1,
        help="Plans whose lowest step confidence is below this are stored as needs_review (default 0.5).",
    ),
]
ApproveAllOption = Annotated[
    bool,
    typer.Option(
        "--approve-all",
        help="Pre-approve every step: none waits for a person (steps tagged approval, "
        '"approval": true, MCP destructiveHint). For scripts and tests.',
    ),
]
NoInputOption = Annotated[
    bool,
    typer.Option(
        "--no-input",
        help="Never ask on the terminal: steps that wait for approval stay waiting (exit 4).",
    ),
]
ByOption = Annotated[
    str | None,
    typer.Option(
        "--by", metavar="NAME", help="Who decides, stored with the decision (default: the OS user)."
    ),
]
