"""A probe corpus, evaluation side: every case a probe of the runner and generation found scored
silently wrong, or ending in a traceback or a half-made artifact, kept as a test.

The model is the loopback OpenAI-compatible server (`chronokg.testing.openai_server`): real HTTP, with the
two answers nobody wrote (`choices: []`, `message.content: null`) injected as faults.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import write_jsonl
from chronokg.cli.app import app
from chronokg.demo.corpus import load_demo
from chronokg.eval.log import latest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.testing.openai_server import Fault, OpenAIServer

EXIT_INCOMPLETE = 3  # documented in docs/eval.md


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The demo corpus in a file store, and TempoMed questions generated from it."""
    root = tmp_path_factory.mktemp("probes")
    with KgliteStore(root / "store.kgl") as store:
        load_demo(store)
        questions, _ = generate("tempomed", store, snapshot.current(store), {})
    path = root / "tempomed.jsonl"
    write_jsonl(path, questions[:3])
    return f"kglite://{root / 'store.kgl'}", path


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh response cache and one retry (so a run with an injected fault ends in seconds)."""
    monkeypatch.setenv("CHRONOKG_RESPONSE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("CHRONOKG_MODEL_MAX_RETRIES", "1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return tmp_path


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as s:
        yield s


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("fault", ["empty", "null"])
def test_an_empty_answer_is_a_failed_sample_never_cached_and_resume_retries_it(
        demo: tuple[str, Path], env: Path, server: OpenAIServer, fault: str) -> None:
    uri, questions = demo
    server.fail_next(Fault.parse(fault), times=2)  # the first sample: its attempt and its one retry
    code, output = cli("--store", uri, "eval", "run", str(questions), "-m", "openai-compat/loopback-model",
                       "--base-url", server.url, "--log-dir", str(env / "runs"), "--limit", "1", "--no-write",
                       "--concurrency", "1")
    assert code == EXIT_INCOMPLETE, output  # an incomplete run is not a success
    assert "retry 1/1 after empty answer from the server" in " ".join(output.split())  # every retry shown
    folder = next((env / "runs").iterdir())
    [record] = latest(folder / "samples.jsonl").values()
    assert record.error is not None and "empty answer" in record.error, record
    assert record.answer is None and record.correct is None  # not scored as a wrong (INVALID) answer
    assert record.retries == 1  # the retry that happened
    assert json.loads((folder / "run.json").read_text())["status"] == "incomplete"

    before = server.model_requests
    code, output = cli("--store", uri, "eval", "run", "--resume", str(folder), "--no-write")
    assert code == 0, output
    assert server.model_requests == before + 1  # asked again: nothing of the empty answer was cached
    [record] = latest(folder / "samples.jsonl").values()
    assert record.ok and record.answer is not None


def test_protocol_is_validated_before_a_run_folder(demo: tuple[str, Path], env: Path) -> None:
    uri, questions = demo
    code, output = cli("--store", uri, "eval", "run", str(questions), "-m", "baseline/random", "--protocol", "nope",
                       "--log-dir", str(env / "runs"))
    assert code == 2 and error_lines(output) == ["error: --protocol 'nope': give seed or chronokg"], output
    assert not (env / "runs").exists()


def test_score_validates_the_protocol_too(demo: tuple[str, Path], env: Path) -> None:
    _, questions = demo
    outputs = env / "out.jsonl"
    outputs.write_text(json.dumps({"id": json.loads(questions.read_text().splitlines()[0])["id"], "output": "A"})
                       + "\n")
    code, output = cli("eval", "score", str(questions), str(outputs), "--protocol", "nope", "--log-dir",
                       str(env / "runs"))
    assert code == 2 and error_lines(output) == ["error: --protocol 'nope': give seed or chronokg"], output
    assert not (env / "runs").exists()


def _rewrite(src: Path, dst: Path, edit: object) -> Path:
    lines = [json.loads(line) for line in src.read_text().splitlines()]
    lines = edit(lines)  # type: ignore[operator]
    dst.write_text("".join(json.dumps(obj) + "\n" for obj in lines))
    return dst


def test_unknown_family_is_refused_naming_the_record(demo: tuple[str, Path], env: Path) -> None:
    uri, questions = demo

    def other_family(lines: list[dict[str, object]]) -> list[dict[str, object]]:
        lines[1]["metadata"]["family"] = "nosuch"  # type: ignore[index]
        return lines

    bad = _rewrite(questions, env / "bad.jsonl", other_family)
    code, output = cli("--store", uri, "eval", "run", str(bad), "-m", "baseline/random", "--log-dir",
                       str(env / "runs"))
    assert code == 2, output
    [line] = error_lines(output)
    assert f"{bad}, record 2" in line and "unknown family 'nosuch'" in line
    assert not (env / "runs").exists()


def test_duplicate_question_ids_are_refused_naming_them(demo: tuple[str, Path], env: Path) -> None:
    uri, questions = demo
    bad = _rewrite(questions, env / "dup.jsonl", lambda lines: [*lines, lines[0]])
    code, output = cli("--store", uri, "eval", "run", str(bad), "-m", "baseline/random", "--log-dir",
                       str(env / "runs"))
    assert code == 2, output
    [line] = error_lines(output)
    qid = json.loads(questions.read_text().splitlines()[0])["id"]
    assert f"record 4: question id {qid} again (first in {bad}, record 1)" in line
    assert not (env / "runs").exists()


@pytest.mark.parametrize(("spec", "extra", "says"), [
    ("baseline/oracel", [], "unknown baseline 'oracel'"),
    ("llama", [], "is not PROVIDER/MODEL"),
    ("openai-compat/m", [], "needs a server"),
    ("openai/gpt-4o", [], "needs an OpenAI API key"),
    ("openai-compat/m", ["--base-url", "not a url"], "is not an http(s) URL"),
])
def test_a_bad_model_spec_fails_before_a_run_folder(demo: tuple[str, Path], env: Path, spec: str,
                                                    extra: list[str], says: str) -> None:
    uri, questions = demo
    code, output = cli("--store", uri, "eval", "run", str(questions), "-m", "baseline/random", "-m", spec, *extra,
                       "--log-dir", str(env / "runs"))
    assert code == 2, output
    [line] = error_lines(output)
    assert says in line
    assert not (env / "runs").exists()  # no folder stuck at status: running


def test_a_store_baseline_without_a_store_or_on_an_empty_one_is_refused(demo: tuple[str, Path], env: Path) -> None:
    _, questions = demo
    missing = env / "missing.kgl"
    code, output = cli("--store", f"kglite://{missing}", "eval", "run", str(questions), "-m", "baseline/oracle",
                       "--log-dir", str(env / "runs"))
    assert code == 2 and "answers from the store: run it with a store" in output, output
    assert not (env / "runs").exists() and not missing.exists()

    empty = env / "empty.kgl"
    assert cli("--store", f"kglite://{empty}", "init")[0] == 0
    code, output = cli("--store", f"kglite://{empty}", "eval", "run", str(questions), "-m", "baseline/oracle",
                       "--log-dir", str(env / "runs"))
    assert code == 2, output
    [line] = error_lines(output)
    assert "holds no facts" in line
    assert not (env / "runs").exists()


@pytest.mark.parametrize("which", ["missing", "folder"])
def test_a_question_path_that_is_not_a_file_is_one_line(env: Path, which: str) -> None:
    path = env / "missing.jsonl" if which == "missing" else env
    code, output = cli("eval", "run", str(path), "-m", "baseline/random", "--log-dir", str(env / "runs"))
    assert code == 2, output
    [line] = error_lines(output)
    assert str(path) in line
    assert len(output.strip().splitlines()) == 1


def test_a_corrupt_run_json_is_one_line(env: Path) -> None:
    folder = env / "run-x"
    folder.mkdir()
    (folder / "run.json").write_text('{"run_id": 5, "models": "no", "questions": 7}')
    (folder / "samples.jsonl").write_text("")
    for command in (["eval", "metrics", str(folder)], ["eval", "run", "--resume", str(folder)]):
        code, output = cli(*command)
        assert code == 2, output
        assert len(output.strip().splitlines()) == 1, output
        assert output.startswith(f"error: {folder / 'run.json'}: not a run description (")
    (folder / "run.json").write_text("{not json")
    code, output = cli("eval", "metrics", str(folder))
    assert code == 2 and len(output.strip().splitlines()) == 1, output


def test_generate_on_a_store_that_does_not_exist_creates_nothing(env: Path) -> None:
    missing = env / "nothing.kgl"
    code, output = cli("--store", f"kglite://{missing}", "generate", "tempomed", "--out", str(env / "q.jsonl"))
    assert code == 2, output
    assert error_lines(output) == [f"error: no store at {missing}: load a source into it first (chronokg ingest "
                                   "...), or give --store URI"]
    assert sorted(p.name for p in env.iterdir()) == []


def test_generate_without_the_familys_data_is_an_error_and_writes_nothing(env: Path) -> None:
    empty = env / "empty.kgl"
    assert cli("--store", f"kglite://{empty}", "init")[0] == 0
    code, output = cli("--store", f"kglite://{empty}", "generate", "tempomed", "--out", str(env / "q.jsonl"))
    assert code == 2, output
    [line] = error_lines(output)
    assert "no questions" in line and "holds none of the data" in line
    assert not (env / "q.jsonl").exists()


def test_generate_out_a_folder_is_one_line_and_leaves_no_part_file(demo: tuple[str, Path], env: Path) -> None:
    uri, _ = demo
    out = env / "outdir"
    out.mkdir()
    code, output = cli("--store", uri, "generate", "tempomed", "--no-write", "--out", str(out))
    assert code == 2, output
    [line] = error_lines(output)
    assert "is a folder" in line
    assert list(env.glob("*.part")) == [] and list(out.iterdir()) == []


def test_write_jsonl_leaves_no_part_file_when_it_fails(demo: tuple[str, Path], tmp_path: Path) -> None:
    from chronokg.bench.question import read_jsonl

    _, questions = demo
    target = tmp_path / "q.jsonl"

    def broken() -> Iterator[object]:
        yield from read_jsonl(questions)
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_jsonl(target, broken())  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
