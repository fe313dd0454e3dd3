"""GPU memory the trusted parent owns and lends to a sandboxed candidate process.

Legacy CUDA IPC handles (cudaIpcGetMemHandle) cannot be opened from another PID namespace, and every candidate
process runs in its own (bubblewrap --unshare-pid). The virtual memory management API can: the parent creates
physical memory with a POSIX file descriptor as its shareable handle (cuMemCreate + cuMemExportToShareableHandle),
maps it into its own address space, and hands the descriptor to the child as an inherited file descriptor; the
child imports it (cuMemImportFromShareableHandle) and maps it into its own. Both see the same bytes; the parent
keeps its mapping whatever the child does with its own.

Driver functions are resolved at run time from the driver library that the CUDA runtime already loaded (no link
flag, no stub), through ctypes. Both sides need a current CUDA context (PyTorch's primary context: call after
`torch.empty(1, device=...)`). Pure ctypes and no PyTorch here; `tensor_view` wraps a mapping for PyTorch.

Used on both sides of the trust boundary (through evaluator/both_sides/shared_outputs.py): the parent creates and exports the
memory, the candidate process imports and maps it.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["DriverError", "SharedRegion", "driver", "tensor_view"]

_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
_CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0


class DriverError(RuntimeError):
    """A CUDA driver call failed (its name and the driver's error code)."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _AllocationProp(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_DRIVER: ctypes.CDLL | None = None


def driver() -> ctypes.CDLL:
    """The CUDA driver library (libcuda.so.1), loaded once."""
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = ctypes.CDLL("libcuda.so.1")
    return _DRIVER


def _call(name: str, *args: Any) -> None:
    fn = getattr(driver(), name)
    fn.restype = ctypes.c_int
    code = fn(*args)
    if code != 0:
        raise DriverError(f"{name} failed with CUDA driver error {code}")


def _prop(device: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type = _CU_MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = _Location(_CU_MEM_LOCATION_TYPE_DEVICE, device)
    return prop


def _granularity(device: int) -> int:
    size = ctypes.c_size_t()
    prop = _prop(device)
    _call("cuMemGetAllocationGranularity", ctypes.byref(size), ctypes.byref(prop), _CU_MEM_ALLOC_GRANULARITY_MINIMUM)
    return size.value


@dataclass
class SharedRegion:
    """One mapping of shareable device memory: `ptr` in this process, `size` bytes, `fd` the shareable handle
    (the creator's; -1 in an importer once the descriptor was consumed)."""

    ptr: int
    size: int
    fd: int
    device: int
    handle: int

    @classmethod
    def create(cls, nbytes: int, device: int = 0) -> SharedRegion:
        """New device memory of at least `nbytes`, mapped here read-write, with a descriptor to lend."""
        gran = _granularity(device)
        size = max(gran, -(-nbytes // gran) * gran)
        handle = ctypes.c_ulonglong()
        prop = _prop(device)
        _call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop), ctypes.c_ulonglong(0))
        fd = ctypes.c_int(-1)
        try:
            _call(
                "cuMemExportToShareableHandle",
                ctypes.byref(fd),
                handle,
                _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                ctypes.c_ulonglong(0),
            )
            ptr = _map(handle, size, device, gran)
        except Exception:
            _call("cuMemRelease", handle)
            raise
        return cls(ptr=ptr, size=size, fd=fd.value, device=device, handle=handle.value)

    @classmethod
    def open(cls, fd: int, size: int, device: int = 0) -> SharedRegion:
        """Map memory lent by another process as descriptor `fd` (the descriptor is closed here once imported)."""
        handle = ctypes.c_ulonglong()
        _call(
            "cuMemImportFromShareableHandle",
            ctypes.byref(handle),
            ctypes.c_void_p(fd),
            _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        )
        os.close(fd)
        try:
            ptr = _map(handle, size, device, _granularity(device))
        except Exception:
            _call("cuMemRelease", handle)
            raise
        return cls(ptr=ptr, size=size, fd=-1, device=device, handle=handle.value)

    def close(self) -> None:
        """Unmap here and drop this process's reference (the memory lives while another process maps it)."""
        if self.ptr:
            _call("cuMemUnmap", ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(self.size))
            _call("cuMemAddressFree", ctypes.c_ulonglong(self.ptr), ctypes.c_size_t(self.size))
            _call("cuMemRelease", ctypes.c_ulonglong(self.handle))
            self.ptr = 0
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _map(handle: ctypes.c_ulonglong, size: int, device: int, alignment: int) -> int:
    ptr = ctypes.c_ulonglong()
    _call(
        "cuMemAddressReserve",
        ctypes.byref(ptr),
        ctypes.c_size_t(size),
        ctypes.c_size_t(alignment),
        ctypes.c_ulonglong(0),
        ctypes.c_ulonglong(0),
    )
    try:
        _call("cuMemMap", ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle, ctypes.c_ulonglong(0))
        desc = _AccessDesc(_Location(_CU_MEM_LOCATION_TYPE_DEVICE, device), _CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        _call("cuMemSetAccess", ptr, ctypes.c_size_t(size), ctypes.byref(desc), ctypes.c_size_t(1))
    except Exception:
        _call("cuMemAddressFree", ptr, ctypes.c_size_t(size))
        raise
    return ptr.value


def tensor_view(torch: Any, region: SharedRegion, offset: int, shape: list[int], dtype: str) -> Any:
    """A PyTorch tensor over `region` at byte `offset` (no copy): viewed as bytes, then as `dtype`."""
    numel = 1
    for d in shape:
        numel *= d
    want = torch.empty(0, dtype=getattr(torch, dtype)).element_size() * numel
    if offset < 0 or offset + want > region.size:
        raise ValueError(f"view of {want} bytes at {offset} is outside the {region.size}-byte region")

    class _Bytes:
        __cuda_array_interface__ = {
            "shape": (max(want, 1),),
            "typestr": "|u1",
            "data": (region.ptr + offset, False),
            "version": 3,
        }

    raw = torch.as_tensor(_Bytes(), device=f"cuda:{region.device}")[:want]
    return raw.view(getattr(torch, dtype)).view(shape)
