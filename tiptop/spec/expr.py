"""Column and counter-config expressions: our own parser, compiled once, never ``eval``.

CONTRACT (implemented by the screens work; the sampler depends on exactly this):

``compile_column(text, *, path=None, line=None, column=None) -> ColumnExpr``
    Parses a column expression (tiptop-original.md section 6 plus unary minus, ``min()``,
    ``max()``, ``INTERVAL``). Raises :class:`tiptop.errors.SpecError` whose column number
    points into the attribute text.

``ColumnExpr.aliases -> frozenset[str]``
    Counter aliases the expression reads (absolute or through ``delta()``).
``ColumnExpr.builtins -> frozenset[str]``
    Which of :data:`tiptop.spec.model.BUILTINS` it reads.
``ColumnExpr.evaluate(env) -> tuple[numpy.ndarray, numpy.ndarray]``
    ``env`` maps a key to ``(values float64[n], status uint8[n])``: the bare alias for the
    absolute counter value, ``delta_key(alias)`` for its interval delta, and each builtin
    name. Returns ``(values, status)``: a zero divisor gives ``Status.DIV0``; any operand
    whose status is not OK propagates the worst status (``tiptop.cells.combine``); cells
    that are not OK hold ``nan``.

``evaluate_config(text) -> int``
    The original's counter ``config`` expression (predefined names, decimal/hex, ``|``,
    ``or``, ``and``, ``shl``, ``shr``) as a uint64. Raises ``SpecError``.
"""
