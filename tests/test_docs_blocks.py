"""Every code block of README.md and docs/*.md, checked as written.

- ```python blocks run, each in a fresh interpreter, in a folder holding the demo store (with its passage index)
  and TempoMed questions generated from it (`tempomed.jsonl`). Placeholders for what cannot exist here are
  replaced, and only these: the store paths `kglite:///tmp/demo.kgl` and `kglite:///data/store.kgl` become that
  demo store; the model servers `http://gpu-box:8000/v1` and OpenAI's API (`OPENAI_BASE_URL`) become the
  loopback OpenAI-compatible server. A block that imports a package chronokg does not install (inspect_ai,
  datasets) is compiled, and run only where the package is installed.
- ```bash blocks: every `chronokg ...` command is parsed by the real CLI (its command path, options, values and
  required arguments), those of blocks marked `skip-test` too; tests/test_docs_run.py runs the blocks.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.test_docs_run import DOCS, code_blocks

NOT_INSTALLED_HERE = {"inspect_ai", "datasets"}  # what the docs show other tools doing with our files


def blocks(language: str) -> list[tuple[str, str]]:
    """Every block of `language` (its fence read as tests/test_docs_run.py reads it, `skip-test` marks included:
    a marked bash block is still parsed)."""
    return [(b.where, b.code) for doc in DOCS for b in code_blocks(doc) if b.language == language]


def build_place(root: Path) -> None:
    """The demo store with its passage index, and tempomed.jsonl generated from it."""
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.question import write_jsonl
    from chronokg.demo.corpus import load_demo
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.retrieval import indexing

    with KgliteStore(root / "demo.kgl") as store:
        load_demo(store)
        indexing.update_index(store, root / "demo.kgl.rag")
        questions, _ = generate("tempomed", store, snapshot.current(store), {})
    write_jsonl(root / "tempomed.jsonl", questions)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """A folder with the demo store, its passage index and tempomed.jsonl; the loopback model server's URL. The
    folder is built once per test run (an index build is CPU-seconds; xdist workers share it) and copied here."""
    from chronokg.testing.openai_server import OpenAIServer
    from tests.demo_stores import built_once, copy_store

    root = copy_store(built_once(tmp_path_factory, "docs-place", build_place), tmp_path_factory.mktemp("docs") / "d")
    with OpenAIServer() as server:
        yield root, f"kglite://{root / 'demo.kgl'}", server.url


def test_the_docs_have_code_blocks() -> None:
    assert len(blocks("python")) >= 10 and len(blocks("bash")) >= 15


@pytest.mark.slow
@pytest.mark.parametrize(("where", "code"), blocks("python"), ids=[w for w, _ in blocks("python")])
def test_python_block_runs(where: str, code: str, place: tuple[Path, str, str], tmp_path: Path) -> None:
    root, uri, model_url = place
    compile(code, where, "exec")  # a SyntaxError names the block
    missing = sorted(m for m in NOT_INSTALLED_HERE
                     if re.search(rf"^\s*(from|import) {m}\b", code, re.M) and importlib.util.find_spec(m) is None)
    if missing:
        pytest.skip(f"{where}: compiled; runs where {', '.join(missing)} is installed")
    for placeholder, real in {"kglite:///tmp/demo.kgl": uri, "kglite:///data/store.kgl": uri,
                              "http://gpu-box:8000/v1": model_url}.items():
        code = code.replace(placeholder, real)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHRONOKG_", "OPENAI_"))}
    env.update(HOME=str(tmp_path / "home"), CHRONOKG_STORE=uri, CHRONOKG_RESPONSE_CACHE=str(tmp_path / "c.sqlite"),
               OPENAI_API_KEY="sk-docs", OPENAI_BASE_URL=model_url, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{where} failed:\n{done.stderr[-3000:]}"
    if "print(" in code:
        assert done.stdout.strip(), f"{where} printed nothing"


def commands(code: str) -> list[list[str]]:
    """The `chronokg ...` commands of a bash block: comments dropped, continuations joined, a synopsis's
    optional `[--flag ...]` groups left out."""
    text = re.sub(r"\\\n\s*", " ", code)
    lines: list[str] = []
    for raw in text.splitlines():
        raw = re.sub(r"\s{2,}#.*$", "", raw)  # a comment (the docs put two spaces or more before one)
        if lines and lines[-1].count('"') % 2:  # a quoted argument running on: one command
            lines[-1] += " " + raw.strip()
        else:
            lines.append(raw)
    out = []
    for line in lines:
        line = re.sub(r"\s\[-[^\]]*\]", "", line)
        line = re.sub(r"<[^<>\s][^<>]*>", "ID", line)  # runs/run-<id>: a placeholder the reader fills in
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        command: list[str] = []
        for token in [*lexer, "&&"]:
            if token in {"&&", "||", ";", "|", "&"}:
                while command and re.match(r"^[A-Z_]+=", command[0]):  # VAR=value chronokg ...
                    command = command[1:]
                if command and command[0] == "chronokg":
                    out.append(command[1:])
                command = []
            else:
                command.append(token)
    return out


def parse(args: list[str]) -> None:
    """Resolve and parse `chronokg ARGS` as the CLI would, down to the command, without invoking anything."""
    import typer

    from chronokg.cli.app import app

    command = typer.main.get_command(app)
    ctx = command.make_context("chronokg", list(args))
    while hasattr(command, "resolve_command"):
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            return
        name, command, rest = command.resolve_command(ctx, rest)
        assert command is not None and name is not None
        ctx = command.make_context(name, rest, parent=ctx)


@pytest.mark.parametrize(("where", "code"), blocks("bash"), ids=[w for w, _ in blocks("bash")])
def test_bash_block_commands_parse(where: str, code: str) -> None:
    from typer._click.exceptions import ClickException

    for args in commands(code):
        try:
            parse(args)
        except ClickException as exc:
            if "does not exist" in exc.format_message():  # a file the example names (tempomed.jsonl, ...)
                continue
            pytest.fail(f"{where}: chronokg {shlex.join(args)}: {exc.format_message()}")


def test_the_parse_check_catches_an_option_a_command_lacks() -> None:
    from typer._click.exceptions import ClickException

    assert commands('chronokg query cypher "MATCH (n) RETURN n" --format json  # no --format here') == [
        ["query", "cypher", "MATCH (n) RETURN n", "--format", "json"]]
    with pytest.raises(ClickException, match="No such option: --format"):
        parse(["query", "cypher", "MATCH (n) RETURN n", "--format", "json"])
    parse(["query", "timeline", "--subject", "Q1", "--format", "json"])


def test_eval_md_demo_baseline_accuracies_are_what_the_demo_gives(place: tuple[Path, str, str],
                                                                  tmp_path: Path) -> None:
    """docs/eval.md's line of demo baseline accuracies, computed here (so a changed demo corpus shows up)."""
    from chronokg.eval import runner
    from chronokg.eval.log import latest
    from chronokg.graph.kglite_store import KgliteStore

    root, _, _ = place
    text = (REPO / "docs" / "eval.md").read_text(encoding="utf-8")
    line = re.search(r"On the demo \((\d+) TempoMed MCQs, `--protocol chronokg`\): (.*?)\.\n\n", text, re.S)
    assert line, "docs/eval.md: the demo baselines sentence is gone"
    documented = {f"baseline/{name}": float(value)
                  for name, value in re.findall(r"(?:^|, )([\w:.-]+) ([\d.]+) %", re.sub(r"\s+", " ", line.group(2)))}
    assert len(documented) >= 5, line.group(2)
    questions = runner.load_questions([root / "tempomed.jsonl"], None)
    assert int(line.group(1)) == len(questions)
    with KgliteStore(root / "demo.kgl", read_only=True) as store:
        options = runner.RunOptions(protocol="chronokg", cache=False)
        folder, info = runner.prepare(tmp_path / "runs", [root / "tempomed.jsonl"],
                                      [runner.ModelEntry(spec=spec) for spec in documented], options)
        runner.run(folder, info, questions, store)
    samples = list(latest(folder / "samples.jsonl").values())
    measured = {spec: round(100 * sum(bool(s.correct) for s in samples if s.model == spec)
                            / sum(1 for s in samples if s.model == spec), 1) for spec in documented}
    assert measured == documented
