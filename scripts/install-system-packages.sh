#!/usr/bin/env bash
# Install the system packages the tests need, when they are missing:
# Debian's chromium (browser tests, driven by playwright-core), tmux (the
# workshop's menu test in a real terminal) and siege (bench/chat-server.js
# runs the seed's load test with it; its smoke test too) and PostgreSQL's
# server binaries (the postgres backend's tests start a throwaway cluster with
# initdb and pg_ctl). Runs before `npm test`; does nothing when all are there.
# Set LEVELKIT_CHROMIUM to use another Chromium, LEVELKIT_PG_URL to test the
# postgres backend on a running server instead.
# With --failover (npm run test:failover), also Patroni and etcd, which only
# the failover test starts: npm test does not install them.
set -euo pipefail

failover=false
for arg in "$@"; do
  case "$arg" in
    --failover) failover=true ;;
    *) echo "install-system-packages.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

missing=()
if [ -z "${LEVELKIT_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then missing+=(chromium); fi
if ! command -v tmux >/dev/null 2>&1; then missing+=(tmux); fi
if ! command -v siege >/dev/null 2>&1; then missing+=(siege); fi
# Debian puts initdb and pg_ctl under /usr/lib/postgresql/<version>/bin, not on PATH.
has_postgres_server () {
  local dir
  if command -v pg_config >/dev/null 2>&1; then
    dir=$(pg_config --bindir 2>/dev/null || true)
    if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then return 0; fi
  fi
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then return 0; fi
  done
  return 1
}
if [ -z "${LEVELKIT_PG_URL:-}" ] && ! has_postgres_server; then missing+=(postgresql); fi
if $failover; then
  # The failover test's cluster is its own, whatever LEVELKIT_PG_URL says.
  if [ -n "${LEVELKIT_PG_URL:-}" ] && ! has_postgres_server; then missing+=(postgresql); fi
  if ! command -v patroni >/dev/null 2>&1; then missing+=(patroni); fi
  if ! command -v etcd >/dev/null 2>&1; then missing+=(etcd-server); fi
fi
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi

echo "Installing ${missing[*]} from Debian's packages (needed by the tests)..." >&2
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "Cannot install ${missing[*]}: run as root, or install them yourself (apt-get install ${missing[*]})." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "No apt-get here: install ${missing[*]} with your system's package manager (or set LEVELKIT_CHROMIUM)." >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
echo "Installed ${missing[*]}." >&2
