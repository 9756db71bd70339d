#!/usr/bin/env bash
# The mcpfleet cluster past one machine, on one machine, without docker:
# a 3-node NATS cluster (routes between the nodes; every process is given
# the three URLs), a Redis Cluster of 3 masters and 3 replicas (created
# with redis-cli --cluster create; persistent, appendfsync everysec), two
# frontends and two workers (with the conformance fixture) and nginx
# round-robin in front of the frontends.
#
#   scripts/cluster-ha.sh               start, print the URL, stop everything on Ctrl-C
#   scripts/cluster-ha.sh start         start in the background; prints the URL
#   scripts/cluster-ha.sh stop          stop a background cluster
#   scripts/cluster-ha.sh kill-nats N   SIGKILL NATS node N (1-3) of a background cluster
#   scripts/cluster-ha.sh kill-master   SIGKILL one Redis master, wait until its replica took over
#
# Environment (defaults in brackets):
#   MCPFLEET_CLUSTER_DIR   state, logs and pids [.cache/cluster-ha]
#   MCPFLEET_CLUSTER_PORT  nginx port [8098]; 0 picks free ports for everything
#   MCPFLEET_STATE_KEY     requestState key shared by the workers [random per cluster]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=${MCPFLEET_CLUSTER_DIR:-$root/.cache/cluster-ha}
cmd=${1:-run}

picked=" "
free_port() { # VAR: a free loopback port below the ephemeral range (32768+), not picked before
  local _fp
  for _ in $(seq 1 500); do
    _fp=$((20000 + RANDOM % 12000))
    case "$picked" in *" $_fp "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$_fp") 2>/dev/null; then
      picked="$picked$_fp "
      printf -v "$1" '%s' "$_fp"
      return 0
    fi
  done
  echo "cluster-ha: no free loopback port found" >&2
  exit 1
}

stop() {
  [ -f "$dir/pids" ] || return 0
  while read -r name pid; do kill -TERM "$pid" 2>/dev/null || true; done <"$dir/pids"
  for _ in $(seq 1 100); do
    alive=0
    while read -r name pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$dir/pids"
    [ $alive -eq 0 ] && break
    sleep 0.1
  done
  while read -r name pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$dir/pids"
  rm -f "$dir/pids"
}

pid_of() { awk -v n="$1" '$1 == n { print $2 }' "$dir/pids"; }

REDIS_CLI=$(command -v redis-cli || echo /usr/bin/redis-cli)
# cluster_ok: every live node says cluster_state:ok.
cluster_ok() {
  local p
  for p in $redis_ports; do
    kill -0 "$(pid_of "redis$p")" 2>/dev/null || continue
    "$REDIS_CLI" -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
  done
}

case "$cmd" in
stop) stop; exit 0 ;;
kill-nats)
  [ -f "$dir/env" ] || { echo "cluster-ha: no background cluster in $dir" >&2; exit 1; }
  n=${2:?usage: $0 kill-nats N}
  kill -KILL "$(pid_of "nats$n")"
  echo "cluster-ha: NATS node $n killed"
  exit 0 ;;
kill-master)
  [ -f "$dir/env" ] || { echo "cluster-ha: no background cluster in $dir" >&2; exit 1; }
  # shellcheck disable=SC1091
  . "$dir/env"
  redis_ports=$MCPFLEET_CLUSTER_REDIS_PORTS
  victim=""
  for p in $redis_ports; do
    if "$REDIS_CLI" -p "$p" role 2>/dev/null | head -1 | grep -q master; then victim=$p; break; fi
  done
  [ -n "$victim" ] || { echo "cluster-ha: no master found" >&2; exit 1; }
  kill -KILL "$(pid_of "redis$victim")"
  t0=$(date +%s%N)
  for _ in $(seq 1 300); do
    sleep 0.1
    failed=0
    for p in $redis_ports; do
      [ "$p" = "$victim" ] && continue
      "$REDIS_CLI" -p "$p" cluster nodes 2>/dev/null | grep "127.0.0.1:$victim@" | grep -q 'fail' && failed=1 && break
    done
    if [ $failed = 1 ] && cluster_ok; then
      echo "cluster-ha: Redis master on port $victim killed; cluster_state ok again after $((($(date +%s%N) - t0) / 1000000)) ms"
      exit 0
    fi
  done
  echo "cluster-ha: the Redis Cluster did not recover within 30 s after killing port $victim" >&2
  exit 1 ;;
run | start) ;;
*) echo "usage: $0 [run|start|stop|kill-nats N|kill-master]" >&2; exit 2 ;;
esac

GOBIN=$(go env GOPATH)/bin
NATS=$(PATH="$GOBIN:$PATH" command -v nats-server || echo "$GOBIN/nats-server")
REDIS=$(command -v redis-server || echo /usr/bin/redis-server)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for b in "$NATS" "$REDIS" "$REDIS_CLI" "$NGINX"; do
  [ -x "$b" ] || { echo "cluster-ha: $b is missing; run 'make deps'" >&2; exit 1; }
done

stop
rm -rf "$dir"
mkdir -p "$dir/nginx" "$dir/bin"
go build -o "$dir/bin/" ./cmd/frontend ./cmd/worker

port=${MCPFLEET_CLUSTER_PORT:-8098}
# Redis Cluster bus ports are given (--cluster-port), not port + 10000,
# which may fall in the ephemeral range.
nats_ports="" routes="" redis_ports="" bus_ports=""
if [ "$port" = 0 ]; then
  free_port port
  for _ in 1 2 3; do free_port np; free_port rp; nats_ports="$nats_ports $np"; routes="$routes $rp"; done
  for _ in 1 2 3 4 5 6; do free_port p; free_port bp; redis_ports="$redis_ports $p"; bus_ports="$bus_ports $bp"; done
  free_port fe1; free_port fe2; free_port w1; free_port w2; free_port a1; free_port a2
else
  for i in 1 2 3; do nats_ports="$nats_ports $((port + 10 + i))"; routes="$routes $((port + 20 + i))"; done
  for i in 1 2 3 4 5 6; do redis_ports="$redis_ports $((port + 30 + i))"; bus_ports="$bus_ports $((port + 50 + i))"; done
  fe1=$((port + 1)); fe2=$((port + 2)); w1=$((port + 41)); w2=$((port + 42)); a1=$((port + 43)); a2=$((port + 44))
fi
nats_ports=${nats_ports# } routes=${routes# } redis_ports=${redis_ports# } bus_ports=${bus_ports# }
key=${MCPFLEET_STATE_KEY:-$(head -c 32 /dev/urandom | base64)}

start_bg() { # name, command...
  local name=$1; shift
  "$@" >"$dir/$name.log" 2>&1 &
  echo "$name $!" >>"$dir/pids"
}
wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "cluster-ha: nothing listens on port $1; logs in $dir" >&2
  stop
  exit 1
}

# NATS: three nodes, each with routes to all three (its own is ignored).
i=0
for np in $nats_ports; do
  i=$((i + 1))
  r=$(echo "$routes" | cut -d' ' -f$i)
  {
    printf 'server_name: nats%s\nlisten: 127.0.0.1:%s\nmax_payload: 8MB\n' "$i" "$np"
    printf 'cluster {\n  name: mcpfleet\n  listen: 127.0.0.1:%s\n  routes: [\n' "$r"
    for x in $routes; do printf '    "nats-route://127.0.0.1:%s"\n' "$x"; done
    printf '  ]\n}\n'
  } >"$dir/nats$i.conf"
  start_bg "nats$i" "$NATS" -c "$dir/nats$i.conf"
done
for np in $nats_ports; do wait_port "$np"; done

# Redis Cluster: six nodes, then 3 masters with a replica each.
i=0
for p in $redis_ports; do
  i=$((i + 1))
  mkdir -p "$dir/redis$p"
  start_bg "redis$p" "$REDIS" --bind 127.0.0.1 --port "$p" --cluster-port "$(echo "$bus_ports" | cut -d' ' -f$i)" --dir "$dir/redis$p" --cluster-enabled yes \
    --cluster-config-file nodes.conf --cluster-node-timeout 2000 --appendonly yes --appendfsync everysec --save ""
done
for p in $redis_ports; do wait_port "$p"; done
nodes=""
for p in $redis_ports; do nodes="$nodes 127.0.0.1:$p"; done
# shellcheck disable=SC2086
"$REDIS_CLI" --cluster create $nodes --cluster-replicas 1 --cluster-yes >"$dir/redis-create.log" 2>&1 ||
  { echo "cluster-ha: redis-cli --cluster create failed; see $dir/redis-create.log" >&2; stop; exit 1; }
for _ in $(seq 1 300); do cluster_ok && break; sleep 0.1; done
cluster_ok || { echo "cluster-ha: the Redis Cluster did not reach cluster_state:ok" >&2; stop; exit 1; }

nats_url=""
for np in $nats_ports; do nats_url=${nats_url:+$nats_url,}nats://127.0.0.1:$np; done
# go-redis's cluster URL form: the first node, then ?addr= for the others.
first=${redis_ports%% *}
redis_url="redis://127.0.0.1:$first?" sep=""
for p in ${redis_ports#* }; do redis_url="$redis_url${sep}addr=127.0.0.1:$p"; sep="&"; done

export MCPFLEET_NATS_URL=$nats_url MCPFLEET_REDIS_URL=$redis_url MCPFLEET_REDIS_MODE=cluster
export MCPFLEET_DRAIN_DELAY=0
export MCPFLEET_STATE_KEY=$key MCPFLEET_LOG_FORMAT=json MCPFLEET_ALLOWED_HOSTS=127.0.0.1:$port,localhost:$port
start_bg worker1 "$dir/bin/worker" --id worker1 --fixture conformance --admin-listen "127.0.0.1:$w1"
start_bg worker2 "$dir/bin/worker" --id worker2 --fixture conformance --admin-listen "127.0.0.1:$w2"
start_bg frontend1 "$dir/bin/frontend" --id frontend1 --listen "127.0.0.1:$fe1" --admin-listen "127.0.0.1:$a1"
start_bg frontend2 "$dir/bin/frontend" --id frontend2 --listen "127.0.0.1:$fe2" --admin-listen "127.0.0.1:$a2"
wait_port "$fe1"
wait_port "$fe2"

user=""
[ "$(id -u)" = 0 ] && user="user root;"
cat >"$dir/nginx/nginx.conf" <<EOF
# Round robin over the frontends, no stickiness, SSE-safe.
$user
daemon off;
worker_processes 1;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/nginx/body;
  proxy_temp_path $dir/nginx/proxy;
  fastcgi_temp_path $dir/nginx/fastcgi;
  uwsgi_temp_path $dir/nginx/uwsgi;
  scgi_temp_path $dir/nginx/scgi;
  client_max_body_size 8m;
  upstream frontends {
    server 127.0.0.1:$fe1 max_fails=0;
    server 127.0.0.1:$fe2 max_fails=0;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://frontends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_buffering off;
      proxy_pass_header X-Accel-Buffering;  # for proxies further out
      proxy_request_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      # A draining frontend answers what reaches it after its lame-duck
      # delay with 503 (not processed), then closes its listener. Both are
      # retried on the next frontend, POSTs too (non_idempotent), so a
      # drain loses nothing. A frontend killed mid-request may have
      # forwarded it: the retry is then what a client's own retry would
      # be (a legacy request id still claimed is refused with -32600). A
      # worker lost mid-request is 502, never retried here.
      proxy_next_upstream error timeout http_503 non_idempotent;
      proxy_next_upstream_tries 2;
    }
  }
}
EOF
start_bg nginx "$NGINX" -c "$dir/nginx/nginx.conf" -p "$dir/nginx"
wait_port "$port"

url="http://127.0.0.1:$port/mcp"
{
  echo "MCPFLEET_CLUSTER_URL=$url"
  echo "MCPFLEET_CLUSTER_FRONTENDS=http://127.0.0.1:$fe1/mcp,http://127.0.0.1:$fe2/mcp"
  echo "MCPFLEET_CLUSTER_NATS=$nats_url"
  echo "MCPFLEET_CLUSTER_REDIS='$redis_url'"
  echo "MCPFLEET_CLUSTER_REDIS_PORTS='$redis_ports'"
} >"$dir/env"
echo "mcpfleet cluster-ha: $url (2 frontends, 2 workers, 3 NATS nodes, a Redis Cluster of 3 masters and 3 replicas, nginx; logs in $dir)"
echo "admin (/healthz, /readyz, /metrics): frontends http://127.0.0.1:$a1 http://127.0.0.1:$a2, workers http://127.0.0.1:$w1 http://127.0.0.1:$w2"
if [ "$cmd" = start ]; then exit 0; fi
trap 'echo; echo "stopping"; stop; exit 0' INT TERM
while :; do sleep 1; done
