"""The refresh cycle: tasks found, counters attached, read and evaluated into a ``Frame``.

``docs/architecture.md`` draws one refresh's path through the parts of this package.
"""
