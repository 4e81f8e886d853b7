"""Fast unit tests: fakes, a ``Host`` record, hand-built frames; no processes, no tmux, no
setpriv (tests/unit/test_rooms.py keeps it so). ``python3 -m pytest -q tests/unit``."""
