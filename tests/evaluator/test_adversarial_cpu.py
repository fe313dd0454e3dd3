"""The adversarial corpus entries that need no GPU (tests/adversarial/corpus.json, gpu=false), each against its
expected verdict, plus a legitimate evaluation after the faults. Host-code tricks run in the pipeline's CPU mode.

Entries whose containment needs the sandbox (bubblewrap) or a pids cgroup are skipped, with the reason, where
those are unavailable: running a fork bomb or file writes unconfined would harm the test machine.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

import corpus  # noqa: E402

CAPS = corpus.capabilities()
CPU_ENTRIES = corpus.entries(gpu=False)


@pytest.mark.parametrize("entry", CPU_ENTRIES, ids=[e["name"] for e in CPU_ENTRIES])
def test_cpu_entry_gets_its_expected_verdict(entry):
    why = corpus.unmet(entry, CAPS)
    if why:
        pytest.skip(f"not contained on this machine, so not run: {why}")
    listener = None
    if entry["name"] == "network_socket":
        # A listener on the host's loopback: the sandboxed candidate must not reach it.
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 47613))
        listener.listen(1)
        listener.settimeout(0.1)
    try:
        outcome = corpus.run_entry(entry, CAPS)
    finally:
        if listener is not None:
            with pytest.raises(TimeoutError):
                listener.accept()  # nothing connected
            listener.close()
    assert outcome.ok, f"{entry['name']}: expected {outcome.expected}, got {outcome.actual}: {outcome.detail}"
    if entry.get("clean_after"):
        assert outcome.clean_after == "PASSED"
    verdict = outcome.verdict
    if verdict.get("sandbox") is not None:  # the mode recorded is the one this machine allows
        assert verdict["sandbox"]["mode"] == ("bubblewrap" if CAPS["sandbox"] is None else "unsandboxed")
        assert bool(verdict["sandbox"]["reason"]) == (CAPS["sandbox"] is not None)


def test_write_outside_left_nothing_behind():
    entry = next(e for e in CPU_ENTRIES if e["name"] == "write_outside_tmp")
    why = corpus.unmet(entry, CAPS)
    if why:
        pytest.skip(why)
    corpus.run_entry(entry, CAPS)
    for path in ("/etc", "/usr", "/var/tmp", "/work", str(corpus.REPO), str(corpus.REPO / "evaluator")):
        assert not (Path(path) / "ptxbench-adversarial").exists(), path


def test_manifest_covers_every_trick_of_the_issue():
    names = {e["name"] for e in corpus.entries()}
    tricks = {
        "cached_by_pointer", "stale_after_first", "zeros", "fixed_input_constant", "side_stream", "input_modified",
        "output_unwritten", "uninitialised_shared_memory", "nan_output", "wgmma_dead_code", "cublas_dlopen",
        "fake_verdict_on_stdout", "write_outside_tmp", "network_socket", "fork_bomb", "print_gigabytes",
        "infinite_loop", "illegal_address", "all_gpu_memory", "template_bomb", "include_etc_passwd",
    }  # fmt: skip
    assert tricks <= names
    for e in corpus.entries():
        assert (corpus.HERE / e["file"]).is_file(), e["file"]
        assert e["expect"]["status"], e["name"]
        assert e["on"] in corpus.load()["tasks"]


def test_links_planted_in_the_build_folder_are_never_written_through():
    """triton_escape_build_links plants `kernel.sass` as a link to a `.pth` path outside the sandbox; a SASS stage
    writing the listing through it would run code unsandboxed. Mutation caught: `(build / "kernel.sass").write_text(...)`."""
    entry = next(e for e in CPU_ENTRIES if e["name"] == "triton_escape_build_links")
    target = Path("/tmp/ptxbench-adversarial-sass-target.pth")
    target.unlink(missing_ok=True)
    outcome = corpus.run_entry(entry, CAPS)
    assert outcome.ok, outcome.detail
    assert not target.exists()
