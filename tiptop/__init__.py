"""tiptop: per-task hardware performance counters in a top-like view.

The import package is ``tiptop``; the distribution is ``tiptop-perf``.

numpy is imported here, once, with ``OPENBLAS_NUM_THREADS=1`` for the length of the import:
numpy's wheels link OpenBLAS, whose library constructor starts a pool of one thread per
core that spins for a while (OpenBLAS's README, "Setting the number of threads using
environment variables"). tiptop never calls BLAS, so that pool is only CPU spent at every
start and a second thread in tiptop's own row. The variable is put back as it was right
after, so that a command started with ``tiptop -- CMD`` gets the user's environment.

The garbage collector is paused for that import, then what it made is frozen, with
whatever the process made before it (``gc.freeze``, the gc module's documentation):
numpy's modules, types and functions live as long as the process, and the collections
the import would trigger find next to no garbage among them (a few hundred objects of
~30,000). The collector is then on again as it was, and no later collection, nor the
interpreter's at exit, traverses them (benchmarks/README.md, tenth stop).
:func:`imports_frozen` does the same for ``tiptop.cli``'s imports, and
``tiptop.cli.run`` freezes what start-up made the same way.
"""

import contextlib as _contextlib
import gc as _gc
import os as _os
from collections.abc import Iterator as _Iterator

__version__ = "0.1.0"


@_contextlib.contextmanager
def imports_frozen() -> _Iterator[None]:
    """Imports of modules that live as long as the process, made with the collector
    paused, then what they made frozen, and the collector as it was (the module's
    docstring)."""
    collecting = _gc.isenabled()
    _gc.disable()
    try:
        yield
    finally:
        _gc.freeze()
        if collecting:
            _gc.enable()


def _import_numpy_without_blas_threads() -> None:
    """Import numpy with OpenBLAS's thread pool limited to the calling thread, the
    collector paused, and freeze what the import made."""
    name = "OPENBLAS_NUM_THREADS"
    before = _os.environ.get(name)
    _os.environ[name] = "1"
    try:
        with imports_frozen():
            import numpy  # noqa: F401  (imported for its side effect: loaded once, here)
    finally:
        if before is None:
            del _os.environ[name]
        else:
            _os.environ[name] = before


_import_numpy_without_blas_threads()
