#!/usr/bin/env bash
# Runs the conformance suite, both requirement sets, through nginx against
# the cluster topology of scripts/cluster.sh (started on free ports, stopped
# afterwards). The expected totals are those of the all-in-one. The exit
# status is the suite's: stopping the cluster cannot change it.
set -euo pipefail
cd "$(dirname "$0")/.."
export MCPFLEET_CLUSTER_DIR=$PWD/.cache/cluster-conformance MCPFLEET_CLUSTER_PORT=0
trap './scripts/cluster.sh stop || true' EXIT
./scripts/cluster.sh start
# shellcheck disable=SC1091
. "$MCPFLEET_CLUSTER_DIR/env"
status=0
./scripts/conformance.sh --url "$MCPFLEET_CLUSTER_URL" "$@" || status=$?
./scripts/cluster.sh stop || echo "conformance-cluster: stopping the cluster failed (exit $?)" >&2
trap - EXIT
exit "$status"
