# Sourced by the GPU-host scripts: make an offline GPU host able to run the portal and the sandboxed evaluator
# from a bundle made by scripts/fetch_gpu_bundle.sh (Python 3.12 wheels in $BUNDLE/whl, Debian packages in
# $BUNDLE/deb). Exports PYTHONPATH, PATH, LD_LIBRARY_PATH and EVALUATOR_BWRAP; installs into $HOST_ENV_DIR.
HOST_ENV_DIR=${HOST_ENV_DIR:-/tmp/ptxbench-host}
PY=${PYTHON:-python3}
if [ -d "$BUNDLE/whl" ] && [ ! -d "$HOST_ENV_DIR/site" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$HOST_ENV_DIR/site" "$BUNDLE"/whl/*.whl
fi
[ -d "$HOST_ENV_DIR/site" ] && export PYTHONPATH="$HOST_ENV_DIR/site:${PYTHONPATH:-}"
if [ -d "$BUNDLE/deb" ] && [ ! -d "$HOST_ENV_DIR/root" ]; then
  for f in "$BUNDLE"/deb/*.deb; do dpkg -x "$f" "$HOST_ENV_DIR/root"; done
fi
if [ -d "$HOST_ENV_DIR/root" ]; then
  export PATH="$PATH:$HOST_ENV_DIR/root/usr/bin"  # after the host's own: only fills gaps (redis-server, bwrap)
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$HOST_ENV_DIR/root/usr/lib/x86_64-linux-gnu"
fi
if ! command -v bwrap >/dev/null 2>&1 && [ -x "$HOST_ENV_DIR/root/usr/bin/bwrap" ]; then
  export EVALUATOR_BWRAP="$HOST_ENV_DIR/root/usr/bin/bwrap"
fi
# If the driver gives profiling counters only to privileged processes, Nsight Compute cannot count inside the
# sandbox: let the evaluator repeat just the profile outside it (limits kept; the verdict notes it).
export EVALUATOR_ALLOW_UNSANDBOXED_PROFILE=${EVALUATOR_ALLOW_UNSANDBOXED_PROFILE:-1}
