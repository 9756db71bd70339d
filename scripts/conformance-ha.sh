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
echo "=== after killing NATS node 1 and a Redis master"
./scripts/conformance.sh --url "$MCPFLEET_CLUSTER_URL" "$@" || status=$?
./scripts/cluster-ha.sh stop || echo "conformance-ha: stopping the cluster failed (exit $?)" >&2
trap - EXIT
exit "$status"
