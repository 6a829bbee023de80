"""A staging install (`install.sh --root DIR`) shared by the install and unit tests.

The install runs from a frozen copy of the source, so files that change while the
tests run (other work in the same checkout) cannot make two runs differ.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE_PARTS = ["install.sh", "uninstall.sh", "pyproject.toml", "constraints.txt", "README.md", "systemd", "docs",
                "firmware", "vision", "services"]

_shared: dict[str, Path] = {}


def copy_source(dest: Path) -> Path:
    """The parts of the checkout that install.sh uses, copied to dest."""
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for part in SOURCE_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dest / part)
    return dest


def run_install(source: Path, root: Path, *args: str) -> str:
    """Run install.sh from `source` into staging `root`; its output, or a failure with it."""
    done = subprocess.run(
        ["bash", str(source / "install.sh"), "--root", str(root), *args],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"install.sh {' '.join(args)} failed ({done.returncode}):\n{output}"
    return output


def shared_install(tmp_path_factory) -> tuple[Path, Path, str]:
    """(source, root, output) of one staging install, made once per test session.

    Tests that change the tree must work on a copy (see copy_tree)."""
    if not _shared:
        base = tmp_path_factory.mktemp("staging")
        source = copy_source(base / "source")
        root = base / "root"
        _shared["output"] = run_install(source, root)  # type: ignore[assignment]
        _shared["source"], _shared["root"] = source, root
    return _shared["source"], _shared["root"], str(_shared["output"])


def copy_tree(root: Path, dest: Path) -> Path:
    """A copy of a staged root, symlinks kept as symlinks (the venv points into it,
    so only file-level checks are meaningful in the copy)."""
    subprocess.run(["cp", "-a", str(root), str(dest)], check=True)
    return dest


def tree(root: Path) -> dict[str, tuple]:
    """Every path under root with its kind, mode and content hash (or link target)."""
    listing: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                listing[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                listing[rel] = ("dir", oct(mode))
            else:
                listing[rel] = ("file", oct(mode), hashlib.sha256(path.read_bytes()).hexdigest())
    return listing
