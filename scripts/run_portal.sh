#!/usr/bin/env bash
# Bring the portal up on a prepared virtualenv: Redis, migrations, task catalog, admin user,
# a worker for the CPU queues, and gunicorn on 127.0.0.1:8000. Ctrl-C stops the worker and the site.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
BIND=${BIND:-127.0.0.1:8000}
mkdir -p data/logs

bash scripts/ensure_redis.sh start
$PY manage.py migrate --noinput -v 0
$PY manage.py sync_tasks
# Real H200 verdicts of the expert reference kernels (docs/verdicts/), so the leaderboards are not empty.
$PY manage.py import_reference_verdicts
$PY manage.py ensure_admin
$PY manage.py collectstatic --noinput -v 0

# CPU queues only here; GPU hosts run `manage.py gpu_worker` for their architecture's queue.
$PY manage.py rqworker default agent >>data/logs/worker.log 2>&1 &
worker=$!
# Repairs evaluations and model runs whose worker died and jobs a Redis restart lost, every RECONCILE_INTERVAL s.
$PY manage.py reconcile --loop >>data/logs/reconcile.log 2>&1 &
reconcile=$!
trap 'kill $worker $reconcile 2>/dev/null; wait $worker $reconcile 2>/dev/null' EXIT INT TERM
echo "Worker (queues: default, agent) pid $worker, log data/logs/worker.log; reconcile loop pid $reconcile"
echo "Portal on http://$BIND  (admin: http://$BIND/admin/)"
.venv/bin/gunicorn portal.wsgi:application --bind "$BIND" --workers "${WEB_WORKERS:-3}" \
  --access-logfile - --error-logfile - --log-level warning
