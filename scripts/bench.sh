#!/usr/bin/env bash
# make bench: mcpfleet side by side with the peer Go MCP servers of
# bench/peers (go-sdk, mcp-go, a bare net/http floor; their own Go module,
# see bench/peers/README.md), then the scale figures, what durable delivery
# and tracing cost, then the project's targets with PASS/FAIL (issue 21's,
# at c=64). mcpfleet runs as the all-in-one, as a cluster of 4 processes
# (a frontend, a worker, nats-server, redis-server) and as a cluster of 2
# frontends and 2 workers with each request of a session sent to the other
# frontend than the last (no sticky routing); the clusters' CPU is summed
# over all their processes and also shown per kind of process, with the
# Redis commands per request. The report ends with a chart,
# $BENCH_OUT/chart.svg: req/s and CPU per request at c=64 of each
# configuration and peer, legacy and modern.
#
# Every configuration calls the echo tool at each concurrency of
# BENCH_CONCURRENCY with `mcpfleet bench`; every server is started here, on
# free loopback ports, and stopped here by its PID; every run is bounded by
# `timeout`. A missed target does not fail the script; an error does
# (exit 1, after the report).
#
# Environment (defaults in brackets):
#   BENCH_DURATION       measured time of each run [5s]
#   BENCH_WARMUP         warm-up of each run [1s]
#   BENCH_CONCURRENCY    concurrencies ["1 16 64"]
#   BENCH_ROUNDS         how many times the servers of a protocol take the load
#                        in turns at c=64, the targets' concurrency [3]: the
#                        report shows each configuration's median round, and
#                        a target's ratio is the median of the rounds' ratios
#                        (each round against the same round of mcp-go)
#   BENCH_IDLE_SESSIONS  idle legacy sessions [10000] (at 1000, an idle session is
#                        ~140 B of heap against ~1 MiB of RSS noise from the GC)
#   BENCH_LISTENS        idle listen streams, and fan-out streams [10000]
#   BENCH_FANOUT_EVENTS  touch_resource events of the fan-out [20]
#   BENCH_OUT            results (results.jsonl), the chart (chart.svg) and
#                        server logs [.cache/bench]
#   BENCH_SECTIONS       what to run, of "throughput scale durable tracing"
#                        [all four]
#   BENCH_PROFILE        1: after the rounds at c=64, one more run of each
#                        mcpfleet configuration under `perf record -g` of its
#                        processes (not counted in the results), sorted into
#                        buckets of work per kind of process by
#                        scripts/perfbuckets: $BENCH_OUT/profile-*.txt [0]
#                        (scripts/bench_profile.sh).
#                        Needs perf (`make bench` installs Debian's linux-perf)
#                        and leave to profile (root, or
#                        kernel.perf_event_paranoid <= 1)
#
# The OTEL_* variables of the caller's environment are dropped: only the
# tracing section sets them, for the runs that trace.
set -uo pipefail
unset "${!OTEL_@}"
cd "$(dirname "$0")/.."
root=$PWD

DUR=${BENCH_DURATION:-5s}
WARM=${BENCH_WARMUP:-1s}
CONCS=${BENCH_CONCURRENCY:-"1 16 64"}
ROUNDS=${BENCH_ROUNDS:-3}
PROFILE=${BENCH_PROFILE:-0}
TARGET_C=64 # the concurrency of the targets and the chart (mcpfleet bench report -c)
IDLE_SESSIONS=${BENCH_IDLE_SESSIONS:-10000}
LISTENS=${BENCH_LISTENS:-10000}
EVENTS=${BENCH_FANOUT_EVENTS:-20}
PEERS=$root/bench/peers
OUT=${BENCH_OUT:-$root/.cache/bench}
SECTIONS=${BENCH_SECTIONS:-"throughput scale durable tracing"}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }

GOBIN=$(go env GOPATH)/bin
NATS=$(command -v nats-server || echo "$GOBIN/nats-server")
REDIS=$(command -v redis-server || echo /usr/bin/redis-server)

die() { echo "bench: $*" >&2; exit 1; }
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "BENCH_ROUNDS must be a positive integer, not '$ROUNDS'"
errors=0
fail() { echo "bench: ERROR: $*" >&2; errors=$((errors + 1)); }

[ -f "$PEERS/go.mod" ] || die "$PEERS is missing (the peer servers)"
[ -x "$NATS" ] || die "nats-server is missing; run 'make deps'"
[ -x "$REDIS" ] || die "redis-server is missing; run 'make deps'"
# shellcheck source=scripts/bench_profile.sh
. "$root/scripts/bench_profile.sh"
[ "$PROFILE" = 1 ] && profile_check

# ms DURATION: a Go duration (5s, 500ms, 1m30s) in milliseconds.
ms() {
  local d=$1 total=0 n unit
  while [[ $d =~ ^([0-9]+)(ms|s|m|h)(.*)$ ]]; do
    n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]} d=${BASH_REMATCH[3]}
    case $unit in
      ms) total=$((total + n)) ;;
      s) total=$((total + 1000 * n)) ;;
      m) total=$((total + 60000 * n)) ;;
      h) total=$((total + 3600000 * n)) ;;
    esac
  done
  [ -z "$d" ] || die "cannot read the duration '$1' (use whole units: 5s, 500ms, 1m)"
  echo "$total"
}
# secs DURATION: the same in whole seconds, rounded up.
secs() { echo $((($(ms "$1") + 999) / 1000)); }
RUN_TIMEOUT=$(($(secs "$DUR") + $(secs "$WARM") + 60))
SCALE_TIMEOUT=300

# 10,000 sockets need as many open files, here and in the frontends.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

work=$(mktemp -d "${TMPDIR:-/tmp}/mcpfleet-bench.XXXXXX")
bin=$work/bin
logs=$OUT/logs
results=$OUT/results.jsonl
chart=$OUT/chart.svg
mkdir -p "$bin" "$logs"
rm -f "$logs"/*.log "$results" "$chart"

# Processes started here: "pid" entries, removed once stopped and reaped.
PIDS=()
start() { # NAME COMMAND...: runs it in the background; sets PID
  local name=$1
  shift
  "$@" >"$logs/$name.log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
}
stop() { # PID...: SIGTERM, up to 5 s, then SIGKILL; reaps them
  local p q alive keep=()
  [ $# -gt 0 ] || return 0
  for p in "$@"; do kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 50); do
    alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "$@"; do
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  for q in "${PIDS[@]}"; do
    alive=1
    for p in "$@"; do [ "$q" = "$p" ] && alive=0; done
    [ $alive = 1 ] && keep+=("$q")
  done
  PIDS=("${keep[@]}")
}
cleanup() {
  stop "${PIDS[@]}"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "bench: interrupted" >&2; exit 130' INT TERM

free_port() { # a loopback port below the ephemeral range that nothing listens on
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
wait_port() { # PORT PID
  for _ in $(seq 100); do
    kill -0 "$2" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
wait_log() { # LOG PID REGEX: waits until the log matches; prints the match
  local m
  for _ in $(seq 200); do
    m=$(grep -o -m1 -E "$3" "$1" 2>/dev/null | head -1)
    [ -n "$m" ] && { echo "$m"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
serving_url() { # LOG PID: the MCP URL an mcpfleet process serves
  local m
  m=$(wait_log "$1" "$2" 'msg="mcpfleet serving" url=[^ ]+') || return 1
  echo "${m##*url=}"
}

bench() { # mcpfleet bench flags...; appends to results.jsonl
  timeout -k 5 "$RUN_TIMEOUT" "$bin/mcpfleet" bench -quiet -jsonl "$results" "$@" ||
    fail "mcpfleet bench $* exited with status $?"
}
scale() {
  timeout -k 5 "$SCALE_TIMEOUT" "$bin/mcpfleet" bench -jsonl "$results" "$@" ||
    fail "mcpfleet bench $* exited with status $?"
}
# What every mcpfleet server of the throughput runs has on, recorded with
# each result and noted under the report's table. Durable delivery (issue
# 18) cannot be turned off. Tracing is as issue 21 asks its targets to be
# measured: the exporter configured, no request sampled
# (OTEL_TRACES_SAMPLER=always_off; SERVER_ENV, set by the throughput
# section). With nothing sampled nothing is sent, so its endpoint is a
# loopback port nothing listens on; the tracing section checks with a real
# Jaeger that always_off sends nothing, and measures tracing off and on.
FEATURES="durable delivery on (always), tracing exporter configured with OTEL_TRACES_SAMPLER=always_off, access log off (--access-log=false)"
# SERVER_ENV: "KEY=value" entries added to the environment of every
# mcpfleet server started (all-in-ones, frontends, workers).
SERVER_ENV=()

echo "== mcpfleet bench: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "$(go version); kernel $(uname -r); $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); $(nproc) cores shared by servers and load generator"
echo "duration ${DUR} + warm-up ${WARM} per run; concurrency ${CONCS}, ${ROUNDS} round(s) at c=${TARGET_C}; open files limit $(ulimit -n); results in $results"
echo "mcpfleet servers run with --access-log=false (the peers write no access log) and tracing off unless a section says otherwise"
[[ " $CONCS " == *" $TARGET_C "* ]] || echo "note: the targets and the chart are at c=$TARGET_C, which BENCH_CONCURRENCY does not include: they will say MISSING"

echo "== building"
(cd "$PEERS" && go build -o "$bin/" ./cmd/gosdkserver ./cmd/mcpgoserver ./cmd/floorserver) || die "building the peer servers"
go build -o "$bin/" ./cmd/mcpfleet ./cmd/frontend ./cmd/worker || die "building mcpfleet"
if [ "$PROFILE" = 1 ]; then go build -o "$bin/" ./scripts/perfbuckets || die "building scripts/perfbuckets"; fi
grep -E 'mark3labs/mcp-go|modelcontextprotocol/go-sdk' "$PEERS/go.mod" | sed 's/^[[:space:]]*/peer: /'
echo "nats-server: $("$NATS" --version 2>&1 | head -1); redis-server: $("$REDIS" --version | head -1 | cut -d' ' -f3)"

STATE_KEY=$(head -c 32 /dev/urandom | base64)

# aio NAME [ARGS...]: starts an all-in-one, with the variables of the
# AIO_ENV array ("KEY=value") added to its environment; sets AIO_PID,
# AIO_URL and AIO_METRICS (its admin listener's /metrics, where the scale
# runs read its goroutines).
AIO_ENV=()
aio_up() {
  local name=$1 ap
  shift
  ap=$(free_port) || { fail "no free port"; return 1; }
  AIO_METRICS=http://127.0.0.1:$ap/metrics
  start "$name" env MCPFLEET_STATE_KEY="$STATE_KEY" "${SERVER_ENV[@]}" "${AIO_ENV[@]}" "$bin/mcpfleet" serve --listen 127.0.0.1:0 --admin-listen "127.0.0.1:$ap" --access-log=false --drain-timeout 2s "$@"
  AIO_PID=$PID
  AIO_URL=$(serving_url "$logs/$name.log" "$PID") || {
    fail "$name did not start; see $logs/$name.log"
    stop "$AIO_PID"
    return 1
  }
}

# cluster_up NAME FRONTENDS WORKERS [FRONTEND ARGS...]: nats-server,
# redis-server, WORKERS workers and FRONTENDS frontends. Sets CL_URLS (comma
# list), CL_FE_PIDS (array), CL_PIDS (comma list KIND:PID of every process:
# nats-server, redis-server, worker, frontend), CL_REDIS, CL_ALL (array).
cluster_up() {
  local name=$1 nfe=$2 nw=$3 np rp i url ap
  shift 3
  CL_URLS="" CL_FE_PIDS=() CL_ALL=()
  np=$(free_port) && rp=$(free_port) || { fail "no free port"; return 1; }
  printf 'listen: 127.0.0.1:%s\nmax_payload: 8MB\n' "$np" >"$work/$name-nats.conf"
  start "$name-nats" "$NATS" -c "$work/$name-nats.conf"
  local nats_pid=$PID
  mkdir -p "$work/$name-redis"
  start "$name-redis" "$REDIS" --bind 127.0.0.1 --port "$rp" --dir "$work/$name-redis" \
    --appendonly yes --appendfsync everysec --save ""
  local redis_pid=$PID
  CL_ALL=("$nats_pid" "$redis_pid")
  if ! wait_port "$np" "$nats_pid" || ! wait_port "$rp" "$redis_pid"; then
    fail "$name: nats-server or redis-server did not start; see $logs/$name-*.log"
    stop "${CL_ALL[@]}"
    return 1
  fi
  CL_REDIS=redis://127.0.0.1:$rp/0
  CL_PIDS="nats-server:$nats_pid,redis-server:$redis_pid"
  for i in $(seq "$nw"); do
    start "$name-worker$i" env MCPFLEET_STATE_KEY="$STATE_KEY" "${SERVER_ENV[@]}" "$bin/worker" --nats-url "nats://127.0.0.1:$np" --drain-timeout 2s --log-format text
    CL_ALL+=("$PID")
    CL_PIDS="$CL_PIDS,worker:$PID"
    if ! wait_log "$logs/$name-worker$i.log" "$PID" 'msg="worker serving"' >/dev/null; then
      fail "$name: worker $i did not start; see $logs/$name-worker$i.log"
      stop "${CL_ALL[@]}"
      return 1
    fi
  done
  CL_FE_METRICS=()
  for i in $(seq "$nfe"); do
    ap=$(free_port) || { fail "no free port"; stop "${CL_ALL[@]}"; return 1; }
    CL_FE_METRICS+=("http://127.0.0.1:$ap/metrics")
    start "$name-frontend$i" env "${SERVER_ENV[@]}" "$bin/frontend" --listen 127.0.0.1:0 --admin-listen "127.0.0.1:$ap" --drain-delay 0 --access-log=false --log-format text --nats-url "nats://127.0.0.1:$np" \
      --redis-url "$CL_REDIS" --drain-timeout 2s "$@"
    CL_ALL+=("$PID")
    CL_FE_PIDS+=("$PID")
    CL_PIDS="$CL_PIDS,frontend:$PID"
    if ! url=$(serving_url "$logs/$name-frontend$i.log" "$PID"); then
      fail "$name: frontend $i did not start; see $logs/$name-frontend$i.log"
      stop "${CL_ALL[@]}"
      return 1
    fi
    CL_URLS=${CL_URLS:+$CL_URLS,}$url
  done
}
cluster_down() { # frontends and worker drain first, then nats-server and redis-server
  stop "${CL_ALL[@]:2}"
  stop "${CL_ALL[@]:0:2}"
}

# The configurations and peers of a protocol all run side by side, idle
# but for the one under load, and take the load in turns at each
# concurrency: a ratio to mcp-go compares runs at most four runs apart, so a
# change of the machine's speed (other work on its cores, which moves
# every figure by a fifth or more within minutes) falls on both alike.
# At c=$TARGET_C the turns are repeated ROUNDS times; the report pairs
# round k of each server with round k of mcp-go and takes the median of
# the rounds' ratios (internal/loadgen/rounds.go).
# T_* hold the servers of the round: label, URL(s), PIDs (KIND:PID list),
# extra mcpfleet bench flags (no spaces inside a flag's value), and
# whether they are mcpfleet servers (which get -features).
T_LABEL=() T_URL=() T_PID=() T_ARGS=() T_FEAT=() T_STOP=() T_STOP_LAST=()
t_add() { # LABEL URL PIDS ARGS FEATURES(0/1)
  T_LABEL+=("$1") T_URL+=("$2") T_PID+=("$3") T_ARGS+=("$4") T_FEAT+=("$5")
}
peer_up() { # LABEL PROTO BINARY ARGS...: starts a peer server and adds it to the round
  local label=$1 proto=$2 port
  shift 2
  port=$(free_port) || { fail "no free port"; return 1; }
  start "$label-$proto" "$@" -addr "127.0.0.1:$port"
  T_STOP+=("$PID")
  if ! wait_port "$port" "$PID"; then
    fail "$label did not start; see $logs/$label-$proto.log"
    return 1
  fi
  t_add "$label" "http://127.0.0.1:$port/mcp" "$PID" "" 0
}
cluster_add() { # LABEL NAME FRONTENDS WORKERS [BENCH FLAGS...]: a cluster in the round
  local label=$1 name=$2 nfe=$3 nw=$4
  shift 4
  cluster_up "$name" "$nfe" "$nw" || return 1
  # Frontends and workers drain first, then nats-server and redis-server.
  T_STOP+=("${CL_ALL[@]:2}")
  T_STOP_LAST+=("${CL_ALL[@]:0:2}")
  t_add "$label" "$CL_URLS" "$CL_PIDS" "-redis $CL_REDIS $*" 1
}

if want throughput; then
echo "== throughput and latency: echo tool, c = $CONCS (the servers of a protocol take the load in turns; $ROUNDS round(s) at c=$TARGET_C)"
otlp_port=$(free_port) || die "no free port"
SERVER_ENV=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$otlp_port" OTEL_TRACES_SAMPLER=always_off)
for proto in legacy modern; do
  T_LABEL=() T_URL=() T_PID=() T_ARGS=() T_FEAT=() T_STOP=() T_STOP_LAST=()
  if aio_up "mcpfleet-aio-$proto"; then
    T_STOP+=("$AIO_PID")
    t_add mcpfleet-aio "$AIO_URL" "$AIO_PID" "" 1
  fi
  # CPU summed over nats-server, redis-server, the worker and the
  # frontend, and per kind; Redis commands counted over each window.
  cluster_add mcpfleet-cluster "cluster-$proto" 1 1
  # As deployed behind a load balancer without sticky routing: 2
  # frontends, 2 workers, every request of a session on the other
  # frontend than its last; CPU of all six processes.
  cluster_add mcpfleet-cluster-2fe2w "cluster2-$proto" 2 2 -alternate
  case $proto in
    legacy)
      peer_up go-sdk legacy "$bin/gosdkserver"  # stateful, SSE replies
      peer_up mcp-go legacy "$bin/mcpgoserver"  # default mode
      peer_up floor legacy "$bin/floorserver"   # not MCP: bare net/http + encoding/json
      ;;
    modern)
      peer_up go-sdk modern "$bin/gosdkserver" -stateless  # the 2026-07-28 path
      peer_up mcp-go modern "$bin/mcpgoserver"
      ;;
  esac
  for c in $CONCS; do
    n=1
    [ "$c" = "$TARGET_C" ] && n=$ROUNDS
    for round in $(seq "$n"); do
      for i in "${!T_LABEL[@]}"; do
        read -r -a args <<<"${T_ARGS[$i]}"
        [ "${T_FEAT[$i]}" = 1 ] && args+=(-features "$FEATURES")
        bench -label "${T_LABEL[$i]}" -round "$round" -proto "$proto" -url "${T_URL[$i]}" -pid "${T_PID[$i]}" -c "$c" -d "$DUR" -warmup "$WARM" "${args[@]}"
      done
    done
    if [ "$PROFILE" = 1 ] && [ "$c" = "$TARGET_C" ]; then
      for i in "${!T_LABEL[@]}"; do
        [[ ${T_LABEL[$i]} == mcpfleet* ]] || continue
        read -r -a args <<<"${T_ARGS[$i]}"
        profile "${T_LABEL[$i]}" "$proto" "${T_URL[$i]}" "${T_PID[$i]}" "${args[@]}"
      done
    fi
  done
  stop "${T_STOP[@]}"
  stop "${T_STOP_LAST[@]}"
done
SERVER_ENV=()
fi

if want scale; then
echo "== scale"
# The scale runs measure what an idle session and an idle stream hold
# once the process is idle. The garbage-collector tuner gives the garbage
# of the load back after --gc-idle-release of idleness (1m by default);
# these servers set 1s, so that they reach that state within the
# runs' settle pause (mcpfleet bench -settle, 2s) instead of a minute.
SCALE_GC=(--gc-idle-release 1s)
if aio_up scale-aio "${SCALE_GC[@]}"; then
  scale -scale sessions -n "$IDLE_SESSIONS" -url "$AIO_URL" -pid "$AIO_PID" -metrics "$AIO_METRICS" -label mcpfleet-aio
  stop "$AIO_PID"
fi
# nats-server + redis-server + 2 frontends (no listen cap) + 1 worker:
# sessions on frontend 2 (with Redis), idle listen streams on frontend 1,
# then the fan-out over both.
if cluster_up scale-cluster 2 1 --max-listen-subscriptions 0 "${SCALE_GC[@]}"; then
  fe1=${CL_URLS%%,*} fe2=${CL_URLS##*,}
  scale -scale sessions -n "$IDLE_SESSIONS" -url "$fe2" -pid "${CL_FE_PIDS[1]}" -metrics "${CL_FE_METRICS[1]}" -redis "$CL_REDIS" -label mcpfleet-cluster
  scale -scale listens -n "$LISTENS" -url "$fe1" -pid "${CL_FE_PIDS[0]}" -metrics "${CL_FE_METRICS[0]}" -label mcpfleet-frontend
  scale -scale fanout -n "$LISTENS" -events "$EVENTS" -url "$CL_URLS" -label mcpfleet-cluster-2fe
  cluster_down
fi
fi

# What durable delivery costs (issue 18, docs/guarantees.md): a legacy
# call's acked frames and a resources/updated through the session-events
# path, in the in-process all-in-one (CPU of the whole process, NATS
# messages per operation).
if want durable; then
echo "== durable delivery cost (in-process all-in-one)"
(cd "$root" && go test -run '^$' -bench 'BenchmarkLegacyStreamCost|BenchmarkGetStreamUpdateCost' \
  -benchtime 2000x ./internal/e2e/ 2>&1 | grep -E '^(Benchmark|ok|FAIL)') || fail "the durable delivery benchmarks failed"
fi

# What tracing costs (issue 20): the same echo load on the all-in-one with
# tracing off (no OTEL_* variable), on (every request sampled: four spans,
# exported over OTLP/HTTP to a real Jaeger, .cache/bin/jaeger from `make
# deps`) and with the exporter configured but OTEL_TRACES_SAMPLER=always_off
# (spans made, none recorded). CPU µs/req is the all-in-one's alone; Jaeger
# shares the cores, so the req/s of "on" also pays for the receiver. Then
# BenchmarkTracing: one tools/call in process, off, on and sampled-out, in
# ns/op and allocs/op.
tracing_cost() {
  local jaeger=$root/.cache/bin/jaeger gp hp qp qg hc mode proto jaeger_pid services i urls
  [ -x "$jaeger" ] || { fail "$jaeger is missing; run 'make deps'"; return; }
  gp=$(free_port) && hp=$(free_port) && qp=$(free_port) && qg=$(free_port) && hc=$(free_port) || { fail "no free port"; return; }
  start jaeger env JAEGER_OTLP_GRPC_PORT="$gp" JAEGER_OTLP_HTTP_PORT="$hp" JAEGER_QUERY_HTTP_PORT="$qp" \
    JAEGER_QUERY_GRPC_PORT="$qg" JAEGER_HEALTH_PORT="$hc" "$jaeger" --config "$root/testdata/jaeger/config.yaml"
  jaeger_pid=$PID
  if ! wait_port "$hp" "$jaeger_pid" || ! wait_port "$qp" "$jaeger_pid"; then
    fail "jaeger did not start; see $logs/jaeger.log"
    stop "$jaeger_pid"
    return
  fi
  # The three all-in-ones of a protocol run side by side and take the load
  # in turns at each concurrency, so a change of the machine's load (other
  # work on its cores) falls on all three alike.
  local modes=(off on always-off) pids c
  local trace_features=("tracing off" "tracing on (every request sampled, OTLP/HTTP to Jaeger)" "tracing exporter configured, OTEL_TRACES_SAMPLER=always_off")
  for proto in legacy modern; do
    pids=() urls=()
    for mode in "${modes[@]}"; do
      case $mode in
        off) AIO_ENV=() ;;
        on) AIO_ENV=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$hp" OTEL_SERVICE_NAME=bench-trace-on) ;;
        always-off) AIO_ENV=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$hp" OTEL_SERVICE_NAME=bench-trace-always-off OTEL_TRACES_SAMPLER=always_off) ;;
      esac
      aio_up "mcpfleet-aio-trace-$mode-$proto" || break
      pids+=("$AIO_PID") urls+=("$AIO_URL")
    done
    if [ ${#pids[@]} = ${#modes[@]} ]; then
      for c in $CONCS; do
        for i in "${!modes[@]}"; do
          bench -label "mcpfleet-aio-trace-${modes[$i]}" -proto "$proto" -url "${urls[$i]}" -pid "${pids[$i]}" -c "$c" -d "$DUR" -warmup "$WARM" \
            -features "durable delivery on (always), ${trace_features[$i]}, access log off (--access-log=false)"
        done
      done
    fi
    stop "${pids[@]}" # their drain exports the last spans
  done
  AIO_ENV=()
  services=$(curl -s "http://127.0.0.1:$qp/api/services")
  case $services in
    *bench-trace-on*) ;;
    *) fail "no span of the traced runs reached jaeger (services: $services)" ;;
  esac
  case $services in
    *bench-trace-always-off*) fail "the always_off runs exported spans (services: $services)" ;;
  esac
  stop "$jaeger_pid"
  (cd "$root" && go test -run '^$' -bench 'BenchmarkTracing' -benchtime 3000x ./internal/e2e/ 2>&1 |
    grep -E '^(Benchmark|ok|FAIL)') || fail "BenchmarkTracing failed"
}
if want tracing; then
  echo "== tracing cost: echo tool on the all-in-one, off / on (sampled, to Jaeger) / always_off, c = $CONCS"
  tracing_cost
fi

echo
if [ -s "$results" ]; then
  "$bin/mcpfleet" bench report -c "$TARGET_C" -svg "$chart" "$results" || fail "the report failed"
else
  fail "no results"
fi
echo
echo "results: $results; server logs: $logs"
[ -s "$chart" ] && echo "chart: $chart (req/s and CPU µs/request at c=64, legacy and modern, per configuration)"
if [ "$errors" -gt 0 ]; then
  echo "bench: $errors error(s), see above" >&2
  exit 1
fi
