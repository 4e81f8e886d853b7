"""The original's invert rule said where it bites (tiptop/options/inversion.py): a flag
that turns off what the configuration file turned on gives one warning, once."""

from __future__ import annotations

from tiptop.options import merge, parse_argv
from tiptop.options.inversion import inverted_by_flags


def test_a_flag_inverting_the_files_value_is_said_once() -> None:
    rc = {"idle": "1", "show_threads": "0", "show_kernel": "1"}
    actions, _ = parse_argv(["-i", "-H", "-d", "1"])
    opts, _ = merge(rc, actions)
    assert not opts.show_idle and opts.show_threads  # the rule itself, kept
    assert inverted_by_flags(rc, actions) == [
        "-i turns 'idle' off: flags invert the configuration file's value (on there)"
    ]
    twice, _ = parse_argv(["-i", "--idle"])  # inverted twice: on again, nothing to say
    assert inverted_by_flags(rc, twice) == []
    assert inverted_by_flags({}, actions) == []
    long, _ = parse_argv(["--kernel", "--kernel", "--kernel"])
    assert inverted_by_flags(rc, long) == [
        "--kernel turns 'show_kernel' off: flags invert the configuration file's value (on there)"
    ]
    assert all(len(f"tiptop: {line}") <= 100 for line in inverted_by_flags(rc, long))
