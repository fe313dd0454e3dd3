#!/usr/bin/env python3
"""Metric values of each profiled launch in an Nsight Compute report file (.ncu-rep), read without Nsight Compute.

For turning a report captured elsewhere (a GPU this project has no access to) into a test fixture when no host with
`ncu --import` is at hand; bench/import_ncu_report.sh is the way when one is. Run here, on a report a developer
chose; the evaluator never reads reports this way (it imports its own with ncu, in the sandbox).

    python3 bench/ncu_report_metrics.py REPORT.ncu-rep [PATTERN ...] > out.json

PATTERN: keep only metrics whose names match one of these shell patterns ('sm__ops_path_tensor_op_utc*.sum';
default: every metric). Prints one JSON object:
{"file": name, "sha256": digest, "launches": [{"mangled", "demangled", "grid", "block", "metrics": {...}}]}.

The layout, as read from Nsight Compute 2025.3 reports: "NVR\\0", a little-endian uint32 length and a file header
message; then blocks, each a uint32-length-prefixed header message (1: source count, 2: result count, 4: string table
as repeated strings in its field 1, 5: payload size) followed by that many uint32-length-prefixed entries, sources
first, then one ProfileResult per launch (5: mangled name, 7: demangled name, 10/11: grid/block as x, y, z in
fields 1-3, 13: repeated metric results, each 1: index into the block's string table, 2: value with 1: string,
2: float, 3: double, 4: uint32, 5: uint64, and for an instanced metric 3: repeated instances, each 1: key and
2: value, both values as in 2). Protocol Buffers wire format throughout. An instanced metric comes out as
{"total": value, "instances": {key: value}}: e.g. `sass__inst_executed_per_opcode`, the executions per SASS opcode.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import struct
import sys
from pathlib import Path

Field = tuple[int, int, int | bytes]  # (number, wire type, value: int for varints, bytes otherwise)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def fields(data: bytes) -> list[Field]:
    """One message's fields in order; raises ValueError on anything that is not a well-formed message."""
    out: list[Field] = []
    i = 0
    while i < len(data):
        tag, i = _varint(data, i)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, wire, value))
            continue
        if wire == 2:
            size, i = _varint(data, i)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
        if i + size > len(data):
            raise ValueError("field runs past its message")
        out.append((number, wire, data[i : i + size]))
        i += size
    return out


def _ints(msg: list[Field], number: int) -> list[int]:
    return [v for n, _, v in msg if n == number and isinstance(v, int)]


def _blobs(msg: list[Field], number: int) -> list[bytes]:
    return [v for n, _, v in msg if n == number and isinstance(v, bytes)]


def _int(msg: list[Field], number: int) -> int:
    return next(iter(_ints(msg, number)), 0)


def _blob(msg: list[Field], number: int) -> bytes | None:
    return next(iter(_blobs(msg, number)), None)


def _value(data: bytes | None) -> object:
    """A value message: the first of its typed fields that is set."""
    for number, _, raw in fields(data or b""):
        if isinstance(raw, int):  # uint32, uint64
            return raw
        if number == 1:
            return raw.decode("utf-8", "replace")
        if number == 2:
            return struct.unpack("<f", raw)[0]
        if number == 3:
            return struct.unpack("<d", raw)[0]
    return None


def _instance(msg: list[Field]) -> tuple[str, object]:
    return str(_value(_blob(msg, 1))), _value(_blob(msg, 2))


def _dims(data: bytes | None) -> list[int] | None:
    if data is None:
        return None
    msg = fields(data)
    return [_int(msg, n) for n in (1, 2, 3)]


def _framed(data: bytes, offset: int) -> tuple[bytes, int]:
    if offset + 4 > len(data):
        raise ValueError("truncated length prefix")
    (size,) = struct.unpack_from("<I", data, offset)
    end = offset + 4 + size
    if end > len(data):
        raise ValueError("entry runs past the end of the file")
    return data[offset + 4 : end], end


def launches(data: bytes, patterns: tuple[str, ...] = ()) -> list[dict[str, object]]:
    """Every ProfileResult of the report, with its metrics (only those matching a pattern, when given)."""
    if data[:4] != b"NVR\0":
        raise ValueError("not an Nsight Compute report (no NVR magic)")
    _, offset = _framed(data, 4)
    results: list[dict[str, object]] = []
    while offset < len(data):
        header_bytes, offset = _framed(data, offset)
        header = fields(header_bytes)
        table = _blob(header, 4)
        strings = [s.decode() for s in _blobs(fields(table), 1)] if table is not None else []
        sources, count = _int(header, 1), _int(header, 2)
        for index in range(sources + count):
            entry, offset = _framed(data, offset)
            if index < sources:
                continue
            result = fields(entry)
            metrics: dict[str, object] = {}
            for raw in _blobs(result, 13):
                metric = fields(raw)
                name_id = _int(metric, 1)
                name = strings[name_id] if name_id < len(strings) else f"#{name_id}"
                if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                    continue
                total = _value(_blob(metric, 2))
                instances = [fields(i) for i in _blobs(metric, 3)]
                if instances:  # an instanced metric (per opcode, per unit...): its total and each instance's value
                    metrics[name] = {"total": total, "instances": dict(_instance(i) for i in instances)}
                else:
                    metrics[name] = total
            results.append(
                {
                    "mangled": (_blob(result, 5) or b"").decode(),
                    "demangled": (_blob(result, 7) or b"").decode(),
                    "grid": _dims(_blob(result, 10)),
                    "block": _dims(_blob(result, 11)),
                    "metrics": dict(sorted(metrics.items())),
                }
            )
    return results


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    data = path.read_bytes()
    out = {"file": path.name, "sha256": hashlib.sha256(data).hexdigest(), "launches": launches(data, tuple(argv[1:]))}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
