"""The original's XML ``.tiptoprc`` (docs/original.md section 2): read and write.

Reading uses :mod:`xml.parsers.expat` directly, which gives every element's line and column.
Hostile input is refused, never expanded: any entity declaration (the "billion laughs"
attack), any external entity or external DTD, and files over :data:`MAX_BYTES`.
Unknown elements are ignored, as in the original; a root other than ``<tiptop>`` is fatal
("Wrong document type: root node != <tiptop>").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NoReturn

from tiptop.errors import SpecError
from tiptop.screens.build import RawItem, RawScreen, build_options, build_screen
from tiptop.screens.model import ConfigSpec, Target

if TYPE_CHECKING:
    from xml.parsers import expat

#: Largest configuration file read (XML or YAML), in bytes.
MAX_BYTES = 1 << 20


class _Elem:
    __slots__ = ("attrs", "children", "column", "line", "tag")

    def __init__(self, tag: str, attrs: dict[str, str], line: int, column: int) -> None:
        self.tag, self.attrs, self.line, self.column = tag, attrs, line, column
        self.children: list[_Elem] = []


def _refuse(what: str, parser: expat.XMLParserType) -> NoReturn:
    raise SpecError(
        f"refusing {what} (entities are not expanded)",
        None,
        parser.CurrentLineNumber,
        parser.CurrentColumnNumber + 1,
    )


def _parse_tree(data: bytes, path: str | None) -> _Elem:
    """The element tree of ``data`` with positions; raises SpecError."""
    from xml.parsers import expat  # only when an XML file is read

    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    stack: list[_Elem] = []
    root: list[_Elem] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        el = _Elem(tag, attrs, parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)
        if stack:
            stack[-1].children.append(el)
        else:
            root.append(el)
        stack.append(el)

    def end(_tag: str) -> None:
        stack.pop()

    def doctype(_name: str, sysid: str | None, pubid: str | None, _internal: int) -> None:
        if sysid or pubid:
            _refuse("an external DTD", parser)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = lambda *a: _refuse("an entity declaration", parser)
    parser.UnparsedEntityDeclHandler = lambda *a: _refuse("an entity declaration", parser)
    parser.ExternalEntityRefHandler = lambda *a: _refuse("an external entity", parser)
    try:
        parser.Parse(data, True)
    except expat.ExpatError as err:
        raise SpecError(
            f"malformed XML: {expat.errors.messages[err.code]}", path, err.lineno, err.offset + 1
        ) from None
    except SpecError as err:
        err.path = path
        raise
    except (ValueError, LookupError, RecursionError) as err:  # an unknown encoding: LookupError
        raise SpecError(
            f"malformed XML: {err}", path, parser.CurrentLineNumber, parser.CurrentColumnNumber + 1
        ) from None
    if not root:
        raise SpecError("malformed XML: no element found", path)
    return root[0]


def _value_positions(lines: list[str], el: _Elem) -> dict[str, tuple[int | None, int | None]]:
    """Where each attribute value of ``el`` starts in the source (expat only gives the
    element's own position), for error columns that point into the value."""
    out: dict[str, tuple[int | None, int | None]] = {}
    if el.line - 1 >= len(lines):
        return out
    # The start tag, from the element's position to the first '>' outside quotes.
    text = "\n".join(lines[el.line - 1 :][:50])
    start = el.column - 1
    for m in re.finditer(r"""([A-Za-z_][\w.\-]*)\s*=\s*(["'])""", text[start:]):
        before = text[: start + m.end()]
        if ">" in re.sub(r"""(["']).*?\1""", "", text[start : start + m.start()], flags=re.S):
            break
        line = el.line + before.count("\n")
        col = len(before) - (before.rfind("\n") + 1) + 1
        out.setdefault(m.group(1), (line, col))
    return out


def load_xml(data: bytes | str, target: Target, path: str | None = None) -> ConfigSpec:
    """A whole XML file; fatal problems raise SpecError, the rest go to ``problems``."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")  # bytes a str decoded leniently
    if len(data) > MAX_BYTES:
        raise SpecError(f"file larger than {MAX_BYTES} bytes: refused", path)
    root = _parse_tree(data, path)
    if root.tag != "tiptop":
        raise SpecError("Wrong document type: root node != <tiptop>", path, root.line, root.column)
    lines = data.decode("utf-8", "replace").split("\n")
    config = ConfigSpec(path=path)
    options: list[tuple[str | None, str | None, int | None, int | None]] = []
    for el in root.children:
        if el.tag == "options":
            for opt in el.children:  # children of any element name (docs/original.md 2.2)
                options.append(
                    (opt.attrs.get("name"), opt.attrs.get("value"), opt.line, opt.column)
                )
        elif el.tag == "screen":
            raw = RawScreen(
                name=el.attrs.get("name"),
                desc=el.attrs.get("desc"),
                line=el.line,
                column=el.column,
                arch=el.attrs.get("arch"),
                model=el.attrs.get("model"),
                breakdown=tuple(p for p in el.attrs.get("breakdown", "").split(";") if p.strip()),
            )
            for child in el.children:
                if child.tag in ("counter", "column"):
                    raw.items.append(
                        RawItem(
                            child.tag,
                            dict(child.attrs),
                            child.line,
                            child.column,
                            _value_positions(lines, child),
                        )
                    )
            screen = build_screen(raw, target, path, config.problems)
            if screen is not None:
                config.screens.append(screen)
    config.options = build_options(options, path, config.problems)
    return config


def _attr(value: str) -> str:
    """An attribute value, escaped so that it reads back exactly (whitespace included)."""
    return (
        value.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("\t", "&#9;")
        .replace("\n", "&#10;")
        .replace("\r", "&#13;")
    )


def _element(tag: str, pairs: list[tuple[str, str | None]]) -> str:
    body = " ".join(f'{k}="{_attr(v)}"' for k, v in pairs if v is not None)
    return f"<{tag} {body} />"


def export_xml(config: ConfigSpec) -> str:
    """``config`` as an XML ``.tiptoprc``: values escaped, expressions as written."""
    out = ["<!-- tiptop configuration file -->", "<tiptop>"]
    if config.options:
        out.append("\t<options>")
        for name, value in config.options.items():
            out.append("\t\t" + _element("option", [("name", name), ("value", value)]))
        out.append("\t</options>")
    for s in config.screens:
        extra = f' breakdown="{_attr(";".join(s.breakdown))}"' if s.breakdown else ""
        out.append(f'\t<screen name="{_attr(s.name)}" desc="{_attr(s.desc)}"{extra}>')
        for c in s.counters:
            pairs = [("alias", c.alias), ("config", c.config), ("type", c.type)]
            out.append("\t\t" + _element("counter", [*pairs, ("arch", c.arch), ("model", c.model)]))
        for col in s.columns:
            pairs = [("header", col.header), ("format", col.format), ("desc", col.desc)]
            pairs.append(("expr", col.expr))
            if col.threshold is not None:
                pairs.append(("threshold", repr(col.threshold)))
            if col.threshold_below:
                pairs.append(("threshold_below", "1"))
            out.append("\t\t" + _element("column", pairs))
        out.append("\t</screen>")
    out.append("</tiptop>")
    return "\n".join(out) + "\n"
