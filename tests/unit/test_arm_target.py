"""The host's target on arm64: ``arm64`` and the MIDR's ``%02X_%03X`` implementer_part, from
fake /proc/cpuinfo text or the sysfs ``midr_el1``; x86 and other machines unchanged."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from tiptop.cli.screens import arm_model, arm_revision, host_target
from tiptop.screens import Target

GRAVITON2 = """\
processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
CPU revision\t: 1

processor\t: 1
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""
#: A big.LITTLE phone: the first processor's part is the one used.
BIG_LITTLE = GRAVITON2.replace("0xd0c\nCPU revision", "0xd05\nCPU revision")


@pytest.mark.parametrize(
    ("text", "midr", "model"),
    [
        (GRAVITON2, "", "41_D0C"),
        (BIG_LITTLE, "", "41_D05"),
        ("CPU implementer\t: 0xc0\nCPU part\t: 0xac3\n", "", "C0_AC3"),  # AmpereOne
        ("", "0x00000000410fd4f1\n", "41_D4F"),  # no cpuinfo lines: the sysfs MIDR
        ("CPU implementer\t: 0x41\n", "0x00000000410fd401", "41_D40"),  # part missing
        ("CPU implementer\t: junk\nCPU part\t: 0xd0c\n", "", None),
        ("", "", None),
    ],
)
def test_arm_model_from_midr_fields(text: str, midr: str, model: str | None) -> None:
    assert arm_model(text, midr) == model


def test_host_target_per_machine(tmp_path: Path) -> None:
    arm = tmp_path / "cpuinfo-arm"
    arm.write_text(GRAVITON2)
    x86 = tmp_path / "cpuinfo-x86"
    x86.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n")
    nothing = str(tmp_path / "absent")
    assert host_target(str(arm), machine="aarch64", midr=nothing) == Target("arm64", "41_D0C", 0x31)
    midr = tmp_path / "midr_el1"
    midr.write_text("0x00000000410fd490\n")
    n2_r0p0 = Target("arm64", "41_D49", 0x00)
    assert host_target(nothing, machine="aarch64", midr=str(midr)) == n2_r0p0
    assert host_target(nothing, machine="aarch64", midr=nothing) == Target("arm64", None)
    assert host_target(str(x86), machine="x86_64") == Target("x86", "19_11")  # unchanged
    assert host_target(str(arm), machine="riscv64") == Target("riscv64", None)


@pytest.mark.parametrize(
    ("text", "midr", "revision", "shown"),
    [
        (GRAVITON2, "", 0x31, "41_D0C r3p1"),  # CPU variant 0x3, CPU revision 1
        ("", "0x00000000410fd490\n", 0x00, "41_D49 r0p0"),  # Neoverse N2 r0p0
        ("", "0x00000000410fd493", 0x03, "41_D49 r0p3"),
        ("", "0x00000000412fd491", 0x21, "41_D49 r2p1"),
        ("CPU variant\t: 0x0\nCPU revision\t: 2\n", "0x410fd493", 0x02, "41_D49 r0p2"),
        ("CPU variant\t: junk\n", "", None, "41_D49"),
        ("", "", None, "41_D49"),
    ],
)
def test_arm_revision_from_midr_fields(
    text: str, midr: str, revision: int | None, shown: str
) -> None:
    """The MIDR's variant (bits 23:20) and revision (bits 3:0), cpuinfo's lines first: what
    tells a Neoverse N2 r0p0-r0p2 (perf's STALL_SLOT correction) from r0p3 and later."""
    assert arm_revision(text, midr) == revision
    assert Target("arm64", "41_D49" if "D0C" not in shown else "41_D0C", revision).shown() == shown


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("intel-06_A7", Target("x86", "06_A7")),
        ("qemu-epyc-17_01", Target("x86", "17_01")),
        ("zen4-19_11", Target("x86", "19_11")),
        ("neoverse-n2-41_D49", Target("arm64", "41_D49", 0x03)),
    ],
)
def test_each_cpuinfo_fixture_names_its_cpu_on_any_machine(
    name: str, target: Target, tmp_path: Path
) -> None:
    """The machine is the one the cpuinfo file describes, not the one running: the suite as
    on an Arm CPU (TIPTOP_TEST_CPUINFO) gets the arm64 screens on an x86 machine too."""
    path = Path(__file__).resolve().parents[1] / "data" / "cpuinfo" / name
    assert host_target(str(path), midr=str(tmp_path / "absent")) == target


def test_a_cpuinfo_that_names_no_machine_is_this_machines(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\n")
    absent = str(tmp_path / "absent")
    here = host_target(str(path), machine=platform.machine(), midr=absent)
    assert host_target(str(path), midr=absent) == here
