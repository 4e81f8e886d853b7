"""``model`` gating: the original's substring rule (docs/original.md 2.3) and our range
tokens ``FF_LO-FF_HI`` (docs/screens.md), in YAML and XML files alike."""

from __future__ import annotations

import pytest

from tiptop.screens import Target, load_text
from tiptop.screens.gating import gate, model_admits


@pytest.mark.parametrize(
    ("model", "cpu", "admitted"),
    [
        ("19_10-19_1F", "19_10", True),  # low end
        ("19_10-19_1F", "19_1F", True),  # high end
        ("19_10-19_1F", "19_17", True),
        ("19_10-19_1F", "19_0F", False),  # one before
        ("19_10-19_1F", "19_20", False),  # one past
        ("19_10-19_1F", "1A_15", False),  # another family
        ("19_10-19_1F", "18_15", False),
        ("19_00-19_0F;19_20-19_5F", "19_3C", True),  # second range of a list
        ("19_00-19_0F;19_20-19_5F", "19_10", False),  # between the ranges
        ("17_90-17_91", "17_91", True),
        ("17_90-17_91", "17_92", False),
        ("06_1A;19_60-19_AF", "06_1A", True),  # plain tokens keep the substring rule
        ("06_1A;19_60-19_AF", "19_A0", True),
        ("06_1A;19_60-19_AF", "06_1B", False),
        ("19_10-1A_1F", "19_80", False),  # two families: not a range
        ("19_10-19_1f", "19_15", False),  # lower-case hex: not a range (nor a substring)
        ("19_1F-19_10", "19_15", False),  # high end first: admits no model inside
    ],
)
def test_model_ranges(model: str, cpu: str, admitted: bool) -> None:
    # A range's ends are written in it, so the substring rule admits them too: what tells a
    # range from a wider one is the model just past each end.
    assert model_admits(model, cpu) is admitted
    assert gate("x86", model, Target("x86", cpu)) == (None if admitted else "model")


def test_unknown_models_match_no_range() -> None:
    assert gate(None, "19_10-19_1F", Target("x86", None)) == "model"
    assert not model_admits("19_10-19_1F", "Zen")


XML = b"""<tiptop>
  <screen name="zen4" desc="ranges in XML too" model="19_10-19_1F;19_60-19_AF">
    <counter alias="C" config="cycles" />
    <column header=" C" format="%2.0f" expr="delta(C)" />
  </screen>
</tiptop>"""


@pytest.mark.parametrize(("cpu", "offered"), [("19_61", True), ("19_AF", True), ("19_B0", False)])
def test_xml_screens_take_ranges(cpu: str, offered: bool) -> None:
    cfg = load_text(XML, Target("x86", cpu))
    assert [s.name for s in cfg.screens] == (["zen4"] if offered else [])


@pytest.mark.parametrize(
    ("revision", "admitted"),
    [
        (0x00, True),  # r0p0
        (0x02, True),  # r0p2, the high end
        (0x03, False),  # r0p3: one past
        (0x10, False),  # r1p0
        (None, False),  # revision unknown: only a plain token admits it
    ],
)
def test_arm_revision_tokens(revision: int | None, admitted: bool) -> None:
    """``II_PPP:rVpR-rVpR`` admits that part at those MIDR revisions only; the substring
    rule does not read into it (``41_D49`` is written in it, yet an r0p3 is not admitted)."""
    early = "41_D49:r0p0-r0p2"
    assert model_admits(early, "41_D49", revision) is admitted
    target = Target("arm64", "41_D49", revision)
    assert gate("arm64", early, target) == (None if admitted else "model")
    assert not model_admits(early, "41_D4F", revision)  # another part
    assert model_admits(f"{early};41_D49", "41_D49", revision)  # a plain token still admits
