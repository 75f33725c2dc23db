"""numpy as a module that loads at its first use (importlib's LazyLoader).

Every broker imports the modules that use numpy (the produce check of keys on compacted topics, records/record_scan.py;
the log cleaner's offset map and chunk filter, storage/key_hash.py and what imports it), few ever run them: loaded at
import, numpy and its BLAS library cost an idle node about 10 MiB of RSS and a thread (benchmarks/idle_rss.py). The
module put in `sys.modules` by `numpy_on_first_use()` runs numpy's own import at the first attribute read. Modules on
a node's import path take `np` from here (or from a module that did), never by an `import numpy` statement: on
Python 3.11 that statement reads the module's `__spec__`, which loads it.

Where numpy has no wheel (`find_spec` finds nothing, or a finder refuses it) the function returns None and its
callers take their pure-Python paths, as they did when `import numpy` raised ImportError. A numpy that is found but
fails to load raises at first use instead of at import.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

__all__ = ["numpy_on_first_use"]


def numpy_on_first_use() -> Any:
    """The numpy module (not loaded yet unless something already loaded it), or None where it cannot be found."""
    if "numpy" in sys.modules:
        return sys.modules["numpy"]  # None when a test made numpy unimportable that way
    try:
        spec = importlib.util.find_spec("numpy")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.loader is None:
        return None
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["numpy"] = module
    spec.loader.exec_module(module)
    return module
