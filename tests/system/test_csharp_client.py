"""The C# client (clients/csharp), compiled with Mono's `mcs` and run with `mono` against a
real `rankd serve` started here (embedded servers, a temporary data dir, the guides' dev keys,
a player token secret and a webhook secret, on a free port).

- The library compiles with no warnings, and uses only types .NET Standard 2.0 has (each
  type it references is one that Mono's netstandard.dll facade forwards), so Unity 2021+
  and any .NET take it as source or as a DLL.
- clients/csharp/test/ClientTests.cs, compiled with the library and the wire generator, runs
  against the service one group at a time (below): src/Wire.g.cs regenerated from the live
  /openapi.json and compared, every endpoint, player tokens, cursors, the error classes
  (401, 403, 404, 400, the 501s and the not-built 400s), the retry of a submit with the same
  run_id (503, a timeout, a lost connection, 429), the live top list and a player's own
  event stream.
- The guides' C# blocks (docs/clients.md, clients/csharp/README.md) are compiled into that
  program, each as the body of an async method, and run in order, as written but for the
  port; the Unity sample (the block with a MonoBehaviour) is compiled against a stub of the
  UnityEngine types it names (clients/csharp/test/UnityEngineStub.cs), and run: its Start
  submits a run with a player token and fills the panel's top 10.

Skips, saying so, when `mcs` or `mono` is not installed (`apt-get install mono-devel
mono-mcs`; .ci/run installs them when it can).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.served import Served

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "csharp"
GUIDES = [ROOT / "docs" / "clients.md", CLIENT / "README.md"]
MCS = shutil.which("mcs")
MONO = shutil.which("mono")
IKDASM = shutil.which("ikdasm")
NETSTANDARD = next(
    (
        p
        for p in (
            Path("/usr/lib/mono/4.5/Facades/netstandard.dll"),
            Path("/usr/lib/mono/4.7.1-api/Facades/netstandard.dll"),
        )
        if p.is_file()
    ),
    None,
)
# the groups of ClientTests.cs, one pytest test each
GROUPS = ["wire", "json", "endpoints", "tokens", "errors", "retries", "events", "snippets"]
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^```$", re.S | re.M)
USING = re.compile(r"^using [\w.]+( = [\w.<>, ]+)?;$")


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int  # of the block's first line of code (1-based)
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def csharp_blocks(path: Path) -> list[Snippet]:
    text = path.read_text("utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match["lang"] in ("csharp", "cs", "c#"):
            line = text.count("\n", 0, match.start("code")) + 1
            found.append(Snippet(path, line, match["code"]))
    return found


def unity_sample() -> Snippet:
    samples = [b for b in csharp_blocks(GUIDES[0]) if "MonoBehaviour" in b.code]
    assert len(samples) == 1, "docs/clients.md has one Unity sample (a ```csharp MonoBehaviour)"
    return samples[0]


def snippets_source(port: int) -> str:
    """The guides' C# blocks (but the Unity sample) as the static async methods of
    Rankd.Tests.DocSnippets, in order, each with #line pointing at its guide."""
    usings: set[str] = set()  # only the blocks' own: a block missing one fails to compile
    methods = []
    blocks = [b for path in GUIDES for b in csharp_blocks(path) if "MonoBehaviour" not in b.code]
    assert blocks, "the guides have C# examples"
    for n, block in enumerate(blocks):
        lines = block.code.replace("127.0.0.1:8000", f"127.0.0.1:{port}").splitlines()
        skip = 0
        while skip < len(lines) and (USING.match(lines[skip].strip()) or not lines[skip].strip()):
            if lines[skip].strip():
                usings.add(lines[skip].strip())
            skip += 1
        body = "\n".join(lines[skip:])
        where = block.where.replace("\\", "/")
        methods.append(
            f'    [Description("{where}")]\n'
            f"    public static async global::System.Threading.Tasks.Task Block{n:03d}()\n"
            "    {\n"
            f'#line {block.line + skip} "{block.path.relative_to(ROOT)}"\n'
            f"{body}\n#line default\n    }}\n"
        )
    return (
        "\n".join(sorted(usings))
        + "\n\nnamespace Rankd.Tests\n{\npublic static class DocSnippets\n{\n"
        + "\n".join(methods)
        + "}\n}\n"
    )


SERVICE_ENV = {
    "RANKD_ADMIN_KEYS": "dev-admin-key",
    "RANKD_SERVER_KEYS": "dev-server-key",
    "RANKD_PLAYER_TOKEN_SECRET": "csharp-test-player-token-secret-0123456789",
    # signs webhooks (32 bytes at least): without it a board's hooks are refused
    "RANKD_WEBHOOK_SECRET": "csharp-test-webhook-secret-0123456789abcd",
    "RANKD_SEASON_JOB_INTERVAL_S": "0",
    "RANKD_TOP_CACHE_S": "0",  # the tests read their own writes at once
}


@dataclass(frozen=True)
class Built:
    folder: Path
    library: Path
    tests: Path


def mcs(*args: str | Path) -> None:
    assert MCS is not None
    done = subprocess.run([MCS, *map(str, args)], capture_output=True, text=True, check=False)
    output = (done.stdout + done.stderr).strip()
    assert done.returncode == 0, f"mcs failed:\n{output}"


@pytest.fixture(scope="module")
def mono() -> str:
    if MCS is None or MONO is None:
        pytest.skip(
            "no Mono found (apt-get install mono-devel mono-mcs): the C# client is untested"
        )
    return MONO


@pytest.fixture(scope="module")
def served(mono: str) -> Iterator[Served]:
    with tempfile.TemporaryDirectory(prefix="rankd-csharp-") as tmp:
        service = Served(Path(tmp) / "data", SERVICE_ENV, ready_within_s=120)
        try:
            yield service
        finally:
            service.stop()


@pytest.fixture(scope="module")
def built(served: Served) -> Iterator[Built]:
    with tempfile.TemporaryDirectory(prefix="rankd-csharp-build-") as tmp:
        folder = Path(tmp)
        library = folder / "Rankd.dll"
        sources = sorted((CLIENT / "src").glob("*.cs"))
        # warnings are errors: the library is meant to be dropped into other projects
        mcs(
            "-target:library",
            "-warnaserror+",
            f"-out:{library}",
            "-r:System.Net.Http.dll",
            *sources,
        )
        snippets = folder / "DocSnippets.cs"
        snippets.write_text(snippets_source(served.port), "utf-8")
        sample = unity_sample()
        unity = folder / "UnitySample.cs"
        unity.write_text(
            f'#line {sample.line} "{sample.where.split(":")[0]}"\n{sample.code}', "utf-8"
        )
        program = folder / "ClientTests.exe"
        mcs(
            f"-out:{program}",
            f"-r:{library}",
            "-r:System.Net.Http.dll",
            "-nowarn:1998",  # a snippet with no await
            CLIENT / "tools" / "WireGenerator.cs",
            CLIENT / "test" / "ClientTests.cs",
            snippets,
            CLIENT / "test" / "UnityEngineStub.cs",
            unity,
        )
        yield Built(folder, library, program)


def test_the_library_uses_only_net_standard_types(built: Built) -> None:
    """Every type the compiled library references is one .NET Standard 2.0 has."""
    if IKDASM is None or NETSTANDARD is None:
        pytest.skip("no ikdasm or netstandard.dll facade in this Mono install")
    used = subprocess.run(
        [IKDASM, str(built.library)], capture_output=True, text=True, check=True
    ).stdout
    facade = subprocess.run(
        [IKDASM, str(NETSTANDARD)], capture_output=True, text=True, check=True
    ).stdout
    forwarded = set(re.findall(r"\.class extern forwarder ([\w.`]+)", facade))
    assert len(forwarded) > 1000, "netstandard.dll lists the types it forwards"
    referenced = set(re.findall(r"\[(?:mscorlib|System[\w.]*)\]([\w.`]+)", used))
    assert "System.Net.Http.HttpClient" in referenced
    missing = sorted(referenced - forwarded)
    assert not missing, f"not in .NET Standard 2.0: {missing}"


def test_the_unity_sample_compiles_on_its_own(built: Built) -> None:
    """As Unity would build it: an assembly of its own, referencing the library."""
    mcs(
        "-target:library",
        f"-out:{built.folder / 'UnitySample.dll'}",
        f"-r:{built.library}",
        "-r:System.Net.Http.dll",
        CLIENT / "test" / "UnityEngineStub.cs",
        built.folder / "UnitySample.cs",
    )


@pytest.mark.parametrize("group", GROUPS)
def test_the_client_against_the_service(
    group: str, mono: str, served: Served, built: Built
) -> None:
    done = subprocess.run(
        [mono, "--debug", str(built.tests), served.base, str(CLIENT / "src" / "Wire.g.cs"), group],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=built.folder,
    )
    output = (done.stdout + done.stderr).strip()
    print(output)  # pytest -s shows each test of the group, and the snippets' output
    assert done.returncode == 0, output
    assert " 0 failed" in output, output
