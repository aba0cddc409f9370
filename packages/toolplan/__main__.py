"""``python -m toolplan`` runs the CLI."""

from toolplan.cli import main

main()
