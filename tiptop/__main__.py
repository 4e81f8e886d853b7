"""``python -m tiptop``: the same as the ``tiptop`` command."""

from tiptop.cli import command

command()
