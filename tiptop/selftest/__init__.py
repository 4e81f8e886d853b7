"""``tiptop --selftest``: known-count machine-code kernels, counted through tiptop's engine.

``code`` spells the kernels (x86-64, aarch64), ``child`` runs them in a child process,
``measure`` attaches the screen's counters to it by pid, ``checks`` fits and judges, and
``report`` prints. Nothing is imported here: the child imports ``code`` alone, fast.
"""
