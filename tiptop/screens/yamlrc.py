"""The YAML form of a configuration (docs/screens.md), read and written.

Schema (everything optional except where the XML form requires it)::

    options: {delay: 2, cpu_threshold: 0.00001}
    screens:
      - name: default
        desc: Screen by default
        arch: x86            # optional: gate the whole screen (like a counter's arch/model)
        model: "06_2A;06_2D"
        counters:
          CYCLE: {config: CPU_CYCLES, type: HARDWARE}   # the XML attributes
          FE: {config: "cpu/event=0x1a0,umask=0x1/",    # table_event: the vendor table's
               table_event: de_no_dispatch_per_slot.no_ops_from_frontend}   # name (YAML only)
          INSN: instructions                            # a string: config, no type
          uOP:                                          # a list: gated alternatives
            - {config: "0x1c2", type: RAW, model: "06_1A;06_1E"}
            - {config: "0x1c2", type: RAW, model: "06_2A"}
        columns:
          - {header: " IPC", format: "%4.2f", expr: delta(INSN)/delta(CYCLE), desc: ...,
             threshold: 0.5, threshold_below: true}
          - {header: " %FE", ..., table_metric: frontend_bound}  # the vendor metric it equals
        breakdown: ["%RET", "%BAD"]  # optional: columns whose percentages add up to 100

Only PyYAML's safe loader is used (its composer, to keep line/column marks); anchors and
aliases are refused (a YAML "billion laughs" expands through them), as are files over
:data:`tiptop.screens.xmlrc.MAX_BYTES`.
"""

from __future__ import annotations

import yaml

from tiptop.errors import SpecError
from tiptop.screens.build import RawItem, RawOption, RawScreen, build_config
from tiptop.screens.model import ConfigSpec, Target
from tiptop.screens.xmlrc import MAX_BYTES

#: Deepest nesting of YAML collections read (the schema needs 6): PyYAML's composer recurses
#: once per level, and ``[[[[...`` a thousand deep would end in a RecursionError.
MAX_NESTING = 50

_COUNTER_KEYS = ("config", "type", "arch", "model", "table_event")
_COLUMN_KEYS = ("header", "format", "expr", "desc", "threshold", "threshold_below", "table_metric")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing collections nested over :data:`MAX_NESTING` deep
    with a marked error (the file's line and column) before its composer recurses."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.depth >= MAX_NESTING:
            mark = self.peek_event().start_mark
            raise yaml.MarkedYAMLError(
                problem=f"nested deeper than {MAX_NESTING}", problem_mark=mark
            )
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _Reader:
    """Walks the composed node graph, turning scalars into text with their marks."""

    def __init__(self, loader: _Loader, path: str | None) -> None:
        self.loader = loader
        self.path = path
        self.seen: set[int] = set()

    def where(self, node: yaml.Node) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    def error(self, message: str, node: yaml.Node) -> SpecError:
        return SpecError(message, self.path, *self.where(node))

    def visit(self, node: yaml.Node) -> None:
        if isinstance(node, yaml.CollectionNode):
            if id(node) in self.seen:
                raise self.error("YAML anchors and aliases are not supported", node)
            self.seen.add(id(node))

    def mapping(self, node: yaml.Node, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.error(f"{what} must be a mapping", node)
        self.visit(node)
        out = []
        for k, v in node.value:
            out.append((self.text(k, "a key"), k, v))
        return out

    def sequence(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(f"{what} must be a list", node)
        self.visit(node)
        return list(node.value)

    def text(self, node: yaml.Node, what: str) -> str:
        """A scalar exactly as written (``0x1c2``, ``06_25`` and ``2.0`` stay text; YAML 1.1
        would read them as 450, 405 and 2.0), or ``""`` for a null."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.error(f"{what} must be a plain value", node)
        if node.tag == "tag:yaml.org,2002:null" and node.style is None:
            return ""
        return str(node.value)

    def value_start(self, node: yaml.Node) -> tuple[int, int]:
        line, col = self.where(node)
        quoted = isinstance(node, yaml.ScalarNode) and node.style in ('"', "'")
        return line, col + (1 if quoted else 0)


def _item(
    r: _Reader,
    kind: str,
    node: yaml.Node,
    keys: tuple[str, ...],
    extra: dict[str, str] | None = None,
) -> RawItem:
    """One counter or column mapping as a RawItem (unknown keys are an error)."""
    attrs: dict[str, str] = {}
    pos: dict[str, tuple[int | None, int | None]] = {}
    for key, _knode, vnode in r.mapping(node, f"a {kind}"):
        if key not in keys:
            expected = ", ".join(keys)
            raise r.error(f"unknown key '{key}' in a {kind} (expected one of {expected})", _knode)
        attrs[key] = r.text(vnode, f"'{key}'")
        pos[key] = r.value_start(vnode)
    attrs.update(extra or {})
    line, col = r.where(node)
    return RawItem(kind, attrs, line, col, pos)


def _screen(r: _Reader, node: yaml.Node) -> RawScreen:
    fields = {k: (kn, v) for k, kn, v in r.mapping(node, "a screen")}
    for k, (kn, _v) in fields.items():
        if k not in ("name", "desc", "arch", "model", "counters", "columns", "breakdown"):
            raise r.error(f"unknown key '{k}' in a screen", kn)

    def opt(key: str) -> str | None:
        return r.text(fields[key][1], f"'{key}'") if key in fields else None

    line, col = r.where(node)
    raw = RawScreen(opt("name"), opt("desc"), [], line, col, opt("arch"), opt("model"))
    if "counters" in fields and not _null(fields["counters"][1]):
        for alias, anode, vnode in r.mapping(fields["counters"][1], "counters"):
            is_list = isinstance(vnode, yaml.SequenceNode)
            variants = r.sequence(vnode, "counter variants") if is_list else [vnode]
            for v in variants:
                if isinstance(v, yaml.ScalarNode):
                    line, col = r.where(v)
                    attrs = {"alias": alias, "config": r.text(v, alias)}
                    pos: dict[str, tuple[int | None, int | None]] = {
                        "config": r.value_start(v),
                        "alias": r.where(anode),
                    }
                    raw.items.append(RawItem("counter", attrs, line, col, pos))
                else:
                    item = _item(r, "counter", v, _COUNTER_KEYS, {"alias": alias})
                    item.value_pos["alias"] = r.where(anode)
                    raw.items.append(item)
    if "columns" in fields and not _null(fields["columns"][1]):
        for cnode in r.sequence(fields["columns"][1], "columns"):
            raw.items.append(_item(r, "column", cnode, _COLUMN_KEYS))
    if "breakdown" in fields and not _null(fields["breakdown"][1]):
        parts = r.sequence(fields["breakdown"][1], "breakdown")
        raw.breakdown = tuple(r.text(p, "a breakdown column") for p in parts)
    return raw


def _null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def load_yaml(data: bytes | str, target: Target, path: str | None = None) -> ConfigSpec:
    """A whole YAML file; fatal problems raise SpecError, the rest go to ``problems``."""
    options, entries = read_yaml(data, path)
    return build_config(options, entries, target, path)


def read_yaml(
    data: bytes | str, path: str | None = None
) -> tuple[list[RawOption], list[RawScreen | SpecError]]:
    """The options and screens of a YAML file as written (no checking, no gating): what
    :func:`build_config` turns into a :class:`ConfigSpec`. Fatal problems raise SpecError."""
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise SpecError(f"file larger than {MAX_BYTES} bytes: refused", path)
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise SpecError(f"not UTF-8: {err}", path) from None
    if len(data) > MAX_BYTES:
        raise SpecError(f"file larger than {MAX_BYTES} bytes: refused", path)
    try:
        loader = _Loader(data)  # its reader refuses control characters at once
    except yaml.YAMLError as err:
        raise SpecError(f"malformed YAML: {err}", path) from None
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark or err.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
            raise SpecError(f"malformed YAML: {err.problem or err}", path, line, col) from None
        except (yaml.YAMLError, RecursionError) as err:
            raise SpecError(f"malformed YAML: {err}", path) from None
        options: list[RawOption] = []
        entries: list[RawScreen | SpecError] = []
        if root is None or _null(root):
            return options, entries
        r = _Reader(loader, path)
        top = {k: (kn, v) for k, kn, v in r.mapping(root, "the document")}
        for k, (kn, _v) in top.items():
            if k not in ("options", "screens"):
                raise r.error(f"unknown top-level key '{k}' (expected options, screens)", kn)
        if "options" in top and not _null(top["options"][1]):
            for name, knode, vnode in r.mapping(top["options"][1], "options"):
                options.append((name, r.text(vnode, f"option '{name}'"), *r.where(knode)))
        if "screens" in top and not _null(top["screens"][1]):
            for snode in r.sequence(top["screens"][1], "screens"):
                try:
                    entries.append(_screen(r, snode))
                except SpecError as err:
                    entries.append(err)
        return options, entries
    finally:
        loader.dispose()


def export_yaml(config: ConfigSpec) -> str:
    """``config`` in the YAML form: strings quoted as needed, expressions as written."""
    doc: dict[str, object] = {}
    if config.options:
        doc["options"] = dict(config.options)
    screens = []
    for s in config.screens:
        counters: dict[str, object] = {}
        for c in s.counters:
            entry: dict[str, str | float | bool] = {"config": c.config}
            keys = ("type", "arch", "model", "table_event")
            entry.update({k: getattr(c, k) for k in keys if getattr(c, k)})
            counters[c.alias] = entry
        columns = []
        for col in s.columns:
            entry = {
                "header": col.header,
                "format": col.format,
                "expr": col.expr,
                "desc": col.desc,
            }
            if col.threshold is not None:
                entry["threshold"] = col.threshold
            if col.threshold_below:
                entry["threshold_below"] = True
            if col.table_metric:
                entry["table_metric"] = col.table_metric
            columns.append(entry)
        screen: dict[str, object] = {"name": s.name, "desc": s.desc}
        screen.update(counters=counters, columns=columns)
        if s.breakdown:
            screen["breakdown"] = list(s.breakdown)
        screens.append(screen)
    doc["screens"] = screens
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1 << 16)
