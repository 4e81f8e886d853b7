"""C++ and Rust symbol names as their programmers wrote them: ``_ZN2ns5Klass6methodEi`` is
``ns::Klass::method(int)``.

The demangling is LLVM's (``pycxxfilt``, which wraps the demanglers that ``llvm-cxxfilt``
and lldb use, kept in step with LLVM's releases): the Itanium C++ ABI's names (``_Z``, GCC
and Clang), which also carry Rust's legacy names, and Rust's v0 names (``_R``). It is
imported only when a mangled name is first met, so a process of C code costs nothing.

Rust's legacy names are Itanium names of a path whose last part is ``h`` and a 16-digit
hash, with ``$``-escapes for the characters a C++ name cannot hold; as
``rustc-demangle`` does (its ``legacy.rs``), the hash is dropped and the escapes written
back (``$LT$`` is ``<``, ``$u7b$`` is ``{``, ``..`` is ``::``, a part's leading ``_``
before an escape dropped).

The names are the watched process's user's to write (a symbol table it maps), and a
mangled name's back-references let a short one stand for an exponentially long one: 234
bytes made of pointers to functions that take the previous type twice demangle to 200 MB.
So only a name of at most :data:`MAX_MANGLED` bytes with at most :data:`MAX_REFERENCES`
back-references is demangled (each reference can at most repeat what came before, about
e-fold per three references: a few hundred KB at worst); longer names and those with more
references are shown as they are. A name that is not valid stays as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: The longest mangled name demangled (a large C++ program's longest are ~1 KB).
MAX_MANGLED = 1024
#: The most back-references (``S_``, ``S0_``, ``T_``, Rust's ``B_``) in a name demangled:
#: a large C++ program (node's 62,000 exported names) has at most 31, nearly all fewer
#: than 8; each counted conservatively (a letter and digits inside a name count too).
MAX_REFERENCES = 24
#: A demangled name longer than this is cut, ending in ``...``.
MAX_DEMANGLED = 4096

_REFERENCE = re.compile(r"[STB][0-9A-Za-z]*_")
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
#: rustc-demangle's legacy escapes (library/rustc-demangle, src/legacy.rs).
_RUST_ESCAPES = {
    "$SP$": "@",
    "$BP$": "*",
    "$RF$": "&",
    "$LT$": "<",
    "$GT$": ">",
    "$LP$": "(",
    "$RP$": ")",
    "$C$": ",",
}
_RUST_ESCAPE = re.compile(r"\$(SP|BP|RF|LT|GT|LP|RP|C|u[0-9a-f]{2})\$")

#: ``pycxxfilt.demangle`` once imported; None before, False where it is not installed.
_demangler: Callable[[str], str | None] | bool | None = None


def is_mangled(name: str) -> bool:
    """``name`` looks like an Itanium (``_Z``) or Rust v0 (``_R``) mangled name."""
    return name.startswith(("_Z", "_R"))


def demangled(name: str) -> str:
    """``name`` demangled, when it is a mangled name within the bounds (module docstring)
    that LLVM's demanglers read; else ``name`` as it is."""
    if not is_mangled(name) or len(name) > MAX_MANGLED or not name.isascii():
        return name
    if len(_REFERENCE.findall(name)) > MAX_REFERENCES:
        return name
    demangle = _load()
    if demangle is None:
        return name
    try:
        plain = demangle(name)
    except ValueError:  # begins as a mangled name, but is not one
        return name
    if plain is None:
        return name
    if name.startswith("_ZN") and _RUST_HASH.search(plain):
        plain = _rust_legacy(plain)
    return plain if len(plain) <= MAX_DEMANGLED else plain[:MAX_DEMANGLED] + "..."


def _rust_legacy(plain: str) -> str:
    """A legacy Rust path as rustc-demangle writes it: no hash, escapes written back."""
    plain = _RUST_HASH.sub("", plain)
    # A part that begins with an escape is written with a leading ``_`` (legacy.rs).
    plain = re.sub(r"(^|::)_\$", r"\1$", plain).replace("..", "::")
    return _RUST_ESCAPE.sub(_unescape, plain)


def _unescape(match: re.Match[str]) -> str:
    code = match.group(0)
    if code in _RUST_ESCAPES:
        return _RUST_ESCAPES[code]
    return chr(int(code[2:4], 16))


def _load() -> Callable[[str], str | None] | None:
    """The demangler, imported the first time it is needed."""
    global _demangler
    if _demangler is None:
        try:
            from pycxxfilt import demangle

            _demangler = demangle
        except ImportError:
            _demangler = False
    return _demangler if callable(_demangler) else None


__all__ = ["MAX_DEMANGLED", "MAX_MANGLED", "MAX_REFERENCES", "demangled", "is_mangled"]
