"""A GPU sandbox is given the driver's shared device nodes and only the pinned GPU's own node
(evaluator/isolation/gpu_nodes.py), so candidate code that drops CUDA_VISIBLE_DEVICES cannot open another worker's GPU.

The driver's table is parsed from a file captured on a GPU host; the binding is checked inside real bubblewrap, on a
made-up host of three GPUs (regular files standing in for the device nodes)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from evaluator.errors import EnvironmentProblem
from evaluator.isolation import gpu_nodes
from evaluator.isolation.gpu_nodes import DriverGpu, nodes_for, parse_information
from evaluator.isolation.jail import SandboxUnavailable, open_jail
from evaluator.isolation.sandbox import run_group

REPO = Path(__file__).resolve().parents[2]
CAPTURED = REPO / "tests" / "fixtures" / "driver" / "h100-proc-driver-nvidia-gpus-information.txt"
SHARED = ["nvidia-caps", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidiactl"]
HOST = [*SHARED, "nvidia0", "nvidia1", "nvidia2"]
TABLE = [DriverGpu("GPU-aaaa", 0), DriverGpu("GPU-bbbb", 1), DriverGpu("GPU-cccc", 2)]


def test_the_captured_driver_table_gives_the_uuid_and_minor():
    # An H100's entry (tests/fixtures/driver/README.md): the UUID nvidia-smi and the verdicts give, minor 0.
    assert parse_information(CAPTURED.read_text()) == DriverGpu("GPU-5a5cd202-2e59-a8cf-c56b-c387dd74de53", 0)


@pytest.mark.parametrize(
    "text",
    [
        "Model: x\nDevice Minor: 0\n",  # no UUID
        "GPU UUID: GPU-aaaa\n",  # no minor
        "GPU UUID: GPU-aaaa\nDevice Minor: -1\n",
        "GPU UUID: MIG-aaaa\nDevice Minor: 0\n",
        "",
    ],
)
def test_a_table_entry_without_a_gpu_uuid_and_a_minor_is_none(text):
    assert parse_information(text) is None


def test_a_pinned_gpu_keeps_the_shared_nodes_and_its_own_only():
    assert nodes_for("GPU-bbbb", HOST, TABLE) == sorted([*SHARED, "nvidia1"])
    assert nodes_for("GPU-BBBB", HOST, TABLE) == sorted([*SHARED, "nvidia1"])  # UUID hex in either case
    # nvidia10 is not nvidia1's: minors are matched whole
    assert nodes_for("GPU-bbbb", [*HOST, "nvidia10"], TABLE) == sorted([*SHARED, "nvidia1"])


def test_no_pin_or_a_mig_pin_keeps_every_node():
    assert nodes_for(None, HOST, TABLE) == sorted(HOST)
    assert nodes_for("MIG-1234", HOST, TABLE) == sorted(HOST)


def test_a_pin_the_driver_does_not_list_is_refused_not_widened():
    with pytest.raises(EnvironmentProblem, match="does not list"):
        nodes_for("GPU-dddd", HOST, TABLE)
    with pytest.raises(EnvironmentProblem):  # listed twice: which node is unknown
        nodes_for("GPU-aaaa", HOST, [*TABLE, DriverGpu("GPU-aaaa", 2)])


@pytest.fixture
def three_gpu_host(tmp_path, monkeypatch):
    """/dev and the driver's table of a host with three GPUs, the nodes being empty files."""
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in HOST:
        (dev / name).write_text("")
    table = tmp_path / "gpus"
    for gpu in TABLE:
        folder = table / f"0000:{gpu.minor:02x}:00.0"
        folder.mkdir(parents=True)
        captured = CAPTURED.read_text()
        real = parse_information(captured)
        assert real is not None
        text = captured.replace(real.uuid, gpu.uuid)
        (folder / "information").write_text(
            "\n".join(f"Device Minor: \t {gpu.minor}" if "Minor" in line else line for line in text.splitlines())
        )
    monkeypatch.setattr(gpu_nodes, "DEV_DIR", str(dev))
    monkeypatch.setattr(gpu_nodes, "DRIVER_GPUS", str(table))
    return dev


def _nodes_inside(gpu: bool) -> list[str]:
    try:
        jail = open_jail(allow_unsandboxed=False)
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap unavailable here: {exc}")
    code = "import os; print(' '.join(sorted(n for n in os.listdir('/dev') if n.startswith('nvidia'))))"
    run = run_group([sys.executable, "-c", textwrap.dedent(code)], timeout_s=60, jail=jail, gpu=gpu)
    assert run.returncode == 0, run.output
    return run.output.split()


def test_inside_the_sandbox_a_pinned_worker_sees_only_its_gpus_node(three_gpu_host, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-cccc")
    assert _nodes_inside(gpu=True) == sorted([*SHARED, "nvidia2"])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _nodes_inside(gpu=True) == sorted(HOST)  # an unpinned run (the CLI on a host of one GPU) keeps all
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-cccc")
    assert _nodes_inside(gpu=False) == []  # no GPU asked for: no node at all


def test_a_pinned_worker_whose_gpu_the_driver_does_not_list_opens_no_gpu_sandbox(three_gpu_host, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-eeee")
    with pytest.raises(EnvironmentProblem, match="GPU-eeee"):
        _nodes_inside(gpu=True)


def test_the_verdicts_sandbox_record_says_which_gpu_node_was_bound(three_gpu_host, monkeypatch):
    jail = open_jail(allow_unsandboxed=True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb")
    assert "gpu_devices" not in jail.record().limits  # no GPU process yet: nothing to say
    jail.command(["true"], gpu=True)
    said = jail.record().limits["gpu_devices"]
    if jail.mode == "bubblewrap":
        assert said.startswith("/dev/nvidia1 of GPU-bbbb only")
    else:
        assert said == "not enforced: unsandboxed"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    if jail.mode == "bubblewrap":
        assert jail.record().limits["gpu_devices"].startswith("not enforced: not pinned")
