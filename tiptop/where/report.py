"""The lines of one ``--where`` refresh, shared by batch text and csv
(``tiptop.outputs.where``) and the live window (``tiptop.live.where``): a head saying what
was sampled, how much and what was lost, then ``(share %, symbol, module)`` rows."""

from __future__ import annotations

from tiptop.outside import printable
from tiptop.where.profile import Profile

__all__ = ["OTHER", "TOP", "profile_head", "profile_lines"]

#: Functions shown per refresh in text and csv.
TOP = 20
#: The name of the line that adds up the functions past :data:`TOP`.
OTHER = "[other]"


def profile_head(profile: Profile) -> str:
    """The line above a refresh's functions: what was sampled, how much, what was lost
    (the cost: samples per second of the process's CPU time)."""
    lost = f", {profile.lost} lost (buffer full)" if profile.lost else ""
    return (
        f"PID {profile.pid} ({printable(profile.comm)}): {profile.samples} samples of "
        f"{profile.event} at {profile.rate_hz} Hz{lost}"
    )


def profile_lines(profile: Profile, top: int = TOP) -> list[tuple[float, str, str]]:
    """``(share %, symbol, module)`` of the ``top`` hottest functions, then one
    :data:`OTHER` line for the rest when there is any."""
    rows = [(profile.share(h), h.symbol, h.module) for h in profile.hot[:top]]
    rest = sum(h.samples for h in profile.hot[top:])
    if rest and profile.samples:
        more = len(profile.hot) - top
        rows.append((100.0 * rest / profile.samples, OTHER, f"{more} functions"))
    return rows
