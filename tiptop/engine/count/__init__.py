"""Counting: a screen's counters planned for this PMU, opened on every watched task within
the fd budget, read once per refresh, and turned into deltas, times and scaling."""
