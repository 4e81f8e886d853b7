"""Frame sources built on another source: rows summed by cgroup (``bycgroup``)."""
