"""The Prometheus exporter (``tiptop --serve``, ``--textfile``): frames turned into counter
totals by a bounded set of labels (:mod:`.aggregate`), the cgroup of each task
(``tiptop.kernel.cgroup``), the exposition over ``prometheus_client`` (:mod:`.serve`, the only
importer of that library), the HTTP server (:mod:`.httpd`) and the textfile writer
(:mod:`.textfile`). docs/exporter.md is the user's guide.
"""
