"""What every command prints, and how it ends: the consoles, ``--json`` output, the exit-code
contract for failures (:func:`guard`) and for executions (:func:`finish_execution`)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import click
import typer
from rich.markup import escape

from toolplan.cli import render
from toolplan.cli.console import PipeConsole, stop_writing
from toolplan.engine.result import ExecutionResult
from toolplan.errors import ToolplanError

__all__ = [
    "DEBUG_ENV",
    "emit_json",
    "finish_decision",
    "finish_execution",
    "guard",
    "run_async",
    "stderr",
    "stdout",
]

stdout = PipeConsole(soft_wrap=True)
stderr = PipeConsole(stderr=True, soft_wrap=True)

T = TypeVar("T")

DEBUG_ENV = "TOOLPLAN_DEBUG"
"""Set to print the traceback of an internal error (a bug) on stderr."""


def emit_json(data: Any) -> None:
    """Print ``data`` as exactly one JSON line on stdout; a reader that left is not an error."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    try:
        try:
            sys.stdout.write(text + "\n")
        except UnicodeEncodeError:
            # A lone surrogate (from a tool's output, say) cannot be written as UTF-8; JSON
            # escapes still carry it, so stdout stays one valid JSON object.
            sys.stdout.write(json.dumps(data, ensure_ascii=True, default=str) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| head`); the caller's exit code still holds
        stop_writing(sys.stdout)


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no message)"


def guard(
    body: Callable[[], T], *, as_json: bool, plan_id: Callable[[], str | None] | None = None
) -> T:
    """Turn predictable failures into a clear message and the contract's exit code.

    ``plan_id`` tells the plan being executed, if any, for the hint after Ctrl-C."""
    try:
        return body()
    except ToolplanError as error:
        if as_json:
            payload: dict[str, Any] = {
                **error.details,
                "error": error.message,
                "exitCode": error.exit_code,
            }
            issues = getattr(error, "issues", None)
            if issues:
                payload["issues"] = [
                    {"code": i.code, "message": i.message, "step": i.step} for i in issues
                ]
            emit_json(payload)
        stderr.print(f"[bold red]error:[/] {escape(error.message)}", highlight=False)
        raise typer.Exit(error.exit_code) from None
    except KeyboardInterrupt:
        interrupted = plan_id() if plan_id is not None else None
        if interrupted:
            stderr.print(
                "interrupted; finished steps are stored — resume with "
                f"`toolplan execute {interrupted}`",
                highlight=False,
            )
        else:
            stderr.print("interrupted", highlight=False)
        raise typer.Exit(130) from None
    except (typer.Exit, typer.Abort, click.exceptions.ClickException):
        raise
    except Exception as error:
        # A bug, not a predictable failure: still one line (and one JSON object with --json);
        # the traceback only on request.
        message = (
            f"internal error: {type(error).__name__}: {_one_line(str(error))[:500]} "
            f"(a bug in toolplan; set {DEBUG_ENV}=1 for the traceback)"
        )
        if as_json:
            emit_json({"error": message, "exitCode": 1})
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        stderr.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
        raise typer.Exit(1) from None


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one command's coroutine to its end on a new event loop."""
    return asyncio.run(coroutine)


def finish_execution(result: ExecutionResult, *, as_json: bool, store_uri: str) -> None:
    """Print an execution's result (table or JSON) and exit with its code."""
    if as_json:
        emit_json(result.to_json())
    else:
        render.print_execution(stdout, result)
        stdout.print(f"stored in {store_uri} — inspect with: toolplan show {result.plan_id}")
        if result.status == "cancelled":
            stdout.print(
                f"it was cancelled; continue it with: toolplan execute {result.plan_id} --resume"
            )
        for line in render.waiting_lines(result) if result.status == "waiting" else ():
            stdout.print(line, highlight=False, markup=False)
    raise typer.Exit(result.exit_code)


def finish_decision(result: ExecutionResult, *, as_json: bool, store_uri: str) -> None:
    """How ``toolplan approve`` / ``deny`` end: the execution they continued (as
    :func:`finish_execution`), or, handed to workers, what is queued (exit 0)."""
    if result.status != "queued":
        finish_execution(result, as_json=as_json, store_uri=store_uri)
    if as_json:
        emit_json(result.to_json())
    else:
        stdout.print(
            f"recorded; queued {result.plan_id} in {store_uri}: a `toolplan worker` continues it",
            highlight=False,
        )
    raise typer.Exit(0)
