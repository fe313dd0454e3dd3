#!/usr/bin/env bash
# End to end on a GPU host with no internet: Redis, a fresh SQLite database, a GPU worker, the web tier;
# submit the Hopper reference GEMM and a broken kernel through the API, wait, and print both verdicts as
# the site shows them. Usage: bash scripts/gpu_e2e.sh [BUNDLE_DIR]  (default .gpu-bundle, made by
# scripts/fetch_gpu_bundle.sh). Writes logs and verdicts to $OUT (default ./e2e-out).
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=${1:-.gpu-bundle}
OUT=${OUT:-$PWD/e2e-out}
WORK=$(mktemp -d /tmp/ptxbench-e2e.XXXX)
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

source scripts/gpu_host_env.sh
REDIS_BIN=$(command -v redis-server || true)
[ -x "$REDIS_BIN" ] || { echo "no redis-server (install it or pass a bundle with .deb files)"; exit 3; }

export DEBUG=1 PORTAL_DATA_DIR="$WORK/data" DATABASE_URL="sqlite:///$WORK/data/portal.sqlite3"
export REDIS_URL=redis://127.0.0.1:6391/0 EVALUATION_TIMEOUT=900
"$REDIS_BIN" --port 6391 --bind 127.0.0.1 --save "" --appendonly no --daemonize yes --logfile "$OUT/redis.log"
sleep 0.5

$PY manage.py migrate --noinput -v 0 || exit 4
$PY manage.py sync_tasks || exit 4
TOKEN=$($PY manage.py shell -v 0 -c "
from django.contrib.auth.models import User
from portal.accounts.services import token_create
u = User.objects.create_user('e2e', password='e2e-not-used-password-123')
print(token_create(user=u, name='e2e')[1])" | tail -1)

# GPU_WORKER_ARGS="--cpu-stages-only --arch sm_90a" rehearses the script on a machine without a GPU.
$PY manage.py gpu_worker ${GPU_WORKER_ARGS:-} >"$OUT/worker.log" 2>&1 &
WORKER=$!
$PY manage.py runserver 127.0.0.1:8017 --noreload >"$OUT/web.log" 2>&1 &
WEB=$!
trap 'kill $WORKER $WEB 2>/dev/null; redis-cli -p 6391 shutdown nosave >/dev/null 2>&1 || kill $(pgrep -f "redis-server.*6391") 2>/dev/null' EXIT
for _ in $(seq 60); do curl -fsS http://127.0.0.1:8017/healthz >/dev/null 2>&1 && break; sleep 0.5; done

submit() {  # name file -> submission id
  $PY - "$1" "$2" "$TOKEN" <<'PY'
import json, sys, urllib.request
name, path, token = sys.argv[1:]
body = json.dumps({"task": "gemm_n7168_k5120", "arch": "sm_90a", "name": name, "source": open(path).read()}).encode()
req = urllib.request.Request("http://127.0.0.1:8017/api/v1/submissions", body,
    {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
print(json.load(urllib.request.urlopen(req))["id"])
PY
}
cat > "$WORK/broken.cu" <<'CU'
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
// a type error the compiler must report
void run(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) { int x = A; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
CU
REF=$(submit "hopper_tma_wgmma (expert reference)" tasks/gemm_n7168_k5120/solutions/hopper_tma_wgmma/kernel.cu)
BAD=$(submit "broken" "$WORK/broken.cu")
echo "submitted: reference #$REF, broken #$BAD"

$PY - "$REF" "$BAD" "$OUT" <<'PY'
import html, json, re, sys, time, urllib.request
ids, out = sys.argv[1:3], sys.argv[3]
deadline = time.time() + 900
final = {}
while time.time() < deadline and len(final) < len(ids):
    for sid in ids:
        data = json.load(urllib.request.urlopen(f"http://127.0.0.1:8017/api/v1/submissions/{sid}"))
        ev = data["evaluations"][0]
        if ev["final"] and sid not in final:
            final[sid] = data
            print(f"#{sid} final after {time.time() - (deadline - 900):.0f} s: {ev['state']}", flush=True)
    time.sleep(2)
for sid in ids:
    page = urllib.request.urlopen(f"http://127.0.0.1:8017/submissions/{sid}/").read().decode()
    open(f"{out}/submission-{sid}.html", "w").write(page)
    section = re.search(r'<section id="verdict">(.*?)</section>', page, re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", section.group(1))) if section else "(no verdict section)"
    text = re.sub(r"[ \t]+", " ", re.sub(r"\n\s*\n+", "\n", text)).strip()
    print(f"\n===== submission #{sid} as the site shows it =====\n{text[:3000]}")
    data = final.get(sid) or json.load(urllib.request.urlopen(f"http://127.0.0.1:8017/api/v1/submissions/{sid}"))
    json.dump(data, open(f"{out}/submission-{sid}.json", "w"), indent=2)
    print("API result:", json.dumps(data["evaluations"][0].get("result"), indent=None))
sys.exit(0 if len(final) == len(ids) else 1)
PY
status=$?
cp "$WORK"/data/artifacts/*/verdict.json "$OUT/" 2>/dev/null || true
for d in "$WORK"/data/artifacts/*/; do cp "$d/verdict.json" "$OUT/verdict-$(basename "$d").json" 2>/dev/null; done
exit $status
