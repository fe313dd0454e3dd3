"""The corpus runner spread over several GPUs (`--gpus`): one process of the runner per GPU, pinned to it through
CUDA_VISIBLE_DEVICES, each running its part of every round; the rounds' records whole and in the manifest's order.

Here the "GPUs" are two made-up CUDA_VISIBLE_DEVICES values and the entries are CPU ones (their stage is the
policy), so the processes, the pinning and the records are the real ones on a host without a GPU."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

import corpus  # noqa: E402

NAMES = ["cublas_dlopen", "include_next_passwd", "import_hostname", "triton_typing_sys"]


def _chosen() -> list[dict]:
    return [e for e in corpus.entries() if e["name"] in NAMES]


def test_each_round_is_spread_over_the_gpus_and_recorded_whole_in_the_manifests_order(tmp_path):
    out = tmp_path / "corpus.json"
    argv = [sys.executable, str(Path(corpus.__file__)), "--only", ",".join(NAMES), "--repeat", "2"]
    run = subprocess.run(
        [*argv, "--gpus", "gpu-a,gpu-b", "--json", str(out)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rounds = json.loads(out.read_text())
    order = [e["name"] for e in _chosen()]
    assert [r["round"] for r in rounds] == [1, 2] and all(r["complete"] for r in rounds)
    for record in rounds:
        assert [o["name"] for o in record["outcomes"]] == order
        assert all(o["ok"] for o in record["outcomes"]), record["outcomes"]
        # Dealt in turn: the manifest's first, third, ... to the first GPU's process, the others to the second's.
        assert [o["gpu"] for o in record["outcomes"]] == ["gpu-a", "gpu-b", "gpu-a", "gpu-b"]
    # Each outcome is printed once as it ends, with its round and its GPU.
    for round_no in (1, 2):
        for name, gpu in zip(order, ["gpu-a", "gpu-b", "gpu-a", "gpu-b"], strict=True):
            lines = [ln for ln in run.stdout.splitlines() if ln.strip().startswith(f"[{round_no}] {name}:")]
            assert len(lines) == 1 and lines[0].endswith(f"(ok) on {gpu}"), lines


def test_a_part_whose_process_dies_fails_its_entries_and_keeps_the_others(tmp_path, monkeypatch):
    """The second GPU's process exits before evaluating anything: its entries are failed outcomes naming why,
    the first GPU's are kept."""
    real_popen = subprocess.Popen

    def popen(argv, *args, env=None, **kwargs):
        if env and env.get("CUDA_VISIBLE_DEVICES") == "gpu-b":
            argv = [sys.executable, "-c", "print('the part stops here'); raise SystemExit(3)"]
        return real_popen(argv, *args, env=env, **kwargs)

    monkeypatch.setattr(corpus.subprocess, "Popen", popen)
    seen: list[corpus.Outcome] = []
    outcomes = corpus.run_spread_round(
        _chosen(), ["gpu-a", "gpu-b"], 1, seen.append, beside=0, json_path=tmp_path / "corpus.json"
    )
    assert [o.name for o in outcomes] == [e["name"] for e in _chosen()]
    assert [o.ok for o in outcomes] == [True, False, True, False]
    assert all("the process of GPU gpu-b ended (exit 3)" in o.detail for o in outcomes if not o.ok)
    assert sorted(o.name for o in seen) == sorted(o.name for o in outcomes)


def test_spread_deals_gpu_entries_and_cpu_entries_each_in_turn():
    gpu = [{"name": f"g{i}", "gpu": True} for i in range(3)]
    cpu = [{"name": f"c{i}", "gpu": False} for i in range(3)]
    parts = corpus.spread([gpu[0], cpu[0], gpu[1], cpu[1], gpu[2], cpu[2]], 2)
    assert [[e["name"] for e in p] for p in parts] == [["g0", "g2", "c0", "c2"], ["g1", "c1"]]


def test_all_is_every_gpu_the_host_lists_by_uuid(tmp_path, monkeypatch):
    """`--gpus all` reads the host's GPUs as a GPU worker does (nvidia-smi, here a stand-in listing two)."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\necho '0, NVIDIA H200, GPU-aaaa, 580.159.04, 9.0'\necho '1, NVIDIA H200, GPU-bbbb, 580.159.04, 9.0'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert corpus.gpu_list("all") == ["GPU-aaaa", "GPU-bbbb"]
    assert corpus.gpu_list(" a, b ,") == ["a", "b"]


def test_the_relays_of_a_round_print_whole_lines_side_by_side(monkeypatch):
    """Each part's relay prints from its own thread; print writes a line and its end in two calls, so without one
    lock two relays spliced their lines into one (the round's test above failed so on a loaded 2-core machine).
    A stdout that yields between writes makes the splice all but certain. Mutation caught: `_say` without its
    lock."""

    class Yielding(io.StringIO):
        def write(self, text: str) -> int:
            time.sleep(0.0002)
            return super().write(text)

    out = Yielding()
    monkeypatch.setattr(sys, "stdout", out)
    lines = {gpu: [f"  [1] entry{i}: PASSED (ok) on {gpu}" for i in range(60)] for gpu in ("gpu-a", "gpu-b")}
    threads = [threading.Thread(target=lambda ls=ls: [corpus._say(line) for line in ls]) for ls in lines.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    printed = out.getvalue().splitlines()
    assert sorted(printed) == sorted(lines["gpu-a"] + lines["gpu-b"])
