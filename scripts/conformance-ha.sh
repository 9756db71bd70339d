#!/usr/bin/env bash
# Runs the conformance suite, both requirement sets, through nginx against
# the topology of scripts/cluster-ha.sh (a 3-node NATS cluster and a Redis
# Cluster of 3 masters and 3 replicas; free ports), then kills one NATS
# node and one Redis master (waiting until a replica took over) and runs
# both sets again: the cluster keeps serving. The exit status is the
# suite's.
set -euo pipefail
cd "$(dirname "$0")/.."
export MCPFLEET_CLUSTER_DIR=$PWD/.cache/cluster-ha-conformance MCPFLEET_CLUSTER_PORT=0
trap './scripts/cluster-ha.sh stop || true' EXIT
./scripts/cluster-ha.sh start
# shellcheck disable=SC1091
. "$MCPFLEET_CLUSTER_DIR/env"
status=0
./scripts/conformance.sh --url "$MCPFLEET_CLUSTER_URL" "$@" || status=$?
./scripts/cluster-ha.sh kill-nats 1 || status=1
./scripts/cluster-ha.sh kill-master || status=1
# Calls for the dead master's slots fail fast (503, -32603 "retry") until
# the frontends' slot maps find its promoted replica (at most a second
# later): wait until 20 initializes in a row succeed through nginx.
t0=$(date +%s%N) ok=0
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"conformance-ha","version":"1"}}}'
for _ in $(seq 1 300); do
  if curl -fsS -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    --max-time 5 -d "$init" "$MCPFLEET_CLUSTER_URL"; then
    ok=$((ok + 1))
    [ $ok -ge 20 ] && break
  else
    ok=0
    sleep 0.1
  fi
done
if [ $ok -lt 20 ]; then
  echo "conformance-ha: the cluster did not serve again within the bound" >&2
  status=1
fi
echo "conformance-ha: serving again $((($(date +%s%N) - t0) / 1000000)) ms after the Redis Cluster reported ok"
echo "=== after killing NATS node 1 and a Redis master"
./scripts/conformance.sh --url "$MCPFLEET_CLUSTER_URL" "$@" || status=$?
./scripts/cluster-ha.sh stop || echo "conformance-ha: stopping the cluster failed (exit $?)" >&2
trap - EXIT
exit "$status"
