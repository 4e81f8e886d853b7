"""Hardware-counter tests: exact in the emulated-PMU guest (``run.sh``), looser on a real PMU."""
