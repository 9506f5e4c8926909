"""The README's and the guides' snippets run, so none can rot.

The README and the guides (docs/*.md) run in a reader's order (the README, then the guides
as its "Where next" list gives them) against one `rankd serve` (embedded servers, a
temporary data dir, and `make run`'s dev defaults: the keys `dev-admin-key` /
`dev-server-key`, its player token secret and its CORS origins), as a reader going through
them next to one `make run` would: a guide that reuses an earlier one's run ids, or assumes
a fresh service, fails. Each file's fenced blocks run in the order they appear:

- ```sh blocks run in one bash session per file (`set -euo pipefail`), as a reader typing
  them into one terminal: a variable set in one block is there in the next. `curl` fails on
  an HTTP error status (`--fail-with-body`), so a snippet answered 401 or 404 fails here.
  `rankd` is the project's, and `RANKD_DATA_DIR` points at the test server's data dir, so
  `rankd rebuild` and friends reach the running service as they would next to `make run`.
- ```python blocks each run on their own, in a fresh interpreter, as a reader would paste
  one: every Python snippet carries its own imports.
- The service's port in the text (`localhost:8000`, `127.0.0.1:8000`) is replaced by the
  test server's, which runs on a free port, and so is a second instance's (8001, also in
  `--port 8001`); nothing else in a snippet is changed.
- Every fence names its language; blocks meant to be read, not run (expected output,
  `make run` itself, a config file), use ```text, ```json or another language the test does
  not run.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.live import free_port
from tests.support.served import Served

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = {"sh": "sh", "bash": "sh", "shell": "sh", "python": "python", "py": "python"}
# the service's address in the text, and a second instance's (docs/cluster.md)
ADDRESS = re.compile(r"(?<=localhost:)800[01]\b|(?<=127\.0\.0\.1:)800[01]\b|(?<=--port )8001\b")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+|~~~+)(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # where the block's first line of code is (1-based)
    lang: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.lang})"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    found: list[Block] = []
    lines = path.read_text("utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info = match["fence"], match["info"].strip()
        start = i + 1
        i = start
        while i < len(lines) and not lines[i].strip().startswith(fence):
            i += 1
        code = "\n".join(line.removeprefix(match["indent"]) for line in lines[start:i])
        found.append(Block(path, start + 1, info.split()[0] if info else "", code))
        i += 1
    return found


def test_every_fence_names_its_language() -> None:
    unnamed = [b.where for path in DOCS for b in blocks(path) if not b.lang]
    assert not unnamed, f"say what these are (```sh, ```python, ```text...): {unnamed}"


def test_the_readme_has_snippets_to_run() -> None:
    langs = {RUN.get(b.lang) for b in blocks(ROOT / "README.md")}
    assert {"sh", "python"} <= langs


def test_a_refused_request_fails_the_snippet() -> None:
    """The harness's curl fails on an error, in a plain line and in a condition alike."""
    for line in (
        "curl -s http://127.0.0.1:1/",
        "if ! curl -s http://127.0.0.1:1/; then exit 7; fi",
    ):
        done = subprocess.run(["bash", "-c", PRELUDE + line], capture_output=True, check=False)
        assert done.returncode != 0, line


# `make run`'s dev defaults
DEV_ENV = {
    "RANKD_ADMIN_KEYS": "dev-admin-key",
    "RANKD_SERVER_KEYS": "dev-server-key",
    "RANKD_PLAYER_TOKEN_SECRET": "dev-player-token-secret-0123456789abcdef",
    "RANKD_WEBHOOK_SECRET": "dev-webhook-secret-0123456789abcdef0123",
    "RANKD_CORS_ORIGINS": "http://127.0.0.1:5173,http://localhost:5173",
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
}


@pytest.fixture
def served() -> Iterator[Served]:
    if shutil.which("curl") is None:
        pytest.skip("the shell snippets need curl")
    with tempfile.TemporaryDirectory(prefix="rankd-docs-") as tmp:
        service = Served(Path(tmp) / "data", DEV_ENV)
        try:
            yield service
        finally:
            service.stop()


PRELUDE = """set -euo pipefail
curl() {
  local rc=0
  command curl --fail-with-body --silent --show-error "$@" || rc=$?
  echo
  return $rc
}
"""


def script(path: Path, ports: dict[str, str]) -> str:
    """One bash script running the file's sh and python blocks in order."""
    parts = [PRELUDE]
    for n, block in enumerate(b for b in blocks(path) if b.lang in RUN):
        code = ADDRESS.sub(lambda m: ports[m[0]], block.code)
        parts.append(f"echo '>>> {block.where}' >&2")
        if RUN[block.lang] == "sh":
            parts.append(code)
        else:
            tag = f"__RANKD_DOCS_PY_{n}__"
            assert tag not in code
            parts.append(f"\"$RANKD_DOCS_PYTHON\" - <<'{tag}'\n{code}\n{tag}")
    return "\n".join(parts) + "\n"


GUIDE_LINK = re.compile(r"- \[[^\]]+\]\(docs/(?P<name>[a-z0-9-]+\.md)\)")


def readers_order() -> list[Path]:
    """The README, then the guides in the order its "Where next" list gives them, then any
    guide it does not list (alphabetically): the order a reader goes through them."""
    readme = (ROOT / "README.md").read_text("utf-8")
    listed = readme.partition("## Where next")[2]
    order = [ROOT / "README.md"]
    for match in GUIDE_LINK.finditer(listed):
        path = ROOT / "docs" / match["name"]
        if path.exists() and path not in order:
            order.append(path)
    return order + [path for path in DOCS if path not in order]


RUNNABLE = [path for path in readers_order() if any(b.lang in RUN for b in blocks(path))]


def test_the_readers_order_lists_every_guide() -> None:
    assert sorted(readers_order()) == sorted(DOCS)
    assert readers_order()[:2] == [ROOT / "README.md", ROOT / "docs" / "quick-start.md"]


@pytest.mark.timeout(1200)
def test_the_snippets_run_in_the_readers_order(served: Served, tmp_path: Path) -> None:
    """Every file's snippets, one file after another against one service, as a reader
    going through the README and then the guides would run them: a guide that reuses an
    earlier one's run ids or boards, or assumes a fresh service, fails here. Each file runs
    in a shell of its own (a reader opens a new terminal per guide)."""
    for path in RUNNABLE:
        run_file(path, served, tmp_path / path.stem)


def run_file(path: Path, served: Served, tmp_path: Path) -> None:
    tmp_path.mkdir()
    env = served.env | {"RANKD_DOCS_PYTHON": sys.executable}
    code = script(path, {"8000": str(served.port), "8001": str(free_port())})
    # a scratch folder as the working directory (snippets that write files leave none
    # behind), output to files and a session of its own: whatever a snippet started in the
    # background is stopped afterwards and cannot hold the test up
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        bash = subprocess.Popen(
            ["bash", "-c", code],
            env=env,
            cwd=tmp_path,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            returncode = bash.wait(240)
        except subprocess.TimeoutExpired:
            returncode = -1
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(bash.pid, signal.SIGKILL)
            bash.wait()
    stdout_text, stderr_text = out.read_text(), err.read_text()
    if os.environ.get("RANKD_DOCS_SHOW"):  # to read what the snippets answered
        print(stdout_text)
    if returncode != 0:
        ran = [line for line in stderr_text.splitlines() if line.startswith(">>> ")]
        failed = ran[-1].removeprefix(">>> ") if ran else "before the first block"
        pytest.fail(
            f"the snippet at {failed} failed (exit {returncode}; -1: timed out)\n"
            f"--- stdout ---\n{stdout_text[-4000:]}\n--- stderr ---\n{stderr_text[-4000:]}"
        )
