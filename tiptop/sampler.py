"""One refresh: scan tasks, open/close counter groups, read, take deltas, evaluate columns.

CONTRACT (implemented by the counter-engine work; cli, batch and live depend on it):

``SamplerConfig``: dataclass with ``threads`` (-H), ``kernel`` (-K), ``only_pid``,
``only_name``, ``match_cmdline`` (-c), ``uid`` (-u, filters for real), ``collect``
(False for --no-collect), ``cpu_threshold`` (--cpu-min), ``sticky``.

``Sampler(screen, config, *, backend=None, proc_root="/proc", sysfs_root="/sys")``
    ``backend=None`` means the real kernel backend. Binding the screen's counters to this
    machine (``tiptop.events``) happens here; unavailable events are reported once in
    ``messages`` and their cells are ``Status.UNREADABLE``.
``Sampler.start() -> None``
    First scan: discover tasks, open counters, take baselines. Nothing is shown for it.
``Sampler.refresh() -> tiptop.frame.Frame``
    A frame covering the time since the previous ``start``/``refresh``.
``Sampler.reconfigure(screen=None, **config_changes) -> None``
    Switch screen or change config fields; counters are reopened as needed and the next
    ``refresh`` is a fresh start (iteration 0 again; call ``start`` implicitly).
``Sampler.attach_spawned(pid) -> None``
    Attach counters to a forked child that has not exec'd yet (enable_on_exec).
``Sampler.messages -> list[str]``
    Every distinct problem met so far, one line each (the error log).
``Sampler.close() -> None``
    Close every fd.
"""
