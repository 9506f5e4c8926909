"""The lock: every install `make` does comes from uv.lock, and the lock agrees with
pyproject.toml (Makefile's `lock`, `lock-check`; the README says how to refresh it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked() -> dict[str, str]:
    """Every package the lock names, by normalized name, with its version."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text("utf-8"))
    return {normalized(p["name"]): p.get("version", "") for p in lock["package"]}


def uv_binary() -> str | None:
    own = ROOT / ".uv" / "bin" / "uv"
    return str(own) if own.is_file() else shutil.which("uv")


def test_the_lock_agrees_with_pyproject() -> None:
    uv = uv_binary()
    if uv is None:
        pytest.skip("no uv here: `make dev` installs the pinned one into .uv")
    python = sys.executable
    done = subprocess.run(
        [uv, "lock", "--check", "--python", python],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
    )
    assert done.returncode == 0, f"run `make lock`: {done.stderr[-2000:]}"


def test_uv_itself_is_pinned_to_the_version_the_project_requires() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    required = project["tool"]["uv"]["required-version"]
    assert re.fullmatch(r"==\d+\.\d+\.\d+", required), required
    pinned = (ROOT / "requirements" / "uv.txt").read_text("utf-8")
    assert re.search(rf"^uv{re.escape(required)} ", pinned, re.MULTILINE), pinned[:200]
    assert "--hash=sha256:" in pinned


def test_the_venv_holds_exactly_what_the_lock_names() -> None:
    """The project's own venv (made by `make`): every installed distribution is in the lock
    at the lock's version. Another environment (a library install) is not ours to judge."""
    if Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        pytest.skip(f"not the project's .venv: {sys.prefix}")
    lock = locked()
    wrong = {}
    for dist in metadata.distributions():
        name = normalized(dist.metadata["Name"])
        if lock.get(name) != dist.version:
            wrong[name] = (dist.version, lock.get(name, "not in the lock"))
    assert wrong == {}, f"installed (version, locked): {wrong}"
    assert "fastapi" in lock and "rankd" in lock
