"""The candidate process's record of each loaded module's image, read from CUPTI's resource callback data at the
x86-64 layout of `CUpti_ResourceData` and `CUpti_ModuleResourceData`. The layout was measured on an H100
(docs/runs/integrity/h100-2026-12-06c/probe/): the images read this way hashed to the build's cubins. Here the
structures are laid out in memory by ctypes, so a wrong offset reads the wrong bytes and fails."""

from __future__ import annotations

import ctypes
import hashlib

from evaluator.candidate_process import timing


class ModuleResourceData(ctypes.Structure):
    _fields_ = [("moduleId", ctypes.c_uint32), ("cubinSize", ctypes.c_size_t), ("pCubin", ctypes.c_char_p)]


class ResourceData(ctypes.Structure):
    _fields_ = [("context", ctypes.c_void_p), ("resourceHandle", ctypes.c_void_p), ("descriptor", ctypes.c_void_p)]


class Wrapped:
    """What cupti-python passes: an object whose `resource_descriptor` is the descriptor's address."""

    def __init__(self, address: int) -> None:
        self.resource_descriptor = address


def test_the_image_is_read_at_the_descriptors_pointer_and_size_by_either_form_of_the_callback_data():
    image = b"\x7fELF" + bytes(range(256)) * 40
    buffer = ctypes.create_string_buffer(image + b"trailing bytes that are not the image", len(image) + 37)
    module = ModuleResourceData(24, len(image), ctypes.cast(buffer, ctypes.c_char_p))
    resource = ResourceData(None, None, ctypes.addressof(module))
    expected = (24, hashlib.sha256(image).hexdigest())
    assert timing.module_image(Wrapped(ctypes.addressof(module))) == expected
    assert timing.module_image(ctypes.addressof(resource)) == expected


def test_an_absent_or_oversized_image_has_no_digest_so_it_matches_no_build():
    empty = ModuleResourceData(7, 0, None)
    assert timing.module_image(Wrapped(ctypes.addressof(empty))) == (7, "")
    huge = ModuleResourceData(8, timing.MAX_IMAGE_BYTES + 1, ctypes.c_char_p(b"x"))
    assert timing.module_image(Wrapped(ctypes.addressof(huge))) == (8, "")
    assert timing.module_image(Wrapped(0)) == (0, "")
