"""bench/ncu_report_metrics.py reads a report's launches and metrics by the layout its docstring gives; here a
report written in that layout (a real one is not committed: the B200 fixtures it produced say where they came from)."""

from __future__ import annotations

import struct

import pytest

from tests.support.factories import REPO
from tests.support.script_modules import load_script


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: int | bytes, fixed64: bool = False) -> bytes:
    if fixed64:
        return _varint(number << 3 | 1) + value  # type: ignore[operator]
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _framed(message: bytes) -> bytes:
    return struct.pack("<I", len(message)) + message


def _metric(name_id: int, value: bytes, instances: tuple[tuple[bytes, bytes], ...] = ()) -> bytes:
    each = b"".join(_field(3, _field(1, key) + _field(2, val)) for key, val in instances)
    return _field(13, _field(1, name_id) + _field(2, value) + each)


def _report() -> bytes:
    strings = [
        b"gpu__time_duration.sum",
        b"sm__ops_path_tensor_op_x_sparsity_off.sum",
        b"device__attribute_display_name",
        b"sass__inst_executed_per_opcode",
    ]
    table = b"".join(_field(1, s) for s in strings)
    result = (
        _field(5, b"_Z4gemmv")
        + _field(7, b"gemm()")
        + _field(10, _field(1, 56) + _field(2, 1) + _field(3, 1))
        + _field(11, _field(1, 128) + _field(2, 1) + _field(3, 1))
        + _metric(0, _field(3, struct.pack("<d", 1234.5), fixed64=True))
        + _metric(1, _field(5, 30064771072))
        + _metric(2, _field(1, b"NVIDIA B200"))
        + _metric(3, _field(5, 30), ((_field(1, b"UTCOMMA"), _field(5, 10)), (_field(1, b"BRA"), _field(5, 20))))
    )
    source = _field(1, b"an embedded cubin would be here")
    header = _field(1, 1) + _field(2, 1) + _field(4, table) + _field(5, 8 + len(source) + len(result))
    return b"NVR\0" + _framed(_field(1, 7)) + _framed(header) + _framed(source) + _framed(result)


@pytest.fixture
def reader(monkeypatch):
    return load_script(REPO / "bench" / "ncu_report_metrics.py", "ncu_report_metrics", monkeypatch)


def test_each_launch_comes_with_its_names_dimensions_and_metric_values(reader):
    (launch,) = reader.launches(_report())
    assert (launch["mangled"], launch["demangled"]) == ("_Z4gemmv", "gemm()")
    assert (launch["grid"], launch["block"]) == ([56, 1, 1], [128, 1, 1])
    assert launch["metrics"] == {
        "device__attribute_display_name": "NVIDIA B200",
        "gpu__time_duration.sum": 1234.5,
        "sass__inst_executed_per_opcode": {"total": 30, "instances": {"UTCOMMA": 10, "BRA": 20}},
        "sm__ops_path_tensor_op_x_sparsity_off.sum": 30064771072,
    }
    (only,) = reader.launches(_report(), ("sm__ops_path_tensor_op_*.sum",))
    assert list(only["metrics"]) == ["sm__ops_path_tensor_op_x_sparsity_off.sum"]


def test_a_file_that_is_not_a_whole_report_is_refused(reader):
    with pytest.raises(ValueError, match="NVR"):
        reader.launches(b"PK\3\4" + _report()[4:])
    with pytest.raises(ValueError, match="past the end"):
        reader.launches(_report()[:-3])
