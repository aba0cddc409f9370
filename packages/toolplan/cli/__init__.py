"""The ``toolplan`` command line: a thin layer over :mod:`toolplan.service.operations`.

One module per command (``submit.py``, ``execute.py``, ``run.py``, ...; the ``cache`` group in
``cache.py``), registered here, in the order ``toolplan --help`` lists them, on the one Typer
:data:`app`. What several commands share lives below them: the options (:mod:`.options`), the
session (:mod:`.session`: settings, store, catalog) and the output with its exit codes
(:mod:`.output`). Command modules import only those, never this package or one another. Heavy
dependencies are imported inside the command functions, so ``toolplan --help`` stays fast.

Exit codes: 0 all steps succeeded · 1 some step failed or was skipped · 2 invalid input, nothing
executed · 3 infrastructure unavailable (store, LLM) · 4 steps wait for a person's approval
(``toolplan approve`` / ``deny``) · 130 interrupted. A reader that goes away
(``toolplan run ... | head -2``, or stderr closed) changes neither the run nor the exit code: the
plan runs to its end, is recorded as it ended, and the command exits quietly with that outcome's
code (:mod:`toolplan.cli.console`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from toolplan.cli import (
    approve,
    batch,
    cache,
    cancel,
    deny,
    execute,
    listing,
    plan,
    run,
    serve,
    show,
    submit,
    tools,
    worker,
)
from toolplan.cli._help import use_metavars
from toolplan.cli.output import stdout

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolplan",
    help="Plan-then-execute tool orchestration: validate, store and run DAGs of tool calls.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
use_metavars()


def _print_version(value: bool) -> None:
    if value:
        from toolplan import __version__

        stdout.print(f"toolplan {__version__}", highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Plan-then-execute tool orchestration: validate, store and run DAGs of tool calls."""


# Each command with its one line for ``toolplan -h``, which otherwise cuts docstrings at 80
# columns; the order is the help's.
app.command(short_help="Validate a plan file and store it; nothing runs.")(submit.submit)
app.command(short_help="Run a stored plan, or resume it after a crash.")(execute.execute)
app.command(short_help="Plan a query (or take --file), store it and execute it.")(run.run)
app.command(short_help="Plan a query with the LLM, validate and store it.")(plan.plan)
app.command(short_help="Show a plan and its execution, or a request and its plans.")(show.show)
app.command("list", short_help="List stored plans, newest first.")(listing.list_plans)
app.command()(cancel.cancel)
app.command(short_help="Approve steps waiting for a person and continue the execution.")(
    approve.approve
)
app.command(short_help="Deny a step waiting for a person; its dependents are skipped.")(deny.deny)
app.add_typer(cache.cache_app, name="cache")
app.command("tools", short_help="List the tools plans can use, or show one: toolplan tools NAME.")(
    tools.list_tools
)
app.command(short_help="Plan, and with --execute run, every query of a file.")(batch.batch)
app.command("serve", short_help="Serve the GraphQL API.")(serve.serve)
app.command(short_help="Run queued executions until stopped.")(worker.worker)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
