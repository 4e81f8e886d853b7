"""tiptop: per-task hardware performance counters in a top-like view.

The import package is ``tiptop``; the distribution is ``tiptop-perf``.

numpy is imported here, once, with ``OPENBLAS_NUM_THREADS=1`` for the length of the import:
numpy's wheels link OpenBLAS, whose library constructor starts a pool of one thread per
core that spins for a while (OpenBLAS's README, "Setting the number of threads using
environment variables"). tiptop never calls BLAS, so that pool is only CPU spent at every
start and a second thread in tiptop's own row. The variable is put back as it was right
after, so that a command started with ``tiptop -- CMD`` gets the user's environment.
"""

import os as _os

__version__ = "0.1.0"


def _import_numpy_without_blas_threads() -> None:
    """Import numpy with OpenBLAS's thread pool limited to the calling thread."""
    name = "OPENBLAS_NUM_THREADS"
    before = _os.environ.get(name)
    _os.environ[name] = "1"
    try:
        import numpy  # noqa: F401  (imported for its side effect: loaded once, here)
    finally:
        if before is None:
            del _os.environ[name]
        else:
            _os.environ[name] = before


_import_numpy_without_blas_threads()
