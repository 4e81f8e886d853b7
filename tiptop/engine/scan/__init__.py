"""Scanning: which tasks exist and what ``/proc`` says of them (names, users, CPU times),
reading no ``stat`` that cannot have changed (``engine.activity``'s rules)."""
