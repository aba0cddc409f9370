#!/usr/bin/env bash
# Install / locate jongodb, a native MongoDB wire-protocol server shipped as an
# npm package, for tests that need a live MongoDB endpoint (no real mongod is
# installable here).
#
#   scripts/jongodb.sh install   install into .toolplan-dev/jongodb (no-op if present)
#   scripts/jongodb.sh path      print the binary path (exit 1 if not installed)
#   scripts/jongodb.sh ensure    install if needed, then print the binary path
#   scripts/jongodb.sh version   print the pinned npm package version
#
# Environment:
#   TOOLPLAN_JONGODB_DIR   install prefix (default: <repo>/.toolplan-dev/jongodb)
set -euo pipefail

JONGODB_PKG="@jongodb/memory-server-bin-linux-x64-gnu"
JONGODB_VERSION="0.1.6"

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${script_dir}/.." && pwd)"
prefix="${TOOLPLAN_JONGODB_DIR:-${repo_root}/.toolplan-dev/jongodb}"
bin_path="${prefix}/node_modules/${JONGODB_PKG}/bin/jongodb"
stamp="${prefix}/.installed-version"

log() { printf 'jongodb.sh: %s\n' "$*" >&2; }

is_installed() {
    [ -x "${bin_path}" ] && [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${JONGODB_VERSION}" ]
}

do_install() {
    if is_installed; then
        return 0
    fi
    case "$(uname -s)-$(uname -m)" in
        Linux-x86_64) ;;
        *) log "unsupported platform $(uname -s)-$(uname -m); only linux-x64 (glibc) is packaged"; exit 1 ;;
    esac
    if ! command -v npm >/dev/null 2>&1; then
        log "npm not found; install Node.js/npm (e.g. apt-get install -y nodejs npm)"
        exit 1
    fi
    mkdir -p "${prefix}"
    # Keep the whole .toolplan-dev tree out of git even without a .gitignore entry.
    toolplan_dev="$(dirname "${prefix}")"
    if [ "$(basename "${toolplan_dev}")" = ".toolplan-dev" ] && [ ! -f "${toolplan_dev}/.gitignore" ]; then
        printf '*\n' >"${toolplan_dev}/.gitignore"
    fi
    # A package.json of its own stops npm from walking up to a parent project.
    if [ ! -f "${prefix}/package.json" ]; then
        printf '{"name":"toolplan-jongodb","private":true}\n' >"${prefix}/package.json"
    fi
    log "installing ${JONGODB_PKG}@${JONGODB_VERSION} into ${prefix}"
    npm install --prefix "${prefix}" --no-save --no-audit --no-fund \
        --loglevel=error --no-update-notifier \
        "${JONGODB_PKG}@${JONGODB_VERSION}" >/dev/null
    if [ ! -x "${bin_path}" ]; then
        if [ -f "${bin_path}" ]; then
            chmod +x "${bin_path}"
        else
            log "install finished but ${bin_path} is missing"
            exit 1
        fi
    fi
    printf '%s\n' "${JONGODB_VERSION}" >"${stamp}"
}

cmd="${1:-ensure}"
case "${cmd}" in
    install)
        do_install
        ;;
    path)
        if [ -x "${bin_path}" ]; then
            printf '%s\n' "${bin_path}"
        else
            log "not installed; run: scripts/jongodb.sh install"
            exit 1
        fi
        ;;
    ensure)
        do_install
        printf '%s\n' "${bin_path}"
        ;;
    version)
        printf '%s\n' "${JONGODB_VERSION}"
        ;;
    -h | --help | help)
        sed -n '2,13p' "$0"
        ;;
    *)
        log "unknown command: ${cmd} (expected install|path|ensure|version)"
        exit 2
        ;;
esac
