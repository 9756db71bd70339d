#!/usr/bin/env bash
# The mcpfleet cluster on one machine, without docker: a real nats-server,
# a real redis-server (persistent: sessions survive its restart), two
# frontends, two workers (with the conformance fixture) and nginx
# round-robin in front of the frontends, with no stickiness and SSE-safe
# settings. deploy/compose.yaml describes the same topology for docker
# (with the demo worker, no conformance fixture).
#
#   scripts/cluster.sh            start, print the URL, stop everything on Ctrl-C
#   scripts/cluster.sh start      start in the background; prints the URL
#   scripts/cluster.sh stop       stop a background cluster
#
# Environment (defaults in brackets):
#   MCPFLEET_CLUSTER_DIR   state, logs and pids [.cache/cluster]
#   MCPFLEET_CLUSTER_PORT  nginx port [8088]; 0 picks free ports for everything
#   MCPFLEET_STATE_KEY     requestState key shared by the workers [random per cluster]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=${MCPFLEET_CLUSTER_DIR:-$root/.cache/cluster}
cmd=${1:-run}

# free_port VAR: sets VAR to a loopback port below the usual ephemeral range
# (32768+) that nothing listens on and that no earlier call picked. Plain
# bash: a port is taken when a connection to it succeeds.
picked=" "
free_port() {
  local p
  for _ in $(seq 1 500); do
    p=$((20000 + RANDOM % 12000))
    case "$picked" in *" $p "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      picked="$picked$p "
      printf -v "$1" '%s' "$p"
      return 0
    fi
  done
  echo "cluster: no free loopback port found" >&2
  exit 1
}

stop() {
  [ -f "$dir/pids" ] || return 0
  # frontends and workers drain on SIGTERM; the others stop at once
  while read -r name pid; do
    kill -TERM "$pid" 2>/dev/null || true
  done <"$dir/pids"
  for _ in $(seq 1 100); do
    alive=0
    while read -r name pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$dir/pids"
    [ $alive -eq 0 ] && break
    sleep 0.1
  done
  while read -r name pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$dir/pids"
  rm -f "$dir/pids"
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
if [ "$cmd" != run ] && [ "$cmd" != start ]; then
  echo "usage: $0 [run|start|stop]" >&2
  exit 2
fi

GOBIN=$(go env GOPATH)/bin
# $(go env GOPATH)/bin first, as in make: scripts/deps.sh installs v2.15.2 there.
NATS=$(PATH="$GOBIN:$PATH" command -v nats-server || echo "$GOBIN/nats-server")
REDIS=$(command -v redis-server || echo /usr/bin/redis-server)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for b in "$NATS" "$REDIS" "$NGINX"; do
  [ -x "$b" ] || { echo "cluster: $b is missing; run 'make deps'" >&2; exit 1; }
done

stop
rm -rf "$dir"
mkdir -p "$dir/redis" "$dir/nginx" "$dir/bin"
go build -o "$dir/bin/" ./cmd/frontend ./cmd/worker

port=${MCPFLEET_CLUSTER_PORT:-8088}
if [ "$port" = 0 ]; then
  free_port port; free_port nats_port; free_port redis_port
  free_port fe1; free_port fe2; free_port w1; free_port w2; free_port a1; free_port a2
else
  nats_port=$((port + 10)); redis_port=$((port + 11)); fe1=$((port + 1)); fe2=$((port + 2)); w1=$((port + 21)); w2=$((port + 22)); a1=$((port + 23)); a2=$((port + 24))
fi
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
  echo "cluster: nothing listens on port $1; logs in $dir" >&2
  stop
  exit 1
}

printf 'listen: 127.0.0.1:%s\nmax_payload: 8MB\n' "$nats_port" >"$dir/nats.conf"
start_bg nats "$NATS" -c "$dir/nats.conf"
start_bg redis "$REDIS" --bind 127.0.0.1 --port "$redis_port" --dir "$dir/redis" --appendonly yes --appendfsync everysec --save ""
wait_port "$nats_port"
wait_port "$redis_port"

export MCPFLEET_NATS_URL=nats://127.0.0.1:$nats_port MCPFLEET_REDIS_URL=redis://127.0.0.1:$redis_port/0
# No lame-duck delay on a stop: nothing routes by readiness here.
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
cat >"$dir/env" <<EOF
MCPFLEET_CLUSTER_URL=$url
MCPFLEET_CLUSTER_FRONTENDS=http://127.0.0.1:$fe1/mcp,http://127.0.0.1:$fe2/mcp
MCPFLEET_CLUSTER_NATS=nats://127.0.0.1:$nats_port
MCPFLEET_CLUSTER_REDIS=redis://127.0.0.1:$redis_port/0
EOF
echo "mcpfleet cluster: $url (2 frontends, 2 workers, nats-server, redis-server, nginx; logs in $dir)"
echo "admin (/healthz, /readyz, /metrics): frontends http://127.0.0.1:$a1 http://127.0.0.1:$a2, workers http://127.0.0.1:$w1 http://127.0.0.1:$w2"
if [ "$cmd" = start ]; then exit 0; fi
trap 'echo; echo "stopping"; stop; exit 0' INT TERM
while :; do sleep 1; done
