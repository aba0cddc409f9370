#!/usr/bin/env bash
# Set up (idempotently) and run the whole test suite. This is the README's test command and
# what CI runs (.ci/run). Extra arguments go to pytest, e.g. `bash scripts/test.sh -k templates`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
