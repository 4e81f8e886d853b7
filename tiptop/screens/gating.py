"""``arch``/``model`` gating of screens and counters (docs/original.md section 2.3): which
CPU a file's ``arch`` and ``model`` attributes admit. Pure; no I/O."""

from __future__ import annotations

import re

from tiptop.screens.model import Target

__all__ = ["gate", "model_admits"]

#: A CPU's ``family_model`` string, upper-case hex (``19_11``).
_CPU_MODEL = re.compile(r"([0-9A-F]+)_([0-9A-F]+)\Z")
#: A ``model`` range token (our addition): ``19_10-19_1F``, one family, both ends included.
_MODEL_RANGE = re.compile(r"([0-9A-F]+)_([0-9A-F]+)-([0-9A-F]+)_([0-9A-F]+)\Z")
#: An Arm revision token (our addition): ``41_D49:r0p0-r0p2``, one part at the MIDR variants
#: and revisions from the first to the second, both included.
_REVISION_RANGE = re.compile(r"([0-9A-F]+_[0-9A-F]+):r(\d+)p(\d+)-r(\d+)p(\d+)\Z")


def gate(arch: str | None, model: str | None, target: Target) -> str | None:
    """``None`` when ``arch``/``model`` admit ``target``, else ``"arch"`` or ``"model"``.

    As the original (docs/original.md 2.3): ``arch`` compares case-insensitively; ``model`` matches
    when the target's ``%02X_%02X`` string is a substring of the list, or (our addition) lies
    in one of its ``;``-separated range tokens (:func:`model_admits`). An unknown target
    matches no gate.
    """
    if arch is not None and (target.arch is None or arch.lower() != target.arch.lower()):
        return "arch"
    if model is not None and (
        target.model is None or not model_admits(model, target.model, target.revision)
    ):
        return "model"
    return None


def model_admits(model: str, cpu: str, revision: int | None = None) -> bool:
    """Whether a ``model`` attribute admits the CPU's ``family_model`` string ``cpu``.

    Tokens ``II_PPP:rVpR-rVpR`` (our addition) admit part ``II_PPP`` from one MIDR variant
    and revision to another, both included, when ``revision`` (``variant << 4 | revision``)
    is known: ``41_D49:r0p0-r0p2`` admits an N2 r0p1, not an r0p3 nor an N2 of unknown
    revision. Then the original's rule on the other tokens: ``cpu`` is a substring of
    them. Then each ``;``-separated token of the form ``FF_LO-FF_HI`` (upper-case hex, one
    family, low end first) admits the models of that family from ``LO`` to ``HI``, both
    included: ``19_10-19_1F`` admits ``19_10``, ``19_1A`` and ``19_1F``, not ``19_20`` nor
    ``1A_10``. Any other token keeps the plain substring meaning.
    """
    plain = []
    for token in model.split(";"):
        r = _REVISION_RANGE.match(token.strip())
        if r is None:
            plain.append(token)
        elif r[1] == cpu and revision is not None:
            low, high = int(r[2]) << 4 | int(r[3]), int(r[4]) << 4 | int(r[5])
            if low <= revision <= high:
                return True
    model = ";".join(plain)
    if cpu in model:
        return True
    here = _CPU_MODEL.match(cpu)
    if here is None:
        return False
    family, number = here[1], int(here[2], 16)
    for token in model.split(";"):
        r = _MODEL_RANGE.match(token.strip())
        if r and r[1] == r[3] == family and int(r[2], 16) <= number <= int(r[4], 16):
            return True
    return False
