"""Third-party code vendored for the tests only, verbatim (tests/vendor/README.md); never
imported by tiptop/ (tests/unit/test_perf_metric_py.py checks)."""
