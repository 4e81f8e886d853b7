"""Tracepoints and dynamic trace events by name (``sched:sched_switch``), through tracefs.

Each event the kernel can trace has a directory ``events/<subsystem>/<event>/`` in tracefs,
whose ``id`` file holds the number to open it with: ``perf_event_attr.type =
PERF_TYPE_TRACEPOINT``, ``config`` = that id (perf_event_open(2), "PERF_TYPE_TRACEPOINT";
Documentation/trace/events.rst). Dynamic events (kprobes, uprobes: ``probe:...``) are there
too once created. tracefs is mounted at ``/sys/kernel/tracing``, and older systems reach it
through debugfs at ``/sys/kernel/debug/tracing`` (Documentation/trace/ftrace.rst, "The File
System"); both are looked for under the sysfs root, so tests can use a fake tree.

tracefs is root-only by default (its top directory has mode 0700), so an unprivileged user
cannot read the ids: the lines here say which of "not mounted", "not readable" or "no such
event" holds, with the path.
"""

from __future__ import annotations

import errno
import os
import re

from tiptop.errors import EventError
from tiptop.readonly import readonly

#: ``subsystem:event``: one colon (libpfm4's ``pmu::EVENT`` has two), names as tracefs
#: spells its directories.
NAME = re.compile(r"^([A-Za-z0-9_]+):([A-Za-z0-9_]+)$")

#: Where tracefs may be, relative to the sysfs root (``/sys``).
PLACES = (("kernel", "tracing"), ("kernel", "debug", "tracing"))

_MOUNT_HINT = "mount it with: mount -t tracefs nodev /sys/kernel/tracing"


@readonly
class Lookup:
    """Where tracefs' ``events`` directory is (``events``), or why it was not found:
    ``why`` names every place looked at; ``unreadable`` when one was refused to us."""

    events: str | None
    why: str = ""
    unreadable: bool = False

    def advice(self) -> str:
        """Why there is no events directory, and what to do about it."""
        return f"{self.why}; {'run as root' if self.unreadable else _MOUNT_HINT}"


def events_dir(sysfs_root: str) -> Lookup:
    """The first readable tracefs ``events`` directory, or why there is none (not mounted
    there, or not readable: the line then says what to do)."""
    absent, refused, other = [], [], []
    for parts in PLACES:
        top = os.path.join(sysfs_root, *parts)
        events = os.path.join(top, "events")
        try:
            os.listdir(events)
            return Lookup(events)
        except PermissionError:
            refused.append(top)
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ENOTDIR):
                absent.append(top)  # an empty mount point, or a debugfs without tracing/
            else:
                other.append(f"{events}: {e.strerror}")
    if refused:  # where it is, we may not look: the places it is not are beside the point
        why = [f"{' and '.join(refused)} not readable by uid {os.geteuid()} (root only)"]
    else:
        why = [f"tracefs not mounted at {' or '.join(absent)}"] if absent else []
    return Lookup(None, "; ".join(why + other), bool(refused))


def tracepoint_id(subsystem: str, event: str, sysfs_root: str) -> int:
    """The id of tracepoint ``subsystem:event``; ``EventError`` (one line) when tracefs is
    not mounted, not readable, or has no such event."""
    name = f"{subsystem}:{event}"
    found = events_dir(sysfs_root)
    if found.events is None:
        raise EventError(f"tracepoint {name}: {found.advice()}")
    events = found.events
    sub_dir = os.path.join(events, subsystem)
    if not os.path.isdir(sub_dir):
        raise EventError(
            f"tracepoint {name}: no subsystem {subsystem!r} in {events} "
            "(tiptop --list-events names the subsystems)"
        )
    id_path = os.path.join(sub_dir, event, "id")
    try:
        with open(id_path) as f:
            text = f.read().strip()
    except FileNotFoundError:
        raise EventError(
            f"tracepoint {name}: no event {event!r} in {sub_dir} (its directories are the names)"
        ) from None
    except PermissionError:
        raise EventError(
            f"tracepoint {name}: {id_path} is not readable by uid {os.geteuid()}; run as root"
        ) from None
    except OSError as e:
        raise EventError(f"tracepoint {name}: cannot read {id_path}: {e.strerror}") from None
    try:
        return int(text)
    except ValueError:
        raise EventError(f"tracepoint {name}: {id_path} holds {text!r}, not an id") from None


def subsystems(sysfs_root: str) -> tuple[str | None, list[str], str]:
    """``(events directory, subsystem names, why none)`` for ``--list-events``."""
    found = events_dir(sysfs_root)
    events = found.events
    if events is None:
        return None, [], found.advice()
    try:
        names = sorted(n for n in os.listdir(events) if os.path.isdir(os.path.join(events, n)))
    except OSError as e:
        return events, [], f"{events}: {e.strerror}"
    return events, names, ""
