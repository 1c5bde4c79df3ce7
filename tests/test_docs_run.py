"""Every bash code block of README.md and docs/*.md, executed as written, in order per document.

One test per document runs its blocks one after another in a fresh folder of its own (`work/`, with `../shared`
beside it pointing at the real sample data, `HOME` inside the folder so the demo store, caches and data dirs land
there). What a block exports (`export CHRONOKG_STORE=...`) holds for the blocks after it, as for a reader
typing them into one shell. Each block must exit 0, or the exit code its fence states (```` ```bash exit=3 ````),
and print no Python traceback. The python blocks run in tests/test_docs_blocks.py.

A block that cannot run here says so in its fence: ```` ```bash skip-test: REASON ````; the test counts and
prints those. A fence without a language, or a bash/python block neither run nor marked, fails
`test_every_code_block_is_run_or_marked`.

What stands in for what a reader has and the test has not (nothing else is changed):

- a model server (`http://gpu-box:8000/v1`, `http://gpu:8000[/v1]`, `--base-url URL`, `--base-url ...`, OpenAI's
  API through `OPENAI_BASE_URL`, inspect_ai's `openai-api/<service>/...` through `<SERVICE>_BASE_URL`): chronokg's
  loopback OpenAI-compatible server;
- `chronokg serve ...` (runs until stopped): started on a free port, probed (`/health`, or MCP `initialize` and
  `tools/list`), stopped (tests/docs_shell.py); `--tools http://127.0.0.1:8765` and
  `--tools mcp+http://127.0.0.1:8766/mcp` get such a server, left running for the block;
- `pip install SPEC`: a check that SPEC is installed already; `xdg-open FILE`: a check that FILE exists;
- ids a reader copies from an earlier output: `runs/run-<id>` (and `<pass id>`) is the newest run folder,
  `runs/run-A runs/run-B` the two newest, `run-…` the newest run's id, any other id with `…` (`snap-…`,
  `tempomed:mcq:…@2025-06-01`) the store's one match (of snapshots, the newest);
- the port of the stand-in model server eval.md starts (`--port 0`, then `41969`): a free port;
- paths outside the folder: `/tmp/chronokg/` is the test's folder, `/data/store.kgl.rag` the demo store's index;
- files a document names but makes elsewhere: workflow.md's `release-2019.jsonl` and `release-2025.jsonl` are the
  real TempoMed sample split by `Year_current` (as tests/test_loop.py does); its `Q646148.json`, `Q2112.json`,
  `Q271094.json` are the real entity files and `Q646148-newer.json` a newer revision written as tests/test_loop.py
  writes it.

As on a reader's machine, `chronokg query` and `retrieve search` start the local query and search processes,
which answer the later calls; they live in the test's own runtime folder and are stopped when it ends.

Runtime: the whole set takes about six minutes of one core (the CLI starts once per command; two blocks build an
embedding index), so it is marked `docs_run`, part of the slow tier: left out of the default run, run by
`pytest --all` and CI, and alone with `pytest -m docs_run` after changing a document or the commands it shows.
Each test prints its blocks' seconds and its slowest commands (`-rP` shows them).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]  # docs/*.md and docs/*/*.md
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)
RUN = {"bash", "python"}
NOT_CODE = {"text", "json", "toml", "mermaid"}  # output, diagrams, config shown: nothing to run


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int
    language: str
    info: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"

    @property
    def skip(self) -> str | None:
        """The reason its fence gives for not running it ('' if marked without one), None if it runs."""
        m = re.search(r"\bskip-test\b:?\s*(.*)", self.info)
        return None if m is None else m.group(1).strip()

    @property
    def exit_code(self) -> int:
        m = re.search(r"\bexit=(\d+)", self.info)
        return int(m.group(1)) if m else 0


def code_blocks(doc: Path) -> list[Block]:
    text = doc.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        words = m.group(1).split(maxsplit=1)
        out.append(Block(doc, text[: m.start()].count("\n") + 1, words[0] if words else "",
                         words[1] if len(words) > 1 else "", m.group(2)))
    return out


def test_every_code_block_is_run_or_marked() -> None:
    """Every fence names its language; bash and python blocks run, or their fence says why not."""
    problems, skipped, run = [], [], 0
    for doc in DOCS:
        for b in code_blocks(doc):
            if b.language in NOT_CODE:
                continue
            if b.language not in RUN:
                problems.append(f"{b.where}: fence language {b.language or '(none)'!r}: name it (bash, python, "
                                f"or {', '.join(sorted(NOT_CODE))} for what is not run)")
            elif b.skip == "":
                problems.append(f"{b.where}: skip-test without a reason")
            elif b.skip is not None:
                skipped.append(f"{b.where}: {b.skip}")
            else:
                run += 1
    assert not problems, "\n".join(problems)
    print(f"\n{run} code blocks run, {len(skipped)} marked skip-test:\n" + "\n".join(skipped))
    assert run >= 30 and len(skipped) <= 12


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    from chronokg.testing.openai_server import OpenAIServer

    with OpenAIServer() as server:
        yield server.url


PRELUDE = r"""
chronokg() {
  local started=$EPOCHREALTIME code=0 args="${*//$'\n'/ }"  # one line a command, for the log below
  case "$1" in
    serve) shift; python -m tests.docs_shell serve "$@" || code=$? ;;
    *) python -m chronokg.cli "$@" || code=$? ;;
  esac
  printf '%s %s %s\n' "$started" "$EPOCHREALTIME" "$args" >> "$DOCS_TIMES"
  return $code
}
pip() { python -m tests.docs_shell installed "$@"; }
xdg-open() { test -s "$1" && echo "xdg-open: $1 is there"; }
newest_run() { ls -td runs/run-* | sed -n "${1:-1}p"; }
"""


def substitute(code: str) -> str:
    """The stand-ins of the module docstring, and nothing else."""
    code = re.sub(r"\\\n", " ", code)  # continuation lines: one command
    code = code.replace(" && ", "\n")  # under `set -e` every command of an && list must succeed, as here
    for placeholder, real in [
        ("http://gpu-box:8000/v1", "$DOCS_MODEL_URL"), ("http://gpu:8000/v1", "$DOCS_MODEL_URL"),
        ("http://gpu:8000", "${DOCS_MODEL_URL%/v1}"),  # without /v1: the CLI adds it
        ("--base-url URL", "--base-url $DOCS_MODEL_URL"), ("--base-url ...", "--base-url $DOCS_MODEL_URL"),
        ("--tools http://127.0.0.1:8765", '--tools "$(python -m tests.docs_shell background http)"'),
        ("--tools mcp+http://127.0.0.1:8766/mcp",
         '--tools "$(python -m tests.docs_shell background mcp --transport http --rate 0)"'),
        ("runs/run-<id>", '"$(newest_run)"'), ("runs/run-<pass id>", '"$(newest_run)"'),
        ("runs/run-A runs/run-B", '"$(newest_run 2)" "$(newest_run 1)"'),
        ("runs/run-A", '"$(newest_run 2)"'), ("runs/run-B", '"$(newest_run 1)"'),
        ("run-…", '"$(basename "$(newest_run)")"'),
        ("--port 0 &", "--port $DOCS_SPARE_PORT & python -m tests.docs_shell wait-port $DOCS_SPARE_PORT; "),
        ("127.0.0.1:41969", "127.0.0.1:$DOCS_SPARE_PORT"),
        ("/tmp/chronokg/", "$DOCS_TMP/"), ("/data/store.kgl.rag", "$HOME/.local/share/chronokg/demo.kgl.rag"),
        ("CHRONOKG_SERVE_TOKENS=…", "CHRONOKG_SERVE_TOKENS=docs-test-token-0123456789abcdef"),
    ]:
        code = code.replace(placeholder, real)
    lines = []
    for line in code.splitlines():  # other ids with `…` in a command (not its comment): the store's match
        command, hash_, comment = line.partition("  #")
        lines.append(re.sub(r"(?<![\w$])([\w:.-]+…[\w:.@-]*)", r'"$(python -m tests.docs_shell pick \1)"', command)
                     + hash_ + comment)
    return "\n".join(lines)


def prepare(doc: Path, work: Path, shared_data: Path) -> None:
    """Files the document names but makes elsewhere."""
    if doc.name == "workflow.md":
        from tests.test_loop import split_tempomed

        r1, r2, _ = split_tempomed(shared_data, work)
        r1.rename(work / "release-2019.jsonl")
        r2.rename(work / "release-2025.jsonl")
        from tests.test_loop import newer_wikidata_revision

        for entity in sorted((shared_data / "wikidata-entities").glob("Q*.json")):
            (work / entity.name).write_bytes(entity.read_bytes())
        newer_wikidata_revision(shared_data / "wikidata-entities" / "Q646148.json", work / "Q646148-newer.json")


def run_block(block: Block, script: str, cwd: Path, env: dict[str, str], log: Path) -> tuple[int, str]:
    """The block in bash, in its own process group (stopped afterwards: what it started in the background)."""
    with open(log, "w") as out:
        proc = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            code = -1
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                time.sleep(0.2)
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return code, log.read_text(errors="replace")


def commands_run(doc: Path) -> int:
    """How many commands the document's bash blocks run: its docs run's rough cost."""
    return sum(len(re.findall(r"^\s*[a-z]", substitute(b.code), re.M))
               for b in code_blocks(doc) if b.language == "bash" and b.skip is None)


def documents() -> list[Path]:
    """The documents with a bash block to run, the longest first: with two xdist workers, the last to start is a
    short one, not one that keeps a worker busy after the other is done."""
    return sorted((d for d in DOCS if commands_run(d)), key=commands_run, reverse=True)


@pytest.fixture(scope="session")
def encoder_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One encoder cache for every docs run of the test session (xdist workers included): each test's `HOME`
    is its own, and the onnx graph built from the embedding weights (CPU-seconds) is the same in every one."""
    from tests.demo_stores import shared_root

    return shared_root(tmp_path_factory) / "docs-encoders"


@pytest.mark.docs_run
@pytest.mark.parametrize("doc", documents(), ids=[str(d.relative_to(REPO)) for d in documents()])
def test_bash_blocks_run(doc: Path, shared_data: Path, model_url: str, encoder_cache: Path, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.docs_shell import free_port
    from tests.test_query_daemon import stop_all

    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (tmp_path / "shared").symlink_to(shared_data.parent)
    prepare(doc, work, shared_data)
    run = Path(tempfile.mkdtemp(prefix="ckdocs", dir="/tmp"))
    venv_bin = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHRONOKG_", "OPENAI_", "XDG_", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(REPO),
               OPENAI_API_KEY="sk-docs-test", OPENAI_BASE_URL=model_url, DOCS_MODEL_URL=model_url,
               DOCS_SPARE_PORT=str(free_port()), DOCS_TMP=str(tmp_path), DOCS_SERVE_LOG=str(tmp_path / "serve.log"),
               COLUMNS="100", TMPDIR=str(tmp_path), XDG_RUNTIME_DIR=str(run), CHRONOKG_QUERY_DAEMON_IDLE_S="60",
               CHRONOKG_EMBEDDING_CACHE=str(encoder_cache), DOCS_TIMES=str(tmp_path / "times.txt"))
    # as on a reader's machine, `chronokg query` and `retrieve search` start the local query and search processes
    # and later commands are answered by them; their sockets are in this test's own runtime folder (a short path:
    # a socket's name is at most 107 bytes), whose processes are all stopped at the end
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    try:
        run_blocks(doc, work, tmp_path, env)
    finally:
        stop_all(run)


def run_blocks(doc: Path, work: Path, tmp_path: Path, env: dict[str, str]) -> None:
    state, prelude = tmp_path / "state.sh", tmp_path / "prelude.sh"
    prelude.write_text(PRELUDE)
    ran, times = 0, []
    for i, block in enumerate(b for b in code_blocks(doc) if b.language == "bash"):
        if block.skip is not None:
            continue
        script = (f"set -eo pipefail\nsource {prelude}\n[ -f {state} ] && source {state}\n"
                  f"{substitute(block.code)}\nexport -p > {state}\n")
        started = time.monotonic()
        code, output = run_block(block, script, work, env, tmp_path / f"block{i}.log")
        times.append(f"{block.where} {time.monotonic() - started:.1f} s")
        assert "Traceback" not in output, f"{block.where} printed a Python traceback:\n{output[-4000:]}"
        assert code == block.exit_code, (f"{block.where}: exit {code} (the doc states {block.exit_code})\n"
                                         f"--- as run:\n{script}\n--- output:\n{output[-4000:]}")
        ran += 1
    print("\n" + "\n".join(times) + "\nslowest commands:\n" + "\n".join(slowest(tmp_path / "times.txt")))
    assert ran


def slowest(log: Path, n: int = 10) -> list[str]:
    """The `chronokg` commands the blocks ran that took longest (the shell function's log: start, end, args)."""
    rows = [line.split(" ", 2) for line in log.read_text().splitlines()] if log.exists() else []
    timed = sorted(((float(row[1]) - float(row[0]), row[2]) for row in rows if len(row) == 3), reverse=True)
    return [f"{seconds:6.1f} s  chronokg {args}" for seconds, args in timed[:n]]


def test_no_placeholder_is_left_in_a_block_that_runs() -> None:
    """What a reader fills in is filled in: no `<...>`, model host, `URL`, `...` or fixed port is run as written."""
    left = []
    for doc in DOCS:
        for b in code_blocks(doc):
            if b.language == "bash" and b.skip is None:
                commands = "\n".join(re.sub(r"docs_shell pick \S+\)", "", line.partition("  #")[0])
                                     for line in substitute(b.code).splitlines())
                found = re.findall(r"<[\w ]+>|gpu(?:-box)?:8000|\bURL\b|\s\.\.\.(?:\s|$)|:876[56]\b|…", commands)
                left += [f"{b.where}: {f.strip()}" for f in found]
    assert not left, left


def test_a_failing_command_fails_its_block(tmp_path: Path) -> None:
    """Under the runner's `set -e`, a failing command anywhere in a block (an `&&` list included) fails it."""
    block = Block(REPO / "README.md", 1, "bash", "", "false && true\necho after\n")
    code, output = run_block(block, f"set -eo pipefail\n{substitute(block.code)}\n", tmp_path, dict(os.environ),
                             tmp_path / "log")
    assert code == 1 and "after" not in output


def test_the_pip_stand_in_checks_what_is_installed() -> None:
    ok = subprocess.run([sys.executable, "-m", "tests.docs_shell", "installed", "install", "chronokg[serve]"],
                        cwd=REPO, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    missing = subprocess.run([sys.executable, "-m", "tests.docs_shell", "installed", "install",
                              "no-such-package-docs==1.0", "pytest<1"], cwd=REPO, capture_output=True, text=True)
    assert missing.returncode == 1
    assert "no-such-package-docs==1.0" in missing.stderr and "pytest<1 (have" in missing.stderr


def test_the_inspect_example_runs_against_the_loopback_server() -> None:
    """README's inspect_ai example is run, not shown: its server is the loopback stand-in, named the way inspect
    reaches a local OpenAI-compatible server (`openai-api/<service>/<model>` and `<SERVICE>_BASE_URL`; `openai/...`
    would call `/v1/responses`, which such servers answer with 404)."""
    (block,) = [b for b in code_blocks(REPO / "README.md") if "inspect eval" in b.code and b.language == "bash"]
    assert block.skip is None and block.exit_code == 0
    script = substitute(block.code)
    service = re.search(r"--model openai-api/(\w+)/\S+", script)
    assert service is not None, script
    assert f"{service.group(1).upper()}_BASE_URL=$DOCS_MODEL_URL" in script
    assert re.search(r"--model openai/", script) is None
