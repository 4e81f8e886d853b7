"""The build backend: setuptools' (pyproject.toml ``[build-system]``), with one addition, so that
``man tiptop`` is right after an editable install (``pip install -e``) as after ``pip install``.

setuptools' editable wheels carry the import hook, the metadata and the console scripts, not
the data files that ``[tool.setuptools.data-files]`` lists (setuptools' "Development Mode"
guide: an editable install "only installs your package dependencies, metadata and wrappers
for console and GUI scripts"; PEP 660 leaves the wheel's other categories to the backend).
So the man page and the shell completions went nowhere, and ``man tiptop`` found nothing in
the environment (man looks in ``<prefix>/share/man`` for each ``<prefix>/bin`` on PATH,
manpath(5)). This backend adds those files to the editable wheel's ``<name>.data/data/``
directory, which an installer puts under the environment's prefix as for any wheel (the
wheel format, PEP 427), and lists them in its RECORD.

They are copies made at install time, as a regular install's are: after editing
docs/tiptop.1, install again, or read it in place with ``man ./docs/tiptop.1``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tomllib
import zipfile

from setuptools import build_meta

# Every other hook is setuptools' own (PEP 517, PEP 660).
from setuptools.build_meta import (
    build_sdist,
    build_wheel,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "data_files",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
    "with_data_files",
]


def data_files(project: str = ".") -> list[tuple[str, str]]:
    """``(path under the prefix, file in the project)`` for each file that
    ``[tool.setuptools.data-files]`` of ``project``'s pyproject.toml installs."""
    with open(os.path.join(project, "pyproject.toml"), "rb") as f:
        table = tomllib.load(f)["tool"]["setuptools"].get("data-files", {})
    return [
        (f"{target}/{os.path.basename(source)}", os.path.join(project, source))
        for target, sources in table.items()
        for source in sources
    ]


def _record_line(name: str, data: bytes) -> str:
    """A RECORD line: path, ``sha256=`` urlsafe base64 without padding, size (PEP 376)."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def with_data_files(wheel: str, files: list[tuple[str, str]]) -> None:
    """Rewrite ``wheel`` with ``files`` in its ``.data/data/`` directory and its RECORD."""
    with zipfile.ZipFile(wheel) as old:
        entries = [(info, old.read(info)) for info in old.infolist()]
    (record,) = [
        info.filename for info, _ in entries if info.filename.endswith(".dist-info/RECORD")
    ]
    data_dir = record.removesuffix(".dist-info/RECORD") + ".data/data"
    added = []
    for target, source in files:
        with open(source, "rb") as f:
            added.append((f"{data_dir}/{target}", f.read()))
    lines = "".join(_record_line(name, data) for name, data in added)
    new = wheel + ".new"
    with zipfile.ZipFile(new, "w", zipfile.ZIP_DEFLATED) as out:
        for info, data in entries:
            if info.filename == record:
                data = data + lines.encode()
            out.writestr(info, data)
        for name, data in added:
            out.writestr(name, data)
    os.replace(new, wheel)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, str | list[str]] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """setuptools' editable wheel, with the project's data files in it (see the module doc)."""
    name: str = build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
    with_data_files(os.path.join(wheel_directory, name), data_files())
    return name
