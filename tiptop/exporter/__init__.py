"""The Prometheus exporter (``tiptop --serve``, ``--textfile``): frames turned into counter
totals by a bounded set of labels (:mod:`.aggregate`), the cgroup of each task
(``tiptop.kernel.cgroup``), and the HTTP server and textfile writer over ``prometheus_client``
(:mod:`.serve`, the only importer of that library). docs/exporter.md is the user's guide.
"""
