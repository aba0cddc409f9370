#!/usr/bin/env bash
# Set up (idempotently) and run the whole test suite. This is the README's test command and
# what CI runs (.ci/run). Extra arguments go to pytest, e.g. `bash scripts/test.sh -k templates`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e '.[dev]'
# The MongoDB tests run on jongodb, a real wire-protocol server from npm; install it up front so a
# missing npm fails here, loudly, instead of in the middle of the run.
bash scripts/jongodb.sh install
exec python -m pytest "$@"
