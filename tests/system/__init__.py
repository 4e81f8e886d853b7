"""System tests: the real kernel, subprocesses (``python -m tiptop``), tmux and setpriv."""
