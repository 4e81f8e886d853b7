"""``--record`` files: the format (``format``), the writer (``writer``), the reader
(``reader``) and the replay source (``replay``); docs/guide.md, "Recording format"."""
