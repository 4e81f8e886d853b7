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


def gate(arch: str | None, model: str | None, target: Target) -> str | None:
    """``None`` when ``arch``/``model`` admit ``target``, else ``"arch"`` or ``"model"``.

    As the original (docs/original.md 2.3): ``arch`` compares case-insensitively; ``model`` matches
    when the target's ``%02X_%02X`` string is a substring of the list, or (our addition) lies
    in one of its ``;``-separated range tokens (:func:`model_admits`). An unknown target
    matches no gate.
    """
    if arch is not None and (target.arch is None or arch.lower() != target.arch.lower()):
        return "arch"
    if model is not None and (target.model is None or not model_admits(model, target.model)):
        return "model"
    return None


def model_admits(model: str, cpu: str) -> bool:
    """Whether a ``model`` attribute admits the CPU's ``family_model`` string ``cpu``.

    The original's rule first: ``cpu`` is a substring of ``model``. Then each ``;``-separated
    token of the form ``FF_LO-FF_HI`` (upper-case hex, one family, low end first) admits the
    models of that family from ``LO`` to ``HI``, both included: ``19_10-19_1F`` admits
    ``19_10``, ``19_1A`` and ``19_1F``, not ``19_20`` nor ``1A_10``. Any other token keeps
    the plain substring meaning.
    """
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
