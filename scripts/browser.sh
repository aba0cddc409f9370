#!/usr/bin/env bash
# Install the browser the plan-page tests drive (tests/e2e/test_plan_page.py): Debian's
# `chromium`, which Playwright launches from /usr/bin/chromium (Playwright's own browser download
# cannot work here). Called by scripts/setup.sh, so `.ci/run` installs it from a fresh clone.
# Idempotent and quick when chromium is already there; fails loudly when it cannot install it.
set -euo pipefail
CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
fail() {
  echo "browser.sh: $1" >&2
  echo "browser.sh: the plan-page browser tests need $CHROMIUM (apt-get install chromium)" >&2
  exit 1
}
command -v apt-get >/dev/null || fail "no apt-get: install Chromium at $CHROMIUM yourself"
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo -n)
else
  fail "not root and no sudo: cannot install chromium"
fi
echo "browser.sh: installing chromium (apt-get)" >&2
"${as_root[@]}" apt-get update -qq || fail "apt-get update failed"
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
  chromium >/dev/null || fail "apt-get install chromium failed"
[ -x "$CHROMIUM" ] || fail "apt-get installed chromium, but $CHROMIUM is not there"
"$CHROMIUM" --version >&2 || fail "$CHROMIUM does not run"
