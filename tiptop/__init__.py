"""tiptop: per-task hardware performance counters in a top-like view.

The import package is ``tiptop``; the distribution is ``tiptop-perf``.
"""

__version__ = "0.1.0"
