#!/usr/bin/env bash
# Bring the portal up on a prepared virtualenv: Redis, migrations, task catalog, admin user,
# a worker for the CPU queues, and gunicorn on 127.0.0.1:8000. Ctrl-C stops the worker and the site.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
BIND=${BIND:-127.0.0.1:8000}
# The address first, before anything starts or is announced: a second `make run` (or any server on BIND) gets one
# line saying so and which BIND to use, not a banner followed by gunicorn's errors.
if ! $PY scripts/check_bind.py "$BIND"; then
  exit 1
fi
# Everything this portal writes (database, logs, Redis data, secrets, artifacts) goes under one folder.
mkdir -p "${PORTAL_DATA_DIR:-data}/logs"
PORTAL_DATA_DIR=$(cd "${PORTAL_DATA_DIR:-data}" && pwd -P)
export PORTAL_DATA_DIR
logs=$PORTAL_DATA_DIR/logs
# A development server: DEBUG on unless the environment says otherwise (the settings default is off).
export DEBUG=${DEBUG:-1}
if [ "$DEBUG" = "1" ]; then
  echo "DEBUG=1: development mode (debug pages; SECRET_KEY and AGENT_FERNET_KEY, when unset, are random ones kept in $PORTAL_DATA_DIR). Set DEBUG=0 for production."
fi

# Prints the URL of the Redis to use: REDIS_URL when set, else this portal's own (never another's unannounced).
REDIS_URL=$(bash scripts/ensure_redis.sh start)
export REDIS_URL
$PY manage.py migrate --noinput -v 0
$PY manage.py sync_tasks
# Real H200 verdicts of the expert reference kernels (docs/verdicts/), so the leaderboards are not empty.
$PY manage.py import_reference_verdicts
$PY manage.py ensure_admin
$PY manage.py collectstatic --noinput -v 0
# Serve the collected files (with their .gz, e.g. plotly.min.js 4.8 MB -> 1.4 MB), not the sources via finders.
export STATIC_FROM_FINDERS=${STATIC_FROM_FINDERS:-0}

# CPU queues only here; GPU hosts run `manage.py gpu_worker` for their architecture's queue.
$PY manage.py rqworker default agent >>"$logs"/worker.log 2>&1 &
worker=$!
# Kernel submissions wait on their architecture's GPU queue. Serve them here too: with this machine's GPU when
# it has a supported one, else the CPU stages only (policy, compile, SASS; verdicts say STATIC_ONLY).
gpu_workers=()
if $PY manage.py gpu_worker --help >/dev/null 2>&1 && command -v nvidia-smi >/dev/null 2>&1 \
    && nvidia-smi -L >/dev/null 2>&1; then
  setsid $PY manage.py gpu_worker >>"$logs"/gpu-worker.log 2>&1 &
  gpu_workers+=($!)
elif [ "${CPU_STAGE_WORKERS:-1}" = "1" ]; then
  for arch in sm_90a sm_100a; do
    setsid $PY manage.py gpu_worker --cpu-stages-only --arch $arch >>"$logs"/gpu-worker.log 2>&1 &
    gpu_workers+=($!)
  done
fi
# Repairs evaluations and model runs whose worker died and jobs a Redis restart lost, every RECONCILE_INTERVAL s.
$PY manage.py reconcile --loop >>"$logs"/reconcile.log 2>&1 &
reconcile=$!
# Public result datasets: a build is enqueued on the default queue every RESULTS_DATASET_INTERVAL s (a version is
# written only when the rows changed).
$PY manage.py build_results_dataset --loop >>"$logs"/datasets.log 2>&1 &
datasets=$!
# One SIGTERM each, once: a GPU worker then gives its running evaluation back to the queue and stops the
# evaluator, so it exits in seconds (a second signal would be RQ's cold shutdown, which kills the job's process
# and leaves the evaluator running). The GPU workers run in sessions of their own (setsid) so that the terminal's
# Ctrl-C is not that second signal.
stopping=0
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  echo "Stopping the workers (a running evaluation goes back to the queue)..."
  kill $worker $reconcile $datasets ${gpu_workers[*]} 2>/dev/null || true
  wait $worker $reconcile $datasets ${gpu_workers[*]} 2>/dev/null || true
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
echo "Data: $PORTAL_DATA_DIR (database, logs/, redis/, admin_password.txt); Redis: $REDIS_URL"
echo "Workers: default+agent pid $worker ($logs/worker.log); GPU queues pids ${gpu_workers[*]:-none} ($logs/gpu-worker.log); reconcile loop pid $reconcile; result datasets loop pid $datasets"
echo "Portal on http://$BIND  (admin: http://$BIND/admin/)"
.venv/bin/gunicorn portal.wsgi:application --bind "$BIND" --workers "${WEB_WORKERS:-3}" \
  --access-logfile - --error-logfile - --log-level warning
