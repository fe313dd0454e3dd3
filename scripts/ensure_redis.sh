#!/usr/bin/env bash
# Make sure a redis-server binary exists (installing Debian's package if needed); with `start`,
# also make sure one answers on REDIS_URL's port, starting a local one in the data folder if not.
set -euo pipefail
mode=${1:-install}
cd "$(dirname "$0")/.."

bash scripts/ensure_debian_packages.sh redis-server=redis-server

if [ "$mode" = "start" ]; then
  url=${REDIS_URL:-redis://127.0.0.1:6379/0}
  hostport=${url#redis://}; hostport=${hostport%%/*}; hostport=${hostport##*@}
  host=${hostport%%:*}; port=${hostport##*:}; [ "$port" = "$host" ] && port=6379
  if redis-cli -h "$host" -p "$port" ping >/dev/null 2>&1; then
    echo "Redis answers at $host:$port"
  else
    mkdir -p data/redis
    redis-server --port "$port" --bind 127.0.0.1 --dir "$PWD/data/redis" --daemonize yes \
      --logfile "$PWD/data/redis/redis.log" --pidfile "$PWD/data/redis/redis.pid" --appendonly yes
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$port" ping >/dev/null && echo "Started Redis on 127.0.0.1:$port (data/redis)"
  fi
fi
