"""CLI commands that live in their own modules (serve, batch, worker, ...).

Every module in this package is imported by :mod:`toolplan.cli` and registers its commands on
``toolplan.cli.app``. Keep heavy imports inside the command functions so ``toolplan --help``
stays fast.
"""
