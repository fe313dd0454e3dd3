# Sourced by the GPU-host scripts: make an offline GPU host able to run the portal and the sandboxed evaluator
# from $BUNDLE, either the bundle of scripts/fetch_gpu_bundle.sh (Python 3.12 wheels in whl/, Debian packages in
# deb/) or the compressed carry of scripts/make_gpu_carry.sh (the same packages installed and packed as
# site.tar.xz, the .debs beside it). Exports PYTHONPATH, PATH, LD_LIBRARY_PATH and EVALUATOR_BWRAP; unpacks into
# $HOST_ENV_DIR.
HOST_ENV_DIR=${HOST_ENV_DIR:-/tmp/ptxbench-host}
PY=${PYTHON:-python3}
if [ ! -d "$HOST_ENV_DIR/site" ]; then
  if [ -d "$BUNDLE/whl" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$HOST_ENV_DIR/site" "$BUNDLE"/whl/*.whl
  elif [ -f "$BUNDLE/site.tar.xz" ]; then
    mkdir -p "$HOST_ENV_DIR/site"
    tar xJf "$BUNDLE/site.tar.xz" -C "$HOST_ENV_DIR/site" --strip-components=1
  fi
fi
[ -d "$HOST_ENV_DIR/site" ] && export PYTHONPATH="$HOST_ENV_DIR/site${PYTHONPATH:+:$PYTHONPATH}"
if [ ! -d "$HOST_ENV_DIR/root" ]; then
  for f in "$BUNDLE"/deb/*.deb "$BUNDLE"/*.deb; do
    [ -f "$f" ] && dpkg -x "$f" "$HOST_ENV_DIR/root"
  done
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
