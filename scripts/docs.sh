#!/usr/bin/env bash
# Build the documentation site (mkdocs.yml, docs/) strictly, and fail on any warning: strict mode
# fails on the warnings MkDocs counts (a broken link or anchor, a page outside the nav), and the
# output is read for any other WARNING a plugin logs. Never `--quiet`: it hides the very warnings
# strict mode counts, and the build then passes with them. Extra arguments go to `mkdocs build`
# (`--site-dir DIR`). What .ci/run and tests/e2e/test_docs_site.py run.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdocs="${MKDOCS:-.venv/bin/mkdocs}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# NO_MKDOCS_2_WARNING: Material's banner about its end of life, printed on every build.
NO_MKDOCS_2_WARNING=1 "$mkdocs" build --strict "$@" 2>&1 | tee "$log"
if grep -q "WARNING" "$log"; then
  echo "docs.sh: the docs build warned (above); fix every warning" >&2
  exit 1
fi
