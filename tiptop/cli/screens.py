"""The screens a run can show: built-ins around the config file's, ``-S``, ``--export``.

Reading the host (``/proc/cpuinfo`` for the ``arch``/``model`` gating of docs/original.md
section 2.3) and the rc file search live here, in the command layer, so ``tiptop.screens``
stays pure.
"""

from __future__ import annotations

import contextlib
import os
import platform
import stat
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING

from tiptop.errors import TiptopError, UsageError
from tiptop.files import open_regular
from tiptop.host import Host
from tiptop.kernel.explain import no_pmu_line
from tiptop.options import Options
from tiptop.outside import printable, shown
from tiptop.readonly import mutable
from tiptop.screens.model import ScreenSpec, Target, VariantChoice

if TYPE_CHECKING:
    from tiptop.screens.loader import BuiltinScreen


@mutable
class ScreenSet:
    """The screens in the original's order and what the config file said.

    A built-in screen is built when first asked for (:meth:`screen`, :attr:`screens`):
    building checks a screen and parses its columns, and a run shows one screen of about
    ten, which the others would cost it at every start (benchmarks/README.md,
    "Start-up"). Each is built once and kept here; what is built never goes stale (the
    package's own data, for this CPU)."""

    entries: Sequence[ScreenSpec | BuiltinScreen] = ()
    options: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    path: str | None = None
    #: Per built-in screen name: which variant this CPU got and why
    #: (``tiptop.screens.loader.builtin_variants``); empty with ``--only-conf``.
    variants: dict[str, VariantChoice] = field(default_factory=dict)
    #: The CPU the screens were gated for (``arch``/``model``, :func:`host_target`).
    target: Target = field(default_factory=Target)
    #: The built-in entries built so far, by index.
    _built: dict[int, ScreenSpec] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        """Each screen's name, in order, none built."""
        return [e.name for e in self.entries]

    def screen(self, index: int) -> ScreenSpec:
        """Screen ``index``, built if it was not."""
        entry = self.entries[index]
        if isinstance(entry, ScreenSpec):
            return entry
        built = self._built.get(index)
        if built is None:
            built = self._built[index] = entry.build()
        return built

    @property
    def screens(self) -> list[ScreenSpec]:
        """Every screen, built: a new list (live mode adds to its own)."""
        return [self.screen(i) for i in range(len(self.entries))]


#: The first CPU's Main ID Register (Documentation/ABI/testing/sysfs-devices-system-cpu).
MIDR_EL1 = "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1"


def host_target(
    cpuinfo: str | None = None, *, machine: str | None = None, midr: str = MIDR_EL1
) -> Target:
    """This CPU as the config's ``arch``/``model`` gating sees it (docs/original.md 2.3): ``x86``
    and ``%02X_%02X`` family_model from /proc/cpuinfo (``cpuinfo``, by default the file the
    Host names: ``Host.cpuinfo``); ``arm64`` and ``%02X_%03X`` implementer_part of the MIDR
    (:func:`arm_model`); the machine name elsewhere. The machine is the one that file
    describes (:func:`cpuinfo_machine`), else ``machine``'s, else this one's: the Host's
    cpuinfo is the one place that says which CPU the screens are for."""
    if cpuinfo is None:
        cpuinfo = Host.read(raise_fds=False).cpuinfo
    text = _read_text(cpuinfo)
    machine = machine or cpuinfo_machine(text) or platform.machine()
    if machine in ("x86_64", "i686", "i386"):
        fam = mod = None
        for line in text.splitlines():
            key, _, val = line.partition(":")
            key = key.strip()
            with contextlib.suppress(ValueError):  # "junk": not said
                if key == "cpu family" and fam is None:
                    fam = int(val)
                elif key == "model" and mod is None:
                    mod = int(val)
            if fam is not None and mod is not None:
                break
        model = f"{fam:02X}_{mod:02X}" if fam is not None and mod is not None else None
        return Target("x86", model)
    if machine in ("aarch64", "arm64"):
        midr_text = _read_text(midr)
        return Target("arm64", arm_model(text, midr_text), arm_revision(text, midr_text))
    return Target(machine, None)


def cpuinfo_machine(text: str) -> str | None:
    """The machine a /proc/cpuinfo text describes: ``aarch64`` for arm64's ``CPU
    implementer`` lines (arch/arm64/kernel/cpuinfo.c), ``x86_64`` for x86's ``vendor_id``
    and ``cpu family`` (arch/x86/kernel/cpu/proc.c); None when it says neither."""
    keys = {line.partition(":")[0].strip() for line in text.splitlines()[:64]}
    if "CPU implementer" in keys:
        return "aarch64"
    if "cpu family" in keys or "vendor_id" in keys:
        return "x86_64"
    return None


def _read_text(path: str) -> str:
    """The text of ``path``, or ``""`` when it cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def arm_model(cpuinfo: str, midr: str = "") -> str | None:
    """An Arm CPU's model string ``II_PPP``: the MIDR's implementer (bits 31:24) and part
    number (bits 15:4) in upper-case hex, e.g. ``41_D0C`` for Arm's Neoverse N1, the same
    fields the kernel's tools/perf/pmu-events/arch/arm64/mapfile.csv keys on (variant and
    revision are :func:`arm_revision`'s). From the first processor's ``CPU implementer``/
    ``CPU part`` lines of ``/proc/cpuinfo`` text (arch/arm64/kernel/cpuinfo.c), else from
    the ``midr_el1`` sysfs text (``0x00000000410fd0c1``); ``None`` when neither says."""
    fields = _midr_pair(
        cpuinfo, midr, ("CPU implementer", 16, 24, 0xFF), ("CPU part", 16, 4, 0xFFF)
    )
    return None if fields is None else f"{fields[0]:02X}_{fields[1]:03X}"


def arm_revision(cpuinfo: str, midr: str = "") -> int | None:
    """An Arm CPU's MIDR variant (bits 23:20) and revision (bits 3:0) as ``variant << 4 |
    revision`` (``0x03`` for r0p3, the Neoverse N2 revision that perf's
    ``strcmp_cpuid_str(0x410fd493)`` tests for), from the first processor's ``CPU variant``
    (hex) and ``CPU revision`` (decimal) lines of ``/proc/cpuinfo`` text, else from the
    ``midr_el1`` sysfs text; ``None`` when neither says."""
    fields = _midr_pair(cpuinfo, midr, ("CPU variant", 16, 20, 0xF), ("CPU revision", 10, 0, 0xF))
    return None if fields is None else (fields[0] & 0xF) << 4 | fields[1] & 0xF


#: A MIDR field: its /proc/cpuinfo key, the base cpuinfo prints it in, its shift and mask.
MidrField = tuple[str, int, int, int]


def _midr_pair(cpuinfo: str, midr: str, a: MidrField, b: MidrField) -> tuple[int, int] | None:
    """Two MIDR fields from the first processor's cpuinfo lines, else from the ``midr_el1``
    text; ``None`` when neither says."""
    got: dict[str, int] = {}
    for line in cpuinfo.splitlines():
        key, _, val = line.partition(":")
        key = key.strip()
        for name, base, _shift, _mask in (a, b):
            if key == name and name not in got:
                with contextlib.suppress(ValueError):  # "junk": not said
                    got[name] = int(val.strip(), base)
        if a[0] in got and b[0] in got:
            return got[a[0]], got[b[0]]
    try:
        value = int(midr.strip(), 16)
    except ValueError:
        return None
    return value >> a[2] & a[3], value >> b[2] & b[3]


def config_path(config_dir: str | None, notes: list[str] | None = None) -> str | None:
    """The rc file (``tiptop.screens.loader.find_config``: ``-W`` directory or file,
    ``$TIPTOP``, ``./.tiptoprc``, XDG, ``~/.tiptoprc``); a ``-W`` that does not exist is
    a usage error; files found but skipped are said in ``notes``."""
    from tiptop.screens.loader import find_config

    if config_dir is not None:
        _check_w(config_dir)
    try:
        cwd = os.getcwd()
    except OSError:  # the current directory was removed under us: no ./.tiptoprc
        cwd = "/nonexistent"
    return find_config(config_dir, os.environ, cwd, os.environ.get("HOME"), notes)


def _check_w(config_dir: str) -> None:
    """``-W``: the path must exist, and a directory's ``.tiptoprc``, when there is one,
    must be reachable: a file the user named is never skipped in silence (stat(2):
    EACCES on a directory without search permission reads as "no such file" to
    ``os.path.exists``)."""
    path = os.path.expanduser(config_dir)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(f"-W: '{config_dir}' does not exist") from None
    except OSError as exc:
        raise UsageError(f"-W: '{config_dir}': {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
        # /dev/zero, a FIFO, /dev/stdin: never read (a FIFO would block), and never in silence.
        raise UsageError(f"-W: '{config_dir}' is neither a directory nor a regular file")
    if stat.S_ISDIR(st.st_mode):
        rc = os.path.join(path, ".tiptoprc")
        try:
            os.stat(rc)
        except FileNotFoundError:
            pass  # no file there: the next places are searched (docs/original.md 2.1)
        except OSError as exc:
            raise UsageError(f"-W: '{rc}': {exc.strerror}") from None


def load_screens(
    config_dir: str | None, *, only_conf: bool = False, target: Target | None = None
) -> ScreenSet:
    """Built-in screens (unless ``--only-conf``) around the config file's screens:
    ``default`` and ``branch`` first, then the file's, then the other built-ins; for the
    CPU ``target`` (default: this machine's, :func:`host_target`)."""
    from tiptop.screens import loader

    target = target or host_target()
    result = ScreenSet(target=target)
    notes: list[str] = []
    path = config_path(config_dir, notes)
    result.problems = list(notes)
    conf_screens: list[ScreenSpec] = []
    if path is not None:
        conf = loader.load_file(path, target)
        result.path = path
        result.options = dict(conf.options)
        conf_screens = list(conf.screens)
        result.problems += [str(p) for p in conf.problems]
    builtins: list[BuiltinScreen] = []
    if not only_conf:
        result.variants = loader.builtin_variants(target)
        builtins = loader.builtin_entries(target, result.variants)
    # A config screen named like a built-in replaces it in the built-in's place, so a file
    # written by --export or the W key (every screen, built-ins included) loads back as
    # the same list; the original appended copies (docs/original.md section 8, defect 13).
    by_name: dict[str, ScreenSpec] = {}
    for s in conf_screens:
        by_name.setdefault(s.name, s)
    used: set[int] = set()

    def swap(builtin: BuiltinScreen) -> ScreenSpec | BuiltinScreen:
        mine = by_name.get(builtin.name)
        if mine is None:
            return builtin
        used.add(id(mine))
        return mine

    first = [swap(b) for b in builtins if b.name in ("default", "branch")]
    rest = [swap(b) for b in builtins if b.name not in ("default", "branch")]
    conf_screens = [s for s in conf_screens if id(s) not in used]
    result.entries = [*first, *conf_screens, *rest]
    if not result.entries:
        raise TiptopError("no screen to show (--only-conf without screens in the config file)")
    return result


def pick_screen(loaded: ScreenSet, wanted: str | None) -> tuple[int, ScreenSpec]:
    """``-S``: a number, else the first screen whose name contains the text; only that
    screen is built."""
    if wanted is None:
        return 0, loaded.screen(0)
    names = loaded.names
    try:
        index = int(wanted, 10)
    except ValueError:
        for i, name in enumerate(names):
            if wanted in name:
                return i, loaded.screen(i)
        raise UsageError(
            f"-S: no screen named like '{shown(wanted)}' (see --list-screens)"
        ) from None
    if not 0 <= index < len(names):
        raise UsageError(f"-S: no screen number {index} (0 to {len(names) - 1})")
    return index, loaded.screen(index)


def format_list(screens: ScreenSet, host: Host | None) -> str:
    """``--list-screens``: ``%2d: 'name', description`` per screen and, given the ``host``,
    whether its counters open here."""
    lines = ["Available screens:"]
    availability: dict[str, str] = {}
    if host is not None:
        from tiptop import diagnose

        availability = {s.name: diagnose.screen_status(s, host) for s in screens.screens}
    for i, s in enumerate(screens.screens):
        line = f"{i:2d}: '{s.name}', {s.desc}"
        if s.name in availability:
            line += f"  [{availability[s.name]}]"
        lines.append(line)
    if availability:
        lines += diagnose.no_pmu_note(list(availability.values()))
    return "\n".join(lines) + "\n"


def export_screens(loaded: ScreenSet, path: str) -> None:
    """``--export FILE``: every screen and the file's options as YAML or XML (by suffix)."""
    from tiptop.screens.loader import export_xml, export_yaml
    from tiptop.screens.model import ConfigSpec

    if not path.endswith((".xml", ".yaml", ".yml")):
        raise UsageError(f"--export: '{path}' must end in .yaml, .yml or .xml")
    writer = export_xml if path.endswith(".xml") else export_yaml
    text = writer(ConfigSpec(path=None, options=dict(loaded.options), screens=loaded.screens))
    _write_no_link(path, text.encode("utf-8", "surrogateescape"))


def _write_no_link(path: str, data: bytes) -> None:
    """Write ``data`` to the regular file ``path`` (created or truncated), refusing a
    symbolic link, whose target would be overwritten, and anything not a regular file
    (``tiptop.files``)."""
    try:
        fd = open_regular(path, os.O_WRONLY, 0o666, "--export", " (name its target)")
    except OSError as exc:
        raise TiptopError(f"cannot write '{printable(path)}': {exc.strerror}") from None
    try:
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise TiptopError(f"cannot write '{printable(path)}': {exc.strerror}") from None
    finally:
        os.close(fd)


def export_current(options: Options, screens: Sequence[ScreenSpec]) -> str:
    """The live ``W`` key's text: the current options and every screen as an XML
    ``.tiptoprc`` (docs/original.md section 2.5; values escaped, unlike the original).
    Loading it back with ``-W`` gives the same screens (see :func:`load_screens`)."""
    from tiptop.options import to_rc
    from tiptop.screens import ConfigSpec, export_xml

    return export_xml(ConfigSpec(path=None, options=to_rc(options), screens=list(screens)))


def fallback_screen(
    loaded: ScreenSet, index: int, screen: ScreenSpec, say: Callable[[str], None], host: Host
) -> tuple[int, ScreenSpec]:
    """Without any usable hardware event, start on the first of :data:`FALLBACK_SCREENS`
    that exists (``state``: where each task's time goes, from the kernel's accounting) and
    ``say`` so (one line)."""
    from tiptop import diagnose

    ok, total, reason = diagnose.screen_counters(screen, host)
    if total == 0 or ok > 0:
        return index, screen
    by_name = {name: i for i, name in enumerate(loaded.names)}
    for name in (n for n in FALLBACK_SCREENS if n in by_name):
        if diagnose.no_pmu_note([reason]):  # the short line; --check says the whole
            say(no_pmu_line(f"showing screen '{name}'"))
        else:
            say(
                f"screen '{screen.name}' cannot count here ({reason}); "
                f"starting on screen '{name}' (no hardware events)"
            )
        return by_name[name], loaded.screen(by_name[name])
    return index, screen


#: Where a run starts when its screen's hardware events cannot count, in order of choice:
#: where the tasks' time goes (no PMU needed), then the software-event screen.
FALLBACK_SCREENS = ("state", "sched")
