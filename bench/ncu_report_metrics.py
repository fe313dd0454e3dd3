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

Field = tuple[int, int, object]  # (number, wire type, value: int for varints, bytes otherwise)


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


def _first(msg: list[Field], number: int, default: object = None) -> object:
    return next((v for n, _, v in msg if n == number), default)


def _all(msg: list[Field], number: int) -> list[object]:
    return [v for n, _, v in msg if n == number]


def _value(data: bytes) -> object:
    for number, _, raw in fields(data):
        if number == 1:
            return bytes(raw).decode("utf-8", "replace")  # type: ignore[arg-type]
        if number == 2:
            return struct.unpack("<f", raw)[0]  # type: ignore[arg-type]
        if number == 3:
            return struct.unpack("<d", raw)[0]  # type: ignore[arg-type]
        if number in (4, 5):
            return raw
    return None


def _instance(msg: list[Field]) -> tuple[str, object]:
    key, value = _first(msg, 1), _first(msg, 2)
    return (
        str(_value(key)) if isinstance(key, bytes) else "",
        _value(value) if isinstance(value, bytes) else None,
    )


def _dims(data: object) -> list[int] | None:
    if not isinstance(data, bytes):
        return None
    msg = fields(data)
    return [int(_first(msg, n, 0)) for n in (1, 2, 3)]  # type: ignore[call-overload]


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
        table = _first(header, 4)
        strings = [bytes(s).decode() for s in _all(fields(table), 1)] if isinstance(table, bytes) else []  # type: ignore[arg-type]
        sources, count = int(_first(header, 1, 0)), int(_first(header, 2, 0))  # type: ignore[call-overload]
        for index in range(sources + count):
            entry, offset = _framed(data, offset)
            if index < sources:
                continue
            result = fields(entry)
            metrics: dict[str, object] = {}
            for raw in _all(result, 13):
                metric = fields(raw)  # type: ignore[arg-type]
                name_id = int(_first(metric, 1, 0))  # type: ignore[call-overload]
                name = strings[name_id] if name_id < len(strings) else f"#{name_id}"
                if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                    continue
                value = _first(metric, 2)
                total = _value(value) if isinstance(value, bytes) else None
                instances = [fields(i) for i in _all(metric, 3)]  # type: ignore[arg-type]
                if instances:  # an instanced metric (per opcode, per unit...): its total and each instance's value
                    metrics[name] = {"total": total, "instances": dict(_instance(i) for i in instances)}
                else:
                    metrics[name] = total
            results.append(
                {
                    "mangled": bytes(_first(result, 5, b"")).decode(),  # type: ignore[arg-type]
                    "demangled": bytes(_first(result, 7, b"")).decode(),  # type: ignore[arg-type]
                    "grid": _dims(_first(result, 10)),
                    "block": _dims(_first(result, 11)),
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
