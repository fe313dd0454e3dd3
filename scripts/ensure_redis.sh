#!/usr/bin/env bash
# Make sure a redis-server binary exists (installing Debian's package if needed). With `start`, also make sure a
# Redis for this portal answers, and print its URL on stdout (messages go to stderr):
# - REDIS_URL set: that one is used as given (one is started in the data folder when nothing answers at a local
#   address).
# - REDIS_URL unset: the portal's own Redis, started with its data in $PORTAL_DATA_DIR/redis (default ./data/redis),
#   on REDIS_PORT (default 6379) or, when another Redis already answers there, on one of the next 20 ports. "Ours" means its data folder is
#   ours: a Redis someone else started is never used without saying so.
set -euo pipefail
mode=${1:-install}
cd "$(dirname "$0")/.."

bash scripts/ensure_debian_packages.sh redis-server=redis-server >&2

[ "$mode" = "start" ] || exit 0

data=${PORTAL_DATA_DIR:-data}
mkdir -p "$data/redis"
dir=$(cd "$data/redis" && pwd -P)

redis_dir() { redis-cli -h "$1" -p "$2" config get dir 2>/dev/null | sed -n 2p; }
answers() { redis-cli -h "$1" -p "$2" ping 2>/dev/null | grep -q PONG; }
start_here() { # start a Redis with its data in $dir on 127.0.0.1:$1; true when it answers
  redis-server --port "$1" --bind 127.0.0.1 --dir "$dir" --daemonize yes --logfile "$dir/redis.log" \
    --pidfile "$dir/redis.pid" --appendonly yes >/dev/null 2>&1 || return 1
  for _ in $(seq 100); do answers 127.0.0.1 "$1" && return 0; sleep 0.1; done
  return 1
}

if [ -n "${REDIS_URL:-}" ]; then
  hostport=${REDIS_URL#redis://}; hostport=${hostport%%/*}; hostport=${hostport##*@}
  host=${hostport%%:*}; port=${hostport##*:}; [ "$port" = "$host" ] && port=6379
  if answers "$host" "$port"; then
    echo "Redis: using $REDIS_URL (REDIS_URL is set)" >&2
  elif start_here "$port"; then
    echo "Redis: started on 127.0.0.1:$port for REDIS_URL (data in $dir)" >&2
  else
    echo "Redis: nothing answers at REDIS_URL=$REDIS_URL and none could be started there" >&2
    exit 1
  fi
  echo "$REDIS_URL"
  exit 0
fi

# Ours already running (on the port it was started on last time)?
last=$(cat "$dir/port" 2>/dev/null || true)
first=${REDIS_PORT:-6379}
for port in $last $(seq "$first" $((first + 20))); do
  if answers 127.0.0.1 "$port"; then
    if [ "$(redis_dir 127.0.0.1 "$port")" = "$dir" ]; then
      echo "Redis: this portal's own on 127.0.0.1:$port (data in $dir)" >&2
      echo "$port" >"$dir/port"
      echo "redis://127.0.0.1:$port/0"
      exit 0
    fi
    [ "$port" = "$last" ] || echo "Redis: the one answering on 127.0.0.1:$port is not this portal's" \
      "(its data: $(redis_dir 127.0.0.1 "$port" || true)); not using it" >&2
  elif start_here "$port"; then
    echo "Redis: started this portal's own on 127.0.0.1:$port (data in $dir)" >&2
    echo "$port" >"$dir/port"
    echo "redis://127.0.0.1:$port/0"
    exit 0
  fi
done
echo "Redis: no free port in $first-$((first + 20)) for this portal's own Redis; set REDIS_URL" >&2
exit 1
