"""``man tiptop`` after an editable install (``pip install -e``, the README's test command):
the in-tree build backend (build_backend/tiptop_backend.py) puts the data files of
``[tool.setuptools.data-files]`` into the editable wheel, which pip installs under the
environment's prefix, where man looks for each ``bin/`` on PATH (manpath(5)).

The wheel is built by the backend in a copy of the project (setuptools writes its egg-info
there) with this environment's setuptools, and installed offline with ``pip --prefix``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from tests.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "build_backend"))
from tiptop_backend import _record_line, data_files

#: pip installing a local wheel with nothing from an index, whatever it finds installed
#: already (the checkout's own egg-info, on sys.path here, says tiptop-perf is).
PIP_OFFLINE = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
PIP_OFFLINE += ["--ignore-installed"]
#: What pyproject.toml's data-files install, under the prefix.
INSTALLED = {
    "share/man/man1/tiptop.1",
    "share/bash-completion/completions/tiptop",
    "share/zsh/site-functions/_tiptop",
}


#: pyproject.toml's [build-system] requirement (the test extra asks for it too).
SETUPTOOLS = (77,)


def _setuptools_builds_editable() -> str | None:
    """Why this environment's setuptools cannot build this project's editable wheel, or
    None (pip builds it in an isolated environment; this test, offline, in this one)."""
    try:
        have = version("setuptools")
    except PackageNotFoundError:
        return "setuptools is not installed in this environment"
    if tuple(int(x) for x in have.split(".")[:1]) < SETUPTOOLS:
        return f"setuptools {have} here; the build needs >= 77 (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def editable_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = _setuptools_builds_editable()
    if why is not None:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("editable")
    project = root / "project"
    shutil.copytree(
        REPO,
        project,
        ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", ".*cache"),
    )
    out = root / "wheels"
    out.mkdir()
    code = f"import tiptop_backend as b; print(b.build_editable({str(out)!r}))"
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project / "build_backend")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out / r.stdout.splitlines()[-1]


def test_the_data_files_are_the_projects() -> None:
    assert {target for target, _ in data_files(REPO)} == INSTALLED
    assert all(os.path.isfile(source) for _, source in data_files(REPO))


def test_the_editable_wheel_holds_them_and_its_record_says_so(editable_wheel: Path) -> None:
    with zipfile.ZipFile(editable_wheel) as whl:
        names = whl.namelist()
        (record,) = [n for n in names if n.endswith(".dist-info/RECORD")]
        lines = whl.read(record).decode().splitlines()
        data = record.removesuffix(".dist-info/RECORD") + ".data/data/"
        for target in INSTALLED:
            body = whl.read(data + target)
            assert body == (Path(REPO) / dict(data_files(REPO))[target]).read_bytes()
            assert _record_line(data + target, body).strip() in lines, target


def test_man_finds_the_page_after_the_install(editable_wheel: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    r = subprocess.run(
        [*PIP_OFFLINE, "--prefix", str(prefix), str(editable_wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    for target in INSTALLED:
        assert (prefix / target).is_file(), target
    if shutil.which("man") is None:
        pytest.skip("man is not installed here (man-db)")
    path = f"{prefix / 'bin'}:{os.environ.get('PATH', '')}"
    found = subprocess.run(
        ["man", "-w", "tiptop"],
        env={**os.environ, "PATH": path, "MANPATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.stdout.strip() == str(prefix / "share/man/man1/tiptop.1"), found
