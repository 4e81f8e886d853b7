"""tiptop.cells: the status codes, and their plain-int twins used in numpy expressions."""

from __future__ import annotations

import numpy as np

from tiptop.cells import STATUS_DTYPE, Code, Status, valued


def test_codes_are_the_statuses_as_plain_ints() -> None:
    """Every status has its code, of type int exactly (numpy's fast path), same value."""
    for s in Status:
        code = getattr(Code, s.name)
        assert type(code) is int and code == s, (s, code)
    assert {k for k in vars(Code) if not k.startswith("_")} == {s.name for s in Status}


def test_valued_is_ok_or_suspect() -> None:
    st = np.array([int(s) for s in Status], STATUS_DTYPE)
    assert valued(st).tolist() == [s in (Status.OK, Status.SUSPECT) for s in Status]
