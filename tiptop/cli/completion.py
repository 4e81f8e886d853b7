"""Shell completion for bash and zsh, generated from the option table
(``tiptop.options.argv``: SHORT and LONG) and the words of ``--help``, so that a new
option is completed without editing a script by hand.

``python3 -m tiptop.cli.completion bash|zsh`` prints the script; the repository keeps
them in completions/ (tests/system/test_completion.py checks they are up to date), and
``pip install`` puts them where bash-completion and zsh look (pyproject.toml).
"""

from __future__ import annotations

import re
import sys

from tiptop.choices import Format, SeriesBy
from tiptop.cli import USAGE
from tiptop.options.argv import LONG, SHORT, Act

#: Options whose value is a path (the shells complete file names).
PATH_VALUES = frozenset(
    {
        "error_file",
        "output",
        "config_dir",
        "export",
        "record",
        "replay",
        "plot",
        "textfile",
        "runtime_root",
        "folded",
        "web_config",
    }
)
#: Options whose value is one of a few words.
WORDS = {"format": tuple(Format), "series_by": tuple(SeriesBy)}


def spellings() -> list[tuple[str, Act, str]]:
    """Every option as ``(spelled, kind, field)``: ``-b``, ``--batch``, ... in the table's
    order, short ones first."""
    short = [(f"-{k}", kind, name) for k, (kind, name) in SHORT.items()]
    return short + [(f"--{k}", kind, name) for k, (kind, name) in LONG.items()]


def descriptions() -> dict[str, str]:
    """Each spelling's words from ``--help`` (``-b``: ``run in batch mode``)."""
    said: dict[str, str] = {}
    for line in USAGE.splitlines():
        m = re.match(r"\t(\S.*?)\s{2,}(\S.*)$", line)
        if m is None:
            continue
        for word in m.group(1).split():
            if word.startswith("-"):
                said.setdefault(word, m.group(2).replace("{{", "{").replace("}}", "}"))
    return said


def bash() -> str:
    """The bash completion script (``complete -F _tiptop tiptop ptiptop``)."""
    opts = " ".join(s for s, _, _ in spellings())
    paths = " ".join(s for s, kind, name in spellings() if kind is Act.SET and name in PATH_VALUES)
    takes = " ".join(s for s, kind, _ in spellings() if kind is Act.SET)
    cases = "".join(
        f"        {'|'.join(s for s, _, n in spellings() if n == name)}) "
        f'COMPREPLY=($(compgen -W "{" ".join(words)}" -- "$cur")); return ;;\n'
        for name, words in WORDS.items()
    )
    return (
        "# bash completion for tiptop (generated: python3 -m tiptop.cli.completion bash)\n"
        "_tiptop() {\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" w\n'
        '    for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do\n'
        '        [[ "$w" == "--" ]] && { COMPREPLY=($(compgen -c -- "$cur")); return; }\n'
        "    done\n"
        '    case "$prev" in\n'
        f"{cases}"
        f"        {paths.replace(' ', '|')}) "
        'COMPREPLY=($(compgen -f -- "$cur")); return ;;\n'
        f"        {takes.replace(' ', '|')}) return ;;\n"
        "    esac\n"
        f'    COMPREPLY=($(compgen -W "{opts} --" -- "$cur"))\n'
        "}\n"
        "complete -F _tiptop tiptop ptiptop\n"
    )


def zsh() -> str:
    """The zsh completion function (``#compdef tiptop ptiptop``)."""
    said = descriptions()
    specs = []
    for s, kind, name in spellings():
        words = said.get(s, name.replace("_", " ")).replace("'", "'\\''")
        words = words.replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")
        value = ""
        if kind is Act.SET:
            action = (
                "_files"
                if name in PATH_VALUES
                else f"({' '.join(WORDS[name])})"
                if name in WORDS
                else " "
            )
            value = f":{name.replace('_', ' ')}:{action}"
        specs.append(f"  '{s}[{words}]{value}'")
    return (
        "#compdef tiptop ptiptop\n"
        "# zsh completion for tiptop (generated: python3 -m tiptop.cli.completion zsh)\n"
        "_arguments -s \\\n" + " \\\n".join(specs) + " \\\n  '*::command:_normal'\n"
    )


def main(argv: list[str]) -> int:
    """Print the script for the shell named in ``argv``; status 2 for another."""
    shells = {"bash": bash, "zsh": zsh}
    if len(argv) != 1 or argv[0] not in shells:
        sys.stderr.write("usage: python3 -m tiptop.cli.completion bash|zsh\n")
        return 2
    sys.stdout.write(shells[argv[0]]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
