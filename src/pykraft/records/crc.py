"""CRC-32C (Castagnoli), the checksum of record batch v2. All callers go through this one function."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType

import google_crc32c


def _crc32c_extension() -> ModuleType | None:
    """The `crc32c` package's C extension, loaded without the package's __init__.

    google_crc32c only accepts `bytes`; the `crc32c` package (a dependency of kio) reads any buffer, so memoryview
    slices of a segment are checksummed without being copied first. Its __init__ imports importlib.metadata (and
    with it email, zipfile, csv, bz2, lzma) and argparse for its command line: ~2 MiB of every node's idle RSS
    (benchmarks/quorum.py) for one function. The extension module alone has that function. None when the package
    or its extension is missing (the caller then copies into bytes).
    """
    loaded = sys.modules.get("crc32c._crc32c")
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("crc32c")  # finds the package without running its __init__
    for directory in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(directory, "_crc32c" + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                module_spec = importlib.util.spec_from_loader(loader.name, loader)
                assert module_spec is not None  # a loader is given
                module = importlib.util.module_from_spec(module_spec)
                loader.exec_module(module)
                return module
    return None


_EXTENSION = _crc32c_extension()
if _EXTENSION is not None:
    _crc32c_any_buffer: Callable[[bytes | bytearray | memoryview], int] = _EXTENSION.crc32c
else:  # pragma: no cover - kio always brings the crc32c package; the fallback copies.

    def _crc32c_any_buffer(data: bytes | bytearray | memoryview) -> int:
        return int(google_crc32c.value(bytes(data)))


_crc32c_bytes: Callable[[bytes], int] = google_crc32c.value


def crc32c(data: bytes | bytearray | memoryview) -> int:
    if type(data) is bytes:
        return _crc32c_bytes(data)
    return _crc32c_any_buffer(data)
