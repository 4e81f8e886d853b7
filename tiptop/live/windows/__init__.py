"""The live windows, one module each, each behind ``tiptop.live.window.Window`` and opened
by its line in the key registry (``tiptop.live.registry``): ``help`` (``h``), ``errors``
(``e``), ``tree`` (``t``: the highlighted task's top-down tree), ``functions`` (``f``: its
hottest functions beside the tree), ``prompt`` (the questions typed on the status line)."""
