#!/usr/bin/env bash
# A client of the airlock lock service in plain bash + curl: define a resource, lock one selector
# (waiting in line while someone else holds it), read-modify-write its JSON, unlock.
#   AIRLOCK_URL=http://127.0.0.1:8080 AIRLOCK_KEY=<a WRITE key> ./examples/lock-client.sh shop:42 inventory
set -euo pipefail
url=${AIRLOCK_URL:-http://127.0.0.1:8080}
key=${AIRLOCK_KEY:?set AIRLOCK_KEY to a WRITE key}
resource=${1:-shop:42} selector=${2:-inventory}
path="$url/resource/$resource/$selector"
api() { curl -sS -H "x-api-key: $key" "$@"; }

# Define the resource (201 the first time, 200 after); a lock on it lives 30 s unless renewed.
api -o /dev/null -X POST "$url/resource" -d "{\"name\":\"$resource\",\"timeout\":30}"

# Lock: 200 + data when the lock is ours; 202 while another ticket holds it. Sending our ticket
# back keeps our place in line, so waiters get the lock in arrival order.
ticket='' status=''
for _ in $(seq 1 60); do
  headers=$(mktemp)
  data=$(api -D "$headers" ${ticket:+-H "x-ticket: $ticket"} "$path?lock=1&format=raw")
  status=$(awk 'NR==1 {print $2}' "$headers")
  ticket=$(awk 'tolower($1) == "x-ticket:" {print $2}' "$headers" | tr -d '\r')
  rm -f "$headers"
  [ "$status" = 202 ] || break
  sleep 1
done
[ "$status" = 200 ] || { echo "no lock: HTTP $status $data" >&2; exit 75; }
trap 'api -o /dev/null -X POST -H "x-ticket: $ticket" "$path/unlock"' EXIT

# Read-modify-write under the lock: bump a counter.
count=$(printf '%s' "$data" | sed -n 's/.*"count":\([0-9]*\).*/\1/p')
count=$(( ${count:-0} + 1 ))
api -f -X PUT -H "x-ticket: $ticket" -H 'content-type: application/json' \
  -d "{\"count\":$count,\"by\":\"$(hostname)\"}" "$path"
echo "$resource/$selector: count is now $count"
