#!/usr/bin/env bash
# scripts/scaling-figures.sh: the figures of docs/scaling.md, measured on
# this machine.
#
# Starts, on free loopback ports and the way scripts/bench.sh's cluster_up
# does, a nats-server (with its monitoring port), a redis-server, one worker
# and one frontend, and measures:
#
#   load    legacy and modern echo at c=SCALE_C for SCALE_DURATION with
#           `mcpfleet bench`: req/s, and the CPU time per request of each
#           process (frontend, worker, nats-server, redis-server) from
#           /proc/<pid>/stat utime+stime before and after, divided by the
#           tools/call requests the frontend counted (its admin /metrics); Redis
#           commands (INFO commandstats) and NATS messages (/varz) per request;
#   ops     Redis commands and NATS messages per legacy initialize, per
#           legacy and modern echo, per resources/subscribe, per GET stream
#           opened and per resources/updated delivered to a session's GET
#           stream, each op done SCALE_OPS times (curl, one at a time; Redis
#           MONITOR splits the commands a client sent from those run inside
#           Lua scripts);
#   memory  frontend RSS and goroutines, and Redis used_memory, per idle
#           legacy session (`mcpfleet bench -scale sessions`), per idle
#           listen stream (`-scale listens`) and per GET stream (SCALE_N
#           curl streams held open; also nats-server subscriptions and
#           memory, and what the open streams cost while idle), each on a
#           fresh cluster;
#   fanout  one resources/updated to SCALE_FANOUT listen streams
#           (`-scale fanout`): time until the last stream has it.
#
# Every process it starts is stopped by its PID; every run is bounded by
# `timeout`. Results: SCALE_OUT/figures.txt (key=value lines), the raw JSON
# of each `mcpfleet bench` run and the server logs beside it.
#
# Environment (defaults in brackets):
#   SCALE_DURATION  measured time of each load run [5s]
#   SCALE_C         concurrency of the load runs [64]
#   SCALE_OPS       repetitions of each counted op [100]
#   SCALE_N         idle sessions, listen streams and GET streams [2000]
#   SCALE_FANOUT    listen streams of the fan-out [3000]
#   SCALE_PARTS     which parts to run ["load ops memory fanout"]
#   SCALE_BIN       directory with mcpfleet, frontend and worker binaries
#                   [built here into a temporary directory]
#   SCALE_OUT       results [.cache/scaling]
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

DUR=${SCALE_DURATION:-5s}
CONC=${SCALE_C:-64}
OPS=${SCALE_OPS:-100}
N=${SCALE_N:-2000}
FANOUT=${SCALE_FANOUT:-3000}
PARTS=" ${SCALE_PARTS:-load ops memory fanout} "
OUT=${SCALE_OUT:-$root/.cache/scaling}

GOBIN=$(go env GOPATH)/bin
NATS=$(command -v nats-server || echo "$GOBIN/nats-server")
REDIS=$(command -v redis-server || echo /usr/bin/redis-server)
RCLI=$(command -v redis-cli || echo /usr/bin/redis-cli)
CLK=$(getconf CLK_TCK 2>/dev/null || echo 100)

die() { echo "scaling: $*" >&2; exit 1; }
errors=0
fail() { echo "scaling: ERROR: $*" >&2; errors=$((errors + 1)); }

[ -x "$NATS" ] || die "nats-server is missing; run 'make deps'"
[ -x "$REDIS" ] || die "redis-server is missing; run 'make deps'"
[ -x "$RCLI" ] || die "redis-cli is missing (apt-get install redis-tools)"
command -v curl >/dev/null || die "curl is missing"

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

work=$(mktemp -d "${TMPDIR:-/tmp}/mcpfleet-scaling.XXXXXX")
logs=$OUT/logs
fig=$OUT/figures.txt
mkdir -p "$logs"
rm -f "$logs"/*.log "$OUT"/*.json "$fig"

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
trap 'echo "scaling: interrupted" >&2; exit 130' INT TERM

free_port() {
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
wait_log() { # LOG PID REGEX
  local m
  for _ in $(seq 200); do
    m=$(grep -o -m1 -E "$3" "$1" 2>/dev/null | head -1)
    [ -n "$m" ] && { echo "$m"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# put KEY VALUE: one figure, printed and kept in figures.txt.
put() {
  echo "$1=$2" >>"$fig"
  printf '  %-44s %s\n' "$1" "$2"
}
# entry FILE FORMAT ARGS...: appends one transfer to a curl config file
# (-K), separated from the one before by "next".
entry() {
  local f=$1
  shift
  [ -s "$f" ] && echo next >>"$f"
  # shellcheck disable=SC2059
  printf "$@" >>"$f"
}
# calc EXPR: floating-point arithmetic (awk), EXPR in awk syntax.
calc() { awk "BEGIN { x = $1; printf \"%.6g\", x }"; }
# jnum FIELD: the first numeric value of "FIELD": in the JSON on stdin.
jnum() { grep -o "\"$1\": *[-0-9.e+]*" | head -1 | sed 's/.*: *//'; }

echo "== mcpfleet scaling figures: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
MACHINE="$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(go version | cut -d' ' -f3)"
echo "$MACHINE; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine=$MACHINE" >>"$fig"

if [ -n "${SCALE_BIN:-}" ]; then
  bin=$SCALE_BIN
else
  bin=$work/bin
  echo "== building"
  go build -o "$bin/" ./cmd/mcpfleet ./cmd/frontend ./cmd/worker || die "building mcpfleet"
fi
for b in mcpfleet frontend worker; do [ -x "$bin/$b" ] || die "$bin/$b is missing"; done
echo "nats-server $("$NATS" --version 2>&1 | head -1 | sed 's/.*v/v/'); redis-server $("$REDIS" --version | head -1 | cut -d' ' -f3 | cut -d= -f2)"
echo "versions=nats-server $("$NATS" --version 2>&1 | head -1 | sed 's/.*v/v/'), redis-server $("$REDIS" --version | head -1 | cut -d' ' -f3 | cut -d= -f2)" >>"$fig"

STATE_KEY=$(head -c 32 /dev/urandom | base64)

# up NAME [FRONTEND ARGS...]: nats-server (monitoring on), redis-server (as
# bench.sh: append-only, fsync every second), one worker, one frontend.
# Sets NATS_PID REDIS_PID WORKER_PID FE_PID, NP MP RP, FE (MCP URL), RURL.
up() {
  local name=$1
  shift
  NP=$(free_port) && MP=$(free_port) && RP=$(free_port) || { fail "no free port"; return 1; }
  printf 'listen: 127.0.0.1:%s\nhttp: 127.0.0.1:%s\nmax_payload: 8MB\n' "$NP" "$MP" >"$work/$name-nats.conf"
  start "$name-nats" "$NATS" -c "$work/$name-nats.conf"
  NATS_PID=$PID
  mkdir -p "$work/$name-redis"
  start "$name-redis" "$REDIS" --bind 127.0.0.1 --port "$RP" --dir "$work/$name-redis" \
    --appendonly yes --appendfsync everysec --save ""
  REDIS_PID=$PID
  if ! wait_port "$NP" "$NATS_PID" || ! wait_port "$MP" "$NATS_PID" || ! wait_port "$RP" "$REDIS_PID"; then
    fail "$name: nats-server or redis-server did not start; see $logs/$name-*.log"
    down
    return 1
  fi
  RURL=redis://127.0.0.1:$RP/0
  start "$name-worker" env MCPFLEET_STATE_KEY="$STATE_KEY" "$bin/worker" --nats-url "nats://127.0.0.1:$NP" \
    --drain-timeout 2s --log-format text
  WORKER_PID=$PID
  if ! wait_log "$logs/$name-worker.log" "$PID" 'msg="worker serving"' >/dev/null; then
    fail "$name: the worker did not start; see $logs/$name-worker.log"
    down
    return 1
  fi
  start "$name-frontend" "$bin/frontend" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --drain-delay 0 --log-format text \
    --nats-url "nats://127.0.0.1:$NP" --redis-url "$RURL" --drain-timeout 2s "$@"
  FE_PID=$PID
  local m
  if ! m=$(wait_log "$logs/$name-frontend.log" "$PID" 'msg="mcpfleet serving" url=[^ ]+'); then
    fail "$name: the frontend did not start; see $logs/$name-frontend.log"
    down
    return 1
  fi
  FE=${m##*url=}
  # Metrics are on the admin listener, never beside /mcp.
  if ! m=$(wait_log "$logs/$name-frontend.log" "$PID" 'msg="admin http serving" url=[^ ]+'); then
    fail "$name: the frontend logged no admin listener; see $logs/$name-frontend.log"
    down
    return 1
  fi
  METRICS=${m##*url=}/metrics
}
down() {
  stop ${FE_PID:-} ${WORKER_PID:-}
  stop ${NATS_PID:-} ${REDIS_PID:-}
  FE_PID="" WORKER_PID="" NATS_PID="" REDIS_PID=""
}

# Samples. cpu PID: utime+stime in ticks. rss PID: VmRSS in KiB.
cpu() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
# cpu_ns PID: CPU time in ns, summed over its threads (schedstat: finer
# than the ticks of stat, for the small figures of idle streams).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
# snap PREFIX: sets PREFIX_{fe,wk,nats,redis} (CPU ticks), PREFIX_{in,out,
# inb,outb,subs,natsmem} (nats-server /varz), PREFIX_{cmds,scripts,reads,
# mem} (Redis: commands executed but INFO, EVAL/EVALSHA calls,
# total_reads_processed, used_memory), PREFIX_{calls,fer,gor,t}.
snap() {
  local p=$1 v info m
  printf -v "${p}_fe" %s "$(cpu "$FE_PID")"
  printf -v "${p}_wk" %s "$(cpu "$WORKER_PID")"
  printf -v "${p}_nats" %s "$(cpu "$NATS_PID")"
  printf -v "${p}_redis" %s "$(cpu "$REDIS_PID")"
  printf -v "${p}_fer" %s "$(rss "$FE_PID")"
  v=$(curl -s --max-time 5 "http://127.0.0.1:$MP/varz")
  printf -v "${p}_in" %s "$(jnum in_msgs <<<"$v")"
  printf -v "${p}_out" %s "$(jnum out_msgs <<<"$v")"
  printf -v "${p}_inb" %s "$(jnum in_bytes <<<"$v")"
  printf -v "${p}_outb" %s "$(jnum out_bytes <<<"$v")"
  printf -v "${p}_subs" %s "$(jnum subscriptions <<<"$v")"
  printf -v "${p}_natsmem" %s "$(jnum mem <<<"$v")"
  info=$("$RCLI" -p "$RP" INFO all | tr -d '\r')
  printf -v "${p}_cmds" %s "$(awk -F'[=,]' '/^cmdstat_/ && !/^cmdstat_info:/ { s += $2 } END { print s + 0 }' <<<"$info")"
  printf -v "${p}_scripts" %s "$(awk -F'[=,]' '/^cmdstat_eval(sha)?:/ { s += $2 } END { print s + 0 }' <<<"$info")"
  printf -v "${p}_reads" %s "$(awk -F: '/^total_reads_processed:/ { print $2 }' <<<"$info")"
  printf -v "${p}_mem" %s "$(awk -F: '/^used_memory:/ { print $2 }' <<<"$info")"
  m=$(curl -s --max-time 5 "$METRICS")
  printf -v "${p}_calls" %s "$(awk '/^mcpfleet_frontend_requests_total\{method="tools\/call"/ { s += $2 } END { print s + 0 }' <<<"$m")"
  printf -v "${p}_gor" %s "$(awk '/^go_goroutines / { print $2 }' <<<"$m")"
  printf -v "${p}_t" %s "$(date +%s.%N)"
}
# d NAME: after_NAME - before_NAME (the last two snaps, "b" and "a").
d() { local a=a_$1 b=b_$1; calc "${!a} - ${!b}"; }

H_JSON=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
LEG=(-H 'MCP-Protocol-Version: 2025-11-25')
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"scaling","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'
MODERN_META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"scaling","version":"1"}}'

# session: a new initialized legacy session on FE; prints its id.
session() {
  local sid
  sid=$(curl -s --max-time 10 -D - -o /dev/null "${H_JSON[@]}" "$FE" -d "$INIT" |
    awk 'tolower($1) == "mcp-session-id:" { print $2 }' | tr -d '\r')
  [ -n "$sid" ] || return 1
  curl -s --max-time 10 -o /dev/null "${H_JSON[@]}" "${LEG[@]}" -H "Mcp-Session-Id: $sid" "$FE" -d "$INITED"
  echo "$sid"
}
# legacy SID ID METHOD PARAMS: one legacy request; prints the body.
legacy() {
  curl -s --max-time 10 "${H_JSON[@]}" "${LEG[@]}" -H "Mcp-Session-Id: $1" "$FE" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":$2,\"method\":\"$3\",\"params\":$4}"
}
# modern_call ID TOOL ARGS: one 2026-07-28 tools/call; prints the body.
modern_call() {
  curl -s --max-time 10 "${H_JSON[@]}" -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' \
    -H "Mcp-Name: $2" "$FE" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3,$MODERN_META}}"
}

# Redis MONITOR, to split what clients send from what scripts run.
monitor_on() {
  "$RCLI" -p "$RP" MONITOR >"$work/monitor.txt" 2>/dev/null &
  MON_PID=$!
  PIDS+=("$MON_PID")
  sleep 0.3
}
monitor_off() { stop "$MON_PID"; }
# monitor_count FROM TO: client commands (not INFO) and script-run commands
# logged between unix times FROM and TO.
monitor_count() {
  awk -v from="$1" -v to="$2" '$1 >= from && $1 <= to {
      if ($3 == "lua]") lua++
      else if (tolower($4) != "\"info\"") cl++
    } END { print cl + 0, lua + 0 }' "$work/monitor.txt"
}

# log_bytes: MEMORY USAGE of the GET logs (event list and dedupe set) of
# the sessions in sids, summed (used_memory would count MONITOR's buffers).
log_bytes() {
  local s
  for s in "${sids[@]}"; do
    echo "MEMORY USAGE mcp:{$s}:ev:gs SAMPLES 0"
    echo "MEMORY USAGE mcp:{$s}:once:gs SAMPLES 0"
  done | "$RCLI" -p "$RP" | awk '{ s += $1 } END { print s + 0 }'
}

# idle_rate: NATS messages and Redis commands per second while idle
# (heartbeats), subtracted from the counted ops, and the frontend's idle
# CPU.
idle_rate() {
  local ns0 ns1 t0 t1
  snap b
  ns0=$(cpu_ns "$FE_PID") t0=$(date +%s.%N)
  sleep 3
  ns1=$(cpu_ns "$FE_PID") t1=$(date +%s.%N)
  snap a
  IDLE_FE_MS=$(calc "($ns1 - $ns0) / 1000000 / ($t1 - $t0)")
  IDLE_IN=$(calc "$(d in) / ($a_t - $b_t)")
  IDLE_OUT=$(calc "$(d out) / ($a_t - $b_t)")
  IDLE_CMDS=$(calc "$(d cmds) / ($a_t - $b_t)")
}

# count_op KEY N: the figures per op of the ops done between the last two
# snaps: Redis commands sent by clients and run inside scripts (MONITOR),
# executed in all (commandstats), NATS messages in and out (idle heartbeats
# subtracted).
count_op() {
  local key=$1 n=$2 el cl lua
  el=$(calc "$a_t - $b_t")
  read -r cl lua <<<"$(monitor_count "$b_t" "$a_t")"
  put "ops.$key.n" "$n"
  put "ops.$key.redis_commands_sent" "$(calc "$cl / $n")"
  put "ops.$key.redis_commands_in_scripts" "$(calc "$lua / $n")"
  put "ops.$key.redis_commands_executed" "$(calc "$(d cmds) / $n")"
  put "ops.$key.nats_msgs_in" "$(calc "($(d in) - $IDLE_IN * $el) / $n")"
  put "ops.$key.nats_msgs_out" "$(calc "($(d out) - $IDLE_OUT * $el) / $n")"
}

# part NAME: whether SCALE_PARTS names it.
part() { [[ $PARTS == *" $1 "* ]]; }

# ---------------------------------------------------------------- load
part load && echo "== load: echo at c=$CONC for $DUR through one frontend and one worker"
for proto in legacy modern; do
  part load || break
  up "load-$proto" || continue
  # A short warm-up run, not counted: heap, connection pools, Lua scripts.
  timeout -k 5 30 "$bin/mcpfleet" bench -quiet -proto "$proto" -c "$CONC" -d 2s -warmup 0 -url "$FE" >/dev/null ||
    fail "warm-up of $proto exited with status $?"
  snap b
  timeout -k 5 60 "$bin/mcpfleet" bench -quiet -json -label "scaling-$proto" -proto "$proto" -c "$CONC" -d "$DUR" -warmup 1s \
    -url "$FE" -pid "$FE_PID,$WORKER_PID,$NATS_PID,$REDIS_PID" >"$OUT/load-$proto.json" ||
    fail "mcpfleet bench -proto $proto exited with status $?"
  snap a
  r=$(cat "$OUT/load-$proto.json")
  calls=$(d calls)
  el=$(calc "$a_t - $b_t")
  put "load.$proto.rps" "$(jnum rps <<<"$r")"
  put "load.$proto.p50_ms" "$(jnum p50_ms <<<"$r")"
  put "load.$proto.p99_ms" "$(jnum p99_ms <<<"$r")"
  put "load.$proto.errors" "$(jnum errors <<<"$r")"
  put "load.$proto.calls_counted" "$calls"
  for k in fe wk nats redis; do
    put "load.$proto.cpu_us_per_req.$k" "$(calc "$(d $k) * 1000000 / $CLK / $calls")"
    put "load.$proto.cores_busy.$k" "$(calc "$(d $k) / $CLK / $el")"
  done
  put "load.$proto.cpu_us_per_req.all4_bench" "$(jnum cpu_us_per_req <<<"$r")"
  put "load.$proto.loadgen_cores_busy" "$(calc "$(jnum loadgen_cpu_s <<<"$r") / $(jnum dur_s <<<"$r")")"
  put "load.$proto.rps_per_frontend_core" "$(calc "$calls * $CLK / $(d fe)")"
  put "load.$proto.rps_per_worker_core" "$(calc "$calls * $CLK / $(d wk)")"
  put "load.$proto.redis_commands_executed_per_req" "$(calc "$(d cmds) / $calls")"
  put "load.$proto.redis_script_calls_per_req" "$(calc "$(d scripts) / $calls")"
  put "load.$proto.redis_reads_per_req" "$(calc "$(d reads) / $calls")"
  put "load.$proto.nats_msgs_in_per_req" "$(calc "$(d in) / $calls")"
  put "load.$proto.nats_msgs_out_per_req" "$(calc "$(d out) / $calls")"
  put "load.$proto.nats_bytes_in_per_req" "$(calc "$(d inb) / $calls")"
  put "load.$proto.frontend_rss_MiB" "$(calc "$a_fer / 1024")"
  down
done

# ---------------------------------------------------------------- ops
part ops && echo "== ops: Redis commands and NATS messages per op ($OPS of each, one at a time)"
if part ops && up ops; then
  monitor_on
  # Warm-up: every script loaded once (the first EVALSHA of a script fails
  # with NOSCRIPT and is followed by an EVAL), every connection open.
  w=$(session) && legacy "$w" 2 tools/call '{"name":"echo","arguments":{"text":"hi"}}' >/dev/null &&
    legacy "$w" 3 resources/subscribe '{"uri":"bench://scaling/warm"}' >/dev/null &&
    modern_call 4 echo '{"text":"hi"}' >/dev/null || fail "ops warm-up"
  timeout 1 curl -s -N -H 'Accept: text/event-stream' "${LEG[@]}" -H "Mcp-Session-Id: $w" "$FE" >/dev/null
  modern_call 5 touch_resource '{"uri":"bench://scaling/warm"}' >/dev/null
  sleep 1
  idle_rate
  put "idle.nats_msgs_in_per_s" "$IDLE_IN"
  put "idle.nats_msgs_out_per_s" "$IDLE_OUT"
  put "idle.redis_commands_per_s" "$IDLE_CMDS"
  put "idle.frontend_cpu_ms_per_s" "$IDLE_FE_MS"

  sids=()
  snap b
  for _ in $(seq "$OPS"); do sids+=("$(session)"); done
  snap a
  [ "${#sids[@]}" = "$OPS" ] && [ -n "${sids[$((OPS - 1))]}" ] || fail "not every session was initialized"
  count_op legacy_initialize "$OPS"

  snap b
  for i in $(seq "$OPS"); do legacy "${sids[0]}" $((100 + i)) tools/call '{"name":"echo","arguments":{"text":"hi"}}' >/dev/null; done
  snap a
  [ "$(d calls)" = "$OPS" ] || fail "legacy echo: $(d calls) calls counted, not $OPS"
  count_op legacy_echo "$OPS"

  snap b
  for i in $(seq "$OPS"); do modern_call $((100 + i)) echo '{"text":"hi"}' >/dev/null; done
  snap a
  [ "$(d calls)" = "$OPS" ] || fail "modern echo: $(d calls) calls counted, not $OPS"
  count_op modern_echo "$OPS"

  URI=bench://scaling/updated
  snap b
  for s in "${sids[@]}"; do legacy "$s" 9 resources/subscribe "{\"uri\":\"$URI\"}" >/dev/null; done
  snap a
  count_op resources_subscribe "$OPS"

  # GET streams, held open by one curl (parallel transfers), one per session.
  cfg=$work/get.cfg
  : >"$cfg"
  mkdir -p "$work/get"
  i=0
  for s in "${sids[@]}"; do
    i=$((i + 1))
    entry "$cfg" 'url = "%s"\nheader = "Accept: text/event-stream"\nheader = "MCP-Protocol-Version: 2025-11-25"\nheader = "Mcp-Session-Id: %s"\noutput = "%s/get/%d"\nno-buffer\nmax-time = 120\n' \
      "$FE" "$s" "$work" "$i"
  done
  snap b
  curl -s -N -Z --parallel-immediate --parallel-max 300 --max-time 120 -K "$cfg" 2>>"$logs/curl.log" &
  GETS_PID=$!
  PIDS+=("$GETS_PID")
  for _ in $(seq 100); do
    [ "$(curl -s "$METRICS" | awk '/^mcpfleet_frontend_open_streams\{kind="get"\}/ { print $2 }')" = "$OPS" ] && break
    sleep 0.1
  done
  sleep 1
  snap a
  put "ops.get_open.open_streams" "$(curl -s "$METRICS" | awk '/^mcpfleet_frontend_open_streams\{kind="get"\}/ { print $2 }')"
  count_op get_open "$OPS"

  # resources/updated: EV touch_resource calls (modern) on a URI nobody
  # watches, then EV on the URI the OPS sessions subscribed to (each with
  # its GET stream open): the difference, divided by the deliveries, is
  # what one update delivered to one session costs.
  EV=20
  logs_before=$(log_bytes)
  snap b
  for i in $(seq "$EV"); do modern_call $((300 + i)) touch_resource '{"uri":"bench://scaling/nobody"}' >/dev/null; done
  sleep 1
  snap a
  el0=$(calc "$a_t - $b_t")
  c0=$(d cmds) in0=$(d in) out0=$(d out)
  read -r cl0 lua0 <<<"$(monitor_count "$b_t" "$a_t")"
  snap b
  for i in $(seq "$EV"); do modern_call $((400 + i)) touch_resource "{\"uri\":\"$URI\"}" >/dev/null; done
  for _ in $(seq 100); do
    got=$(cat "$work"/get/* 2>/dev/null | grep -c "notifications/resources/updated")
    [ "$got" -ge $((EV * OPS)) ] && break
    sleep 0.1
  done
  snap a
  el1=$(calc "$a_t - $b_t")
  read -r cl1 lua1 <<<"$(monitor_count "$b_t" "$a_t")"
  got=$(cat "$work"/get/* 2>/dev/null | grep -c "notifications/resources/updated")
  dn=$((EV * OPS))
  put "ops.update_delivered.n" "$dn"
  put "ops.update_delivered.arrived" "$got"
  put "ops.update_delivered.redis_commands_sent" "$(calc "($cl1 - $cl0) / $dn")"
  put "ops.update_delivered.redis_commands_in_scripts" "$(calc "($lua1 - $lua0) / $dn")"
  put "ops.update_delivered.redis_commands_executed" "$(calc "($(d cmds) - $c0) / $dn")"
  put "ops.update_delivered.nats_msgs_in" "$(calc "($(d in) - $in0 - $IDLE_IN * ($el1 - $el0)) / $dn")"
  put "ops.update_delivered.nats_msgs_out" "$(calc "($(d out) - $out0 - $IDLE_OUT * ($el1 - $el0)) / $dn")"
  put "ops.update_delivered.redis_bytes" "$(calc "($(log_bytes) - $logs_before) / $dn")"
  put "ops.touch_nobody.redis_commands_executed" "$(calc "$c0 / $EV")"
  put "ops.touch_nobody.nats_msgs_in" "$(calc "($in0 - $IDLE_IN * $el0) / $EV")"
  put "ops.touch_nobody.nats_msgs_out" "$(calc "($out0 - $IDLE_OUT * $el0) / $EV")"
  stop "$GETS_PID"
  monitor_off
  down
fi

# ---------------------------------------------------------------- memory
# The memory runs' frontends give the garbage of the load back after 1 s of
# idleness (--gc-idle-release 1s instead of the default 1m: two quiet checks
# half a second apart, so 1 to 1.5 s after the load stops), within the
# runs' 2 s settle pauses: the figures are what an idle process holds.
MEM_GC=(--gc-idle-release 1s)
part memory && echo "== memory: idle legacy sessions (n=$N, after as many warm-up sessions)"
if part memory && up mem-sessions "${MEM_GC[@]}"; then
  timeout -k 5 120 "$bin/mcpfleet" bench -json -scale sessions -n "$N" -settle 2s -url "$FE" -pid "$FE_PID" -metrics "$METRICS" -redis "$RURL" \
    >"$OUT/sessions.json" || fail "-scale sessions exited with status $?"
  r=$(cat "$OUT/sessions.json")
  put "mem.session.ok" "$(jnum ok <<<"$r")"
  put "mem.session.open_s" "$(jnum open_s <<<"$r")"
  put "mem.session.frontend_rss_KiB" "$(jnum rss_KiB_per_item <<<"$r")"
  put "mem.session.frontend_goroutines" "$(jnum goroutines_per_item <<<"$r")"
  put "mem.session.redis_bytes" "$(jnum redis_bytes_per_item <<<"$r")"
  put "mem.session.redis_keys_per_session" "$(calc "$("$RCLI" -p "$RP" DBSIZE) / (2 * $(jnum ok <<<"$r"))")"
  down
fi

part memory && echo "== memory: idle listen streams (n=$N)"
if part memory && up mem-listens --max-listen-subscriptions 0 "${MEM_GC[@]}"; then
  timeout -k 5 120 "$bin/mcpfleet" bench -json -scale listens -n "$N" -settle 2s -url "$FE" -pid "$FE_PID" -metrics "$METRICS" \
    >"$OUT/listens.json" || fail "-scale listens exited with status $?"
  r=$(cat "$OUT/listens.json")
  put "mem.listen.open" "$(jnum open <<<"$r")"
  put "mem.listen.frontend_rss_KiB" "$(jnum rss_KiB_per_item <<<"$r")"
  put "mem.listen.frontend_goroutines" "$(jnum goroutines_per_item <<<"$r")"
  down
fi

part memory && echo "== memory: GET streams (n=$N, after $((N / 4)) warm-up streams)"
# gets_open FIRST COUNT: COUNT GET streams of sessions FIRST.. of sids,
# held open by curl processes of at most 300 transfers each.
gets_open() {
  local first=$1 count=$2 j k=0 cfgf
  for ((j = first; j < first + count; j++)); do
    if ((k % 300 == 0)); then
      cfgf=$work/gets-$j.cfg
      : >"$cfgf"
      GET_CFGS+=("$cfgf")
    fi
    k=$((k + 1))
    entry "$cfgf" 'url = "%s"\nheader = "Accept: text/event-stream"\nheader = "MCP-Protocol-Version: 2025-11-25"\nheader = "Mcp-Session-Id: %s"\noutput = "/dev/null"\nmax-time = 300\n' \
      "$FE" "${sids[$j]}"
  done
}
open_streams() { curl -s --max-time 5 "$METRICS" | awk '/^mcpfleet_frontend_open_streams\{kind="get"\}/ { n = $2 } END { print n + 0 }'; }
wait_streams() { # WANT
  for _ in $(seq 200); do
    [ "$(open_streams)" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}
# sessions_parallel COUNT: COUNT initialized legacy sessions, opened by one
# curl with parallel transfers; appends their ids to sids.
sessions_parallel() {
  local count=$1 j cfgf=$work/init.cfg dir=$work/init
  rm -rf "$dir"
  mkdir -p "$dir"
  printf '%s' "$INIT" >"$work/init.json"
  printf '%s' "$INITED" >"$work/inited.json"
  : >"$cfgf"
  for ((j = 0; j < count; j++)); do
    entry "$cfgf" 'url = "%s"\nheader = "Content-Type: application/json"\nheader = "Accept: application/json, text/event-stream"\ndata-binary = "@%s"\ndump-header = "%s/%d"\noutput = "/dev/null"\nmax-time = 30\n' \
      "$FE" "$work/init.json" "$dir" "$j"
  done
  curl -s -Z --parallel-max 32 --max-time 60 -K "$cfgf" 2>>"$logs/curl.log" || return 1
  local new=()
  for ((j = 0; j < count; j++)); do
    new+=("$(awk 'tolower($1) == "mcp-session-id:" { print $2 }' "$dir/$j" | tr -d '\r')")
  done
  : >"$cfgf"
  for s in "${new[@]}"; do
    entry "$cfgf" 'url = "%s"\nheader = "Content-Type: application/json"\nheader = "Accept: application/json, text/event-stream"\nheader = "MCP-Protocol-Version: 2025-11-25"\nheader = "Mcp-Session-Id: %s"\ndata-binary = "@%s"\noutput = "/dev/null"\nmax-time = 30\n' \
      "$FE" "$s" "$work/inited.json"
  done
  curl -s -Z --parallel-max 32 --max-time 60 -K "$cfgf" 2>>"$logs/curl.log" || return 1
  sids+=("${new[@]}")
}
if part memory && up mem-gets "${MEM_GC[@]}"; then
  W=$((N / 4))
  sids=()
  sessions_parallel $((W + N)) || fail "opening the sessions of the GET streams"
  GET_CFGS=()
  gets_open 0 "$W"
  GET_PIDS=()
  for c in "${GET_CFGS[@]}"; do
    curl -s -N -Z --parallel-immediate --parallel-max 300 --max-time 300 -K "$c" 2>>"$logs/curl.log" &
    GET_PIDS+=("$!")
    PIDS+=("$!")
  done
  wait_streams "$W" || fail "the $W warm-up GET streams did not open ($(open_streams) open)"
  sleep 2
  snap b
  GET_CFGS=()
  gets_open "$W" "$N"
  t0=$(date +%s.%N)
  for c in "${GET_CFGS[@]}"; do
    curl -s -N -Z --parallel-immediate --parallel-max 300 --max-time 300 -K "$c" 2>>"$logs/curl.log" &
    GET_PIDS+=("$!")
    PIDS+=("$!")
  done
  wait_streams $((W + N)) || fail "the $N GET streams did not open ($(open_streams) open)"
  t1=$(date +%s.%N)
  sleep 2
  snap a
  opened=$(($(open_streams) - W))
  put "mem.get.open" "$opened"
  put "mem.get.open_s" "$(calc "$t1 - $t0")"
  put "mem.get.frontend_rss_KiB" "$(calc "($a_fer - $b_fer) / $opened")"
  put "mem.get.frontend_goroutines" "$(calc "($a_gor - $b_gor) / $opened")"
  put "mem.get.redis_bytes" "$(calc "$(d mem) / $opened")"
  put "mem.get.nats_subscriptions" "$(calc "$(d subs) / $opened")"
  put "mem.get.nats_server_bytes" "$(calc "$(d natsmem) / $opened")"
  # Idle: what the W+N open GET streams cost while nothing happens (8 s;
  # their keepalive comments come every 30 s).
  snap b
  ns0=$(cpu_ns "$FE_PID") t0=$(date +%s.%N)
  sleep 8
  ns1=$(cpu_ns "$FE_PID") t1=$(date +%s.%N)
  snap a
  put "idle.with_get_streams.streams" "$((W + opened))"
  put "idle.with_get_streams.redis_commands_per_s" "$(calc "$(d cmds) / ($a_t - $b_t)")"
  put "idle.with_get_streams.nats_msgs_out_per_s" "$(calc "$(d out) / ($a_t - $b_t)")"
  put "idle.with_get_streams.frontend_cpu_ms_per_s" "$(calc "($ns1 - $ns0) / 1000000 / ($t1 - $t0)")"
  stop "${GET_PIDS[@]}"
  down
fi

# ---------------------------------------------------------------- fan-out
part fanout && echo "== fan-out: one resources/updated to $FANOUT listen streams (20 events)"
if part fanout && up fanout --max-listen-subscriptions 0; then
  snap b
  timeout -k 5 120 "$bin/mcpfleet" bench -json -scale fanout -n "$FANOUT" -events 20 -url "$FE" >"$OUT/fanout.json" ||
    fail "-scale fanout exited with status $?"
  snap a
  r=$(cat "$OUT/fanout.json")
  put "fanout.streams" "$(jnum streams <<<"$r")"
  put "fanout.delivered" "$(jnum delivered <<<"$r")"
  put "fanout.expected" "$(jnum expected <<<"$r")"
  put "fanout.last_p50_ms" "$(jnum last_p50_ms <<<"$r")"
  put "fanout.last_p99_ms" "$(jnum last_p99_ms <<<"$r")"
  put "fanout.stream_p99_ms" "$(jnum stream_p99_ms <<<"$r")"
  put "fanout.nats_msgs_out_per_event" "$(calc "$(d out) / 20")"
  put "fanout.frontend_cpu_us_per_delivery_opening_included" "$(calc "$(d fe) * 1000000 / $CLK / $(jnum delivered <<<"$r")")"
  down
fi

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "figures: $fig; raw results and logs: $OUT"
if [ "$errors" -gt 0 ]; then
  echo "scaling: $errors error(s), see above" >&2
  exit 1
fi
