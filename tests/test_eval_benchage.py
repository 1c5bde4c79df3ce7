"""BenchAge through the real runner: the model answers, then a judge compares (seed prompt, max_tokens=1).

No model can run on these machines: a real OpenAI-compatible HTTP server on loopback
(`chronokg.testing.openai_server`, scripted mode) plays both a model that answers the gold at release and
the judge. The judge's decision is this test's own (answers split at ", " and normalised; BoolQ by Yes/No),
not chronokg's. Questions come from the real SelfAware and TruthfulQA samples, the self-authored
TriviaQA/NQ/BoolQ fixtures and a BoolQ file written here (so the random baseline has enough yes/no
questions); half of the time-sensitive questions get a later answer in the graph, which makes them outdated.

Expected values are derived by hand from the definitions (seed notes §3, paper eqs 1-7), not read back.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import string
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.families import benchage_prompts
from chronokg.bench.family import generate
from chronokg.bench.question import Question, write_jsonl
from chronokg.cli.app import app
from chronokg.eval import runner
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import RunInfo, SampleRecord, latest
from chronokg.eval.profiles.benchage import PROFILE, first_answer, judge_question, yes_no
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import qasets
from chronokg.metrics import benchage as ba
from chronokg.metrics.runs import export_seed
from chronokg.metrics.spec import for_family
from chronokg.metrics.stats import bootstrap_ci
from chronokg.testing.openai_server import Fault, OpenAIServer
from tests.helpers import result_ids

pytestmark = pytest.mark.slow  # a whole evaluation run


FIXTURES = Path(__file__).parent / "fixtures" / "qasets"
GOLD_MODEL = "openai-compat/gold-at-release"
JUDGE = "openai-compat/judge"
BASELINES = ["baseline/oracle", "baseline/random:3"]
MODELS = [*BASELINES, GOLD_MODEL]
UPDATED_FROM = dt.date(2024, 1, 1)


# --- the scripted loopback model and judge --------------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(text.lower().translate(str.maketrans("", "", string.punctuation)).split())


def _parts(text: str) -> set[str]:
    return {_norm(p) for p in text.split(", ")} - {""}


def judge_decision(system: str, user: str) -> bool:
    """This test's judge: the two answers of the seed prompt agree when they share a part (BoolQ: Yes/No)."""
    found = re.search(r"\nAnswer 1: (.*?)\nAnswer 2: (.*)\n\Z", user, re.S)
    assert found, user
    a1, a2 = found.groups()
    if "Yes/No" in system:
        def yn(t: str) -> str | None:
            t = t.strip()
            return "yes" if t.startswith("A") or "yes" in t.lower() else "no" if t.startswith("B") else None
        return yn(a1) is not None and yn(a1) == yn(a2)
    return bool(_parts(a1) & _parts(a2))


class Loopback:
    """What the loopback server says: the gold model answers each prompt with its gold at release, the judge
    "True, ..." or "False, ..." (cut to one word by max_tokens=1, as a real server would)."""

    def __init__(self, questions: list[Question]) -> None:
        self.gold = {q.input: q.metadata["gold_at_release"] for q in questions}

    def __call__(self, request: Any) -> str:
        body = request.body
        if body["model"] == "judge":
            verdict = judge_decision(body["messages"][0]["content"], body["messages"][1]["content"])
            return "True, both state it" if verdict else "False, they differ"
        return str(self.gold[request.last_user_text])


# --- the evaluated run ---------------------------------------------------------------------------------------


def boolq_file(path: Path) -> Path:
    """240 self-authored yes/no questions: the first 200 time-sensitive by the keyword rule ("still"), half True."""
    lines = []
    for i in range(240):
        text = f"is team {i} still the league champion" if i < 200 else f"is element {i} a noble gas"
        lines.append(json.dumps({"question": text, "title": f"Synthetic {i}", "answer": i % 2 == 0,
                                 "passage": f"Synthetic passage {i}."}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def build(tmp: Path, shared_data: Path) -> tuple[Path, list[Question]]:
    store_path = tmp / "store.kgl"
    # Every BoolQ question (the random baseline needs many), the first 120 of each other benchmark.
    parts = [{"detector": "keywords", "benchmarks": ["boolq"]},
             {"detector": "keywords", "benchmarks": ["selfaware", "truthfulqa", "triviaqa", "nq"], "limit": 120}]
    with KgliteStore(store_path, durable="off") as store:
        qasets.load(store, [FIXTURES, boolq_file(tmp / "boolq-synthetic.jsonl"),
                            shared_data / "selfaware" / "SelfAware.subset.json",
                            shared_data / "truthfulqa" / "TruthfulQA.subset.csv"])
        first = [q for o in parts for q in generate("benchage", store, snapshot.current(store), o)[0]]
        ts = [q for q in first if q.metadata["time_sensitive"]]
        for i, q in enumerate(ts[::2]):  # every other time-sensitive question gets a later answer
            m = q.metadata
            later = (m["gold_at_release"] != "A") if m["dataset"] == "BoolQ" else f"Later answer number {i}"
            qasets.add_updated_answer(store, m["question_id"], later, UPDATED_FROM, source="test update")
        questions = [q for o in parts for q in generate("benchage", store, snapshot.current(store), o)[0]]
    return store_path, questions


def run_models(tmp: Path, store_path: Path, questions: list[Question], models: list[str],
               options: runner.RunOptions, base_url: str | None) -> tuple[Path, RunInfo, list[SampleRecord]]:
    qfile = tmp / "questions.jsonl"
    write_jsonl(qfile, questions)
    entries = [runner.ModelEntry(spec=m, base_url=None if m.startswith("baseline/") else base_url) for m in models]
    with KgliteStore(store_path, read_only=True) as store:
        folder, info = runner.prepare(tmp / "runs", [qfile], entries, options)
        info, _ = runner.run(folder, info, runner.load_questions([qfile], None), store)
    return folder, info, list(latest(folder / "samples.jsonl").values())


@pytest.fixture(scope="module")
def evaluated(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("benchage-eval")
    store_path, questions = build(tmp, shared_data)
    assert len({q.input for q in questions}) == len(questions)  # the gold model looks answers up by prompt
    with OpenAIServer() as server:
        server.script = Loopback(questions)
        options = runner.RunOptions(protocol="seed", cache=False, concurrency=16, judge=JUDGE,
                                    judge_base_url=server.url)
        folder, info, samples = run_models(tmp, store_path, questions, MODELS, options, server.url)
        bodies = list(server.bodies)
    with KgliteStore(store_path) as store:
        write_predictions(store, info, questions, samples)
    return {"tmp": tmp, "store": store_path, "questions": questions, "folder": folder, "info": info,
            "samples": samples, "bodies": bodies}


def value(evaluated: dict[str, Any], spec: Any, model: str) -> Any:
    return spec.compute(evaluated["samples"], model)


def outdated_ids(evaluated: dict[str, Any]) -> set[str]:
    return {q.id for q in evaluated["questions"] if q.metadata["time_sensitive"]
            and q.metadata["up_to_date_answer"] is not None}


def test_the_run_is_complete_and_has_outdated_questions(evaluated: dict[str, Any]) -> None:
    questions = evaluated["questions"]
    assert evaluated["info"].status == "complete"
    assert len(evaluated["samples"]) == len(questions) * len(MODELS)
    ts = [q for q in questions if q.metadata["time_sensitive"]]
    datasets = {q.metadata["dataset"] for q in ts}
    assert {"SelfAware", "TruthfulQA", "BoolQ", "TriviaQA"} <= datasets
    assert 0 < len(outdated_ids(evaluated)) < len(ts)
    assert evaluated["info"].options["judge"] == JUDGE


def test_judge_calls_use_the_seed_prompt_and_settings(evaluated: dict[str, Any]) -> None:
    """Two judge calls per time-sensitive sample (one otherwise), in steps; gold vs up-to-date once per question."""
    by_id = {q.id: q for q in evaluated["questions"]}
    judge_bodies = [b for b in evaluated["bodies"] if b["model"] == "judge"]
    for body in judge_bodies:
        assert body["temperature"] == 0.0 and body["max_tokens"] == 1
    for s in evaluated["samples"]:
        q = by_id[s.question_id]
        pairs = [step["pair"] for step in s.steps]
        if q.metadata["time_sensitive"]:
            assert pairs == ["llm_vs_gold", "llm_vs_search", "gold_vs_search"]
        else:
            assert pairs == ["llm_vs_gold"]
        gold_step = s.steps[0]
        expected = benchage_prompts.judge_messages(judge_question(q), q.metadata["gold_text"], s.output or "",
                                                   boolq=q.metadata["dataset"] == "BoolQ")
        assert gold_step["prompt"] == expected[1]["content"]
        assert gold_step["llm_output"] in {"True,", "False,"}  # the reply cut to one token
        assert gold_step["result"] == benchage_prompts.judge_score(gold_step["llm_output"]) == s.fields["s_gold"]
    shared = [s for s in evaluated["samples"] if len(s.steps) == 3]
    computed = [s.question_id for s in shared if s.steps[2]["computed_here"]]
    assert sorted(computed) == sorted({s.question_id for s in shared})  # once per question, 3 models each
    ts_samples = len(shared)
    assert len(judge_bodies) == len(evaluated["samples"]) + ts_samples + len(computed)
    # The bodies are the seed's messages, byte for byte (NQ with the "?" its prompt appends).
    nq = next(q for q in evaluated["questions"] if q.metadata["dataset"] == "NaturalQuestion")
    assert judge_question(nq).endswith("?") and not nq.metadata["question"].endswith("?")
    assert any(b["messages"] == benchage_prompts.judge_messages(judge_question(nq), nq.metadata["gold_text"],
                                                                nq.metadata["gold_at_release"])
               for b in judge_bodies)


def test_oracle_answers_the_up_to_date_answer(evaluated: dict[str, Any]) -> None:
    model = "baseline/oracle"
    n_out = len(outdated_ids(evaluated))
    ts = value(evaluated, ba.TA, model)
    dds = value(evaluated, ba.DDS, model).value
    assert ts.value == 1.0 and all(g["ta"] == 1.0 for g in ts.groups.values())
    assert dds == pytest.approx(n_out / ts.details["n_ts"])
    # The oracle matches the gold exactly where it is still current: BF = 1 - DDS, EMR = TAG = DDS.
    assert value(evaluated, ba.BF, model).value == pytest.approx(1 - dds)
    assert value(evaluated, ba.EMR, model).value == pytest.approx(dds)
    assert value(evaluated, ba.TAG, model).value == pytest.approx(dds)
    assert value(evaluated, ba.A_TAG, model).value == pytest.approx(1.0)
    assert value(evaluated, ba.A_EMR, model).value == pytest.approx(1.0)
    kappa = value(evaluated, ba.KAPPA, model)  # s constant 1: k1 = k3 = 0; gs == s_gold: k2 = 1
    assert (kappa.details["k1_gold_search"], kappa.details["k2_gs_gold"], kappa.details["k3_gs_search"]) == (
        0.0, 1.0, 0.0)
    assert kappa.value == pytest.approx(1 / 3)


def test_gold_answering_model_is_faithful_to_the_aged_benchmark(evaluated: dict[str, Any]) -> None:
    model = GOLD_MODEL
    outdated = outdated_ids(evaluated)
    mine = [s for s in evaluated["samples"] if s.model == model]
    on_outdated = ba.aging(ba._count([s for s in mine if s.question_id in outdated]))
    assert (on_outdated["bf"], on_outdated["ta"], on_outdated["emr"]) == (1.0, 0.0, 0.0)
    dds = value(evaluated, ba.DDS, model).value
    assert value(evaluated, ba.BF, model).value == 1.0
    assert value(evaluated, ba.TA, model).value == pytest.approx(1 - dds)
    assert value(evaluated, ba.TAG, model).value == pytest.approx(-dds)
    assert value(evaluated, ba.EMR, model).value == 0.0
    a_o = value(evaluated, ba.A_O, model)
    assert a_o.value == 1.0
    share = a_o.details["n_ts"] / (a_o.details["n_ts"] + a_o.details["n_non_ts"])
    assert value(evaluated, ba.A_TAG, model).value == pytest.approx(1 - dds * share)
    assert value(evaluated, ba.A_EMR, model).value == 1.0
    tag = value(evaluated, ba.TAG, model)
    assert tag.details["right_then_stale"] == len(outdated)  # TAG = EMR - #(right then, stale now)/N


def test_random_is_chance_on_yes_no_and_silent_on_open_questions(evaluated: dict[str, Any]) -> None:
    model = "baseline/random:3"
    mine = [s for s in evaluated["samples"] if s.model == model]
    boolq_ts = [s for s in mine if s.fields["dataset"] == "BoolQ" and s.fields["pool"] == "ts"]
    assert len(boolq_ts) >= 200
    for key in ("s_gold", "s_search"):
        lo, hi = bootstrap_ci([float(s.fields[key]) for s in boolq_ts])
        assert lo <= 0.5 <= hi, (key, lo, hi)
    groups = value(evaluated, ba.BF, model).groups
    assert groups["SelfAware"]["bf"] == groups["TruthfulQA"]["bf"] == 0.0  # no options to pick from: no answer
    assert all(s.output == "" for s in mine if s.fields["dataset"] != "BoolQ")


def test_pure_and_cypher_metrics_agree(evaluated: dict[str, Any]) -> None:
    specs = for_family(["benchage"])
    assert {s.name for s in specs} >= {"benchage.bf", "benchage.ta", "benchage.tag", "benchage.emr",
                                       "benchage.dds", "benchage.a_o", "benchage.a_tag", "benchage.a_emr",
                                       "benchage.kappa"}
    with KgliteStore(evaluated["store"], read_only=True) as store:
        for spec in specs:
            assert spec.cypher is not None
            for model in MODELS:
                pure = spec.compute(evaluated["samples"], model)
                graph = spec.from_graph(store, evaluated["info"].run_id, model)
                assert pure.model_dump() == graph.model_dump(), (spec.name, model)
        # Predictions that repeat the stale gold link to the gold fact, the oracle's to the later answer.
        rows = store.run("MATCH (p:Prediction)-[:CHOSE]->(f:Fact) WHERE p.model = $m AND p.f_gs = 0 "
                         "RETURN f.value AS value", {"m": "baseline/oracle"})
        assert rows and all(str(r["value"]).startswith("Later answer") or isinstance(r["value"], bool)
                            for r in rows)


def test_seed_format_export(evaluated: dict[str, Any]) -> None:
    """OpenCompass prediction files the seed's evaluator reads: its regex recovers each question, and the
    time-sensitive ones match the websearch file of `generate benchage --format seed` as its join requires."""
    out = evaluated["tmp"] / "export"
    written = export_seed(evaluated["folder"], out)
    slug = GOLD_MODEL.replace("/", "_")
    path = out / "benchage" / "selfaware" / "chronokg" / "predictions" / slug / "selfaware.json"
    assert path in written
    records = json.loads(path.read_text())
    assert list(records)[:3] == ["0", "1", "2"]
    seeds = evaluated["tmp"] / "seed"
    write_seed("benchage", evaluated["questions"], seeds)
    search = {json.loads(line)["question"].strip(): json.loads(line)
              for line in (seeds / "benchage_SelfAware-websearch.jsonl").read_text().splitlines()}
    by_id = {q.id: q for q in evaluated["questions"]}
    joined = 0
    side = [json.loads(x) for x in (out / "benchage" / "benchage_chronokg_ids.jsonl").read_text().splitlines()]
    ours = {r["record"]: r for r in side if r["file"] == path.relative_to(out / "benchage").as_posix()}
    assert result_ids(out, "benchage", path) == [ours[n]["chronokg_ids"][0] for n in range(len(records))]
    for n, record in enumerate(records.values()):
        assert list(record) == ["origin_prompt", "prediction", "gold"]  # OpenCompass's fields only
        q = by_id[ours[n]["chronokg_ids"][0]]
        prompt = record["origin_prompt"][0]["prompt"]
        recovered = re.match(r"Q:\s*(.*?)\s*A:", prompt, re.S | re.I).group(1).strip()  # type: ignore[union-attr]
        assert recovered == q.metadata["question"].strip()
        assert record["prediction"] == q.metadata["gold_at_release"] and record["gold"] == q.metadata["gold_text"]
        if q.metadata["time_sensitive"]:
            joined += 1
            assert search[recovered]["search_answer"] in {q.metadata["up_to_date_answer"], ""}
            assert set(ours[n]["judge"]) == {"llm_vs_gold", "llm_vs_search", "gold_vs_search"}
        else:
            assert recovered not in search and set(ours[n]["judge"]) == {"llm_vs_gold"}
    assert joined == len(search) > 0


# --- without a judge: exact/alias match ----------------------------------------------------------------------


def test_without_a_judge_exact_match_gives_the_same_signatures(evaluated: dict[str, Any]) -> None:
    tmp = evaluated["tmp"] / "exact"
    tmp.mkdir()
    with OpenAIServer() as server:
        server.script = Loopback(evaluated["questions"])
        options = runner.RunOptions(protocol="chronokg", cache=False, concurrency=16)
        _, info, samples = run_models(tmp, evaluated["store"], evaluated["questions"],
                                      ["baseline/oracle", GOLD_MODEL], options, server.url)
        assert info.status == "complete" and info.options["judge"] is None
        assert {b["model"] for b in server.bodies} == {"gold-at-release"}  # no judge calls
    assert all(s.fields["judge"] == "exact" and s.steps == [] for s in samples)
    dds = ba.DDS.compute(samples, "baseline/oracle").value
    assert dds == pytest.approx(value(evaluated, ba.DDS, "baseline/oracle").value)
    assert ba.TA.compute(samples, "baseline/oracle").value == 1.0
    assert ba.BF.compute(samples, GOLD_MODEL).value == 1.0
    assert ba.TAG.compute(samples, GOLD_MODEL).value == pytest.approx(-dds)
    assert ba.A_O.compute(samples, GOLD_MODEL).value == 1.0


def test_exact_match_rules() -> None:
    assert first_answer("The answer is Paris.\nMore text") == "Paris"
    assert first_answer("\n  Answer: Ban Ki-moon\n") == "Ban Ki-moon"
    assert first_answer("   \n") is None
    # "starts with A" means the option letter (A, A., A:), not a word such as "Absolutely".
    assert [yes_no(t) for t in ("A", "A. Yes", "B:", "Absolutely", "yes, it is", "No.", "maybe")] == [
        True, True, False, None, True, False, None]


# --- judge failures: the seed's NaN versus chronokg's retry ----------------------------------------------------


def test_judge_errors_seed_counts_them_wrong_chronokg_retries(evaluated: dict[str, Any], tmp_path: Path) -> None:
    ts = [q for q in evaluated["questions"] if q.metadata["time_sensitive"]][:4]
    for protocol in ("seed", "chronokg"):
        with OpenAIServer() as server, OpenAIServer() as judge:  # the judge on a server of its own
            server.script = judge.script = Loopback(ts)
            judge.fail_next(Fault.status_code(400), times=1)  # the run's first judge call fails (no retry on 400)
            options = runner.RunOptions(protocol=protocol, cache=False, concurrency=1, judge=JUDGE,
                                        judge_base_url=judge.url)
            folder, info, samples = run_models(tmp_path / protocol, evaluated["store"], ts, [GOLD_MODEL],
                                               options, server.url)
            if protocol == "seed":
                assert info.status == "complete"
                first = samples[0]
                assert first.fields["s_gold"] is None and first.steps[0]["llm_output"] == "ERROR"
                assert first.correct is False
                bf = ba.BF.compute(samples, GOLD_MODEL)
                assert bf.details["n_judge_errors"] >= 1 and bf.value == pytest.approx(3 / 4)  # in N, not a match
            else:
                assert info.status == "incomplete" and sum(1 for s in samples if not s.ok) >= 1
                with KgliteStore(evaluated["store"], read_only=True) as store:  # resumed: the judge answers now
                    info, _ = runner.run(folder, info, ts, store)
                samples = [s for s in latest(folder / "samples.jsonl").values()]
                assert info.status == "complete" and all(s.ok for s in samples)
                assert ba.BF.compute(samples, GOLD_MODEL).value == 1.0


# --- hand-computed cases ----------------------------------------------------------------------------------


def rec(i: int, pool: str, g: int | None, s: int | None = None, gs: int | None = None, dataset: str = "TriviaQA",
        question: str | None = None, sample: int = 0) -> SampleRecord:
    return SampleRecord(question_id=question or f"q{i}", model="m", family="benchage", sample=sample,
                        correct=g == 1, score=None if g is None else float(g),
                        fields={"dataset": dataset, "pool": pool, "s_gold": g, "s_search": s, "gs": gs})


def worked_example() -> list[SampleRecord]:
    """The seed notes' §3.1 example: 6 time-sensitive questions (g, s, gs) and 14 others, 7 of them right."""
    table = [(1, 1, 1), (0, 1, 0), (1, 0, 0), (0, 0, 0), (0, 0, 1), (0, 1, 0)]
    ts = [rec(i, "ts", g, s, gs) for i, (g, s, gs) in enumerate(table, start=1)]
    return ts + [rec(100 + i, "non_ts", int(i < 7)) for i in range(14)]


def test_worked_example_of_the_seed_notes() -> None:
    samples = worked_example()
    got = {spec.name: spec.compute(samples, "m") for spec in for_family(["benchage"])}
    assert got["benchage.bf"].value == pytest.approx(2 / 6)
    assert got["benchage.ta"].value == pytest.approx(3 / 6)
    assert got["benchage.tag"].value == pytest.approx(1 / 6)
    assert got["benchage.emr"].value == pytest.approx(2 / 6)
    assert got["benchage.tag"].details["right_then_stale"] == 1  # TAG = EMR - 1/6
    assert got["benchage.dds"].value == pytest.approx(4 / 6)
    assert got["benchage.a_o"].value == pytest.approx(0.45)
    assert got["benchage.a_tag"].value == pytest.approx(0.50)
    assert got["benchage.a_emr"].value == pytest.approx(0.55)
    kappa = got["benchage.kappa"]
    assert kappa.details["k1_gold_search"] == pytest.approx(0.0)
    assert kappa.details["k2_gs_gold"] == pytest.approx(0.25)
    assert kappa.details["k3_gs_search"] == pytest.approx(0.0)
    assert kappa.value == pytest.approx(0.25 / 3)  # 0.0833, what the seed's avg_kappa.csv holds
    assert got["benchage.bf"].groups == {"TriviaQA": {"bf": pytest.approx(2 / 6), "n_ts": 6, "n_non_ts": 14}}
    assert got["benchage.bf"].details == {"n_ts": 6, "n_non_ts": 14, "n_ts_unanswered": 0, "n_judge_errors": 0}


def test_worked_example_through_the_graph(tmp_path: Path) -> None:
    """The same 20 samples as Prediction nodes: every Cypher form gives the hand-computed values."""
    samples = worked_example()
    questions = [Question.model_validate({
        "id": s.question_id, "family": "benchage", "variant": "triviaqa/" + s.fields["pool"], "input": "x",
        "target": "y", "snapshot": "s",
        "answer_key": {"query": "qa-gold", "params": {}, "evidence": [], "evidence_hash": "h"}}) for s in samples]
    info = RunInfo(run_id="run-hand", models=[{"spec": "m"}], questions=[], protocol="seed", samples=1)
    with KgliteStore(tmp_path / "s.kgl") as store:
        write_predictions(store, info, questions, samples)
        for spec in for_family(["benchage"]):
            assert spec.from_graph(store, "run-hand", "m").model_dump() == spec.compute(samples, "m").model_dump()


def test_kappa_follows_sklearn() -> None:
    # Hand-checked 2x2 tables: (p_o - p_e) / (1 - p_e).
    assert ba.kappa({(1, 1): 3, (0, 0): 3}) == 1.0
    assert ba.kappa({(1, 0): 2, (0, 1): 2}) == -1.0
    assert ba.kappa({(1, 1): 2, (1, 0): 1, (0, 1): 1, (0, 0): 2}) == pytest.approx((4 / 6 - 0.5) / 0.5)
    assert ba.kappa({(1, 1): 5}) is None  # both constant and equal: p_e = 1, sklearn's NaN
    assert ba.kappa({(1, 0): 5}) == 0.0  # constant but different: p_o = p_e = 0
    assert ba.kappa({}) is None
    assert ba.nanmean([None, 0.5, 0.0]) == 0.25 and ba.nanmean([None, None]) is None


def test_pools_errors_datasets_and_distinct_questions() -> None:
    samples = [
        rec(1, "ts", 1, 0, 0, dataset="SelfAware"), rec(2, "ts", 0, 1, 0, dataset="SelfAware"),
        rec(3, "ts", None, 1, 1, dataset="SelfAware"),  # a judge error (seed): in N, not a match, no kappa
        rec(4, "ts_unanswered", 0, dataset="SelfAware"),  # no y*: left out of every aging metric
        rec(5, "ts", 1, 1, 1, dataset="BoolQ"),
        rec(5, "ts", 0, 0, 1, dataset="BoolQ", question="q5", sample=1),  # a second sample of q5
        rec(6, "non_ts", 1, dataset="BoolQ"),
    ]
    bf = ba.BF.compute(samples, "m")
    assert bf.groups["SelfAware"]["bf"] == pytest.approx(1 / 3) and bf.groups["BoolQ"]["bf"] == 0.5
    assert bf.value == pytest.approx(2 / 5)
    assert (bf.details["n_ts"], bf.details["n_ts_unanswered"], bf.details["n_judge_errors"]) == (5, 1, 1)
    ta = ba.TA.compute(samples, "m")
    assert ta.groups["SelfAware"]["ta"] == pytest.approx(2 / 3) and ta.value == pytest.approx(3 / 5)
    assert ba.EMR.compute(samples, "m").value == pytest.approx(1 / 5)  # q2 only: q3's gold judgement failed
    a_o = ba.A_O.compute(samples, "m")
    assert a_o.value == pytest.approx(3 / 6) and a_o.groups["BoolQ"]["a_o"] == pytest.approx(2 / 3)
    dds = ba.DDS.compute(samples, "m")  # distinct questions: q1, q2 outdated; q3, q5 not
    assert dds.value == pytest.approx(2 / 4) and dds.groups["BoolQ"] == {"dds": 0.0, "questions": 1,
                                                                         "outdated": 0, "judge_errors": 0}
    kappa = ba.KAPPA.compute(samples, "m")
    assert kappa.details["n_kappa"] == 4
    # Over (g, s, gs) = (1,0,0), (0,1,0), (1,1,1), (0,0,1): k1 = k(g, s) = 0; k2 = k(gs, g) = 0; k3 = 0.
    assert kappa.value == pytest.approx(0.0)
    empty = ba.BF.compute([rec(1, "non_ts", 1)], "m")
    assert empty.value is None and ba.TAG.compute([rec(1, "non_ts", 1)], "m").value is None


def test_cli_run_with_a_judge_and_metrics(tmp_path: Path, evaluated: dict[str, Any]) -> None:
    questions = [q for q in evaluated["questions"] if q.metadata["dataset"] in {"TriviaQA", "BoolQ"}][:12]
    qfile = tmp_path / "q.jsonl"
    write_jsonl(qfile, questions)
    cli = CliRunner()
    with OpenAIServer() as server:
        server.script = Loopback(questions)
        result = cli.invoke(app, ["--store", f"kglite://{evaluated['store']}", "eval", "run", str(qfile), "--model",
                                  GOLD_MODEL, "--base-url", server.url, "--judge", JUDGE, "--log-dir",
                                  str(tmp_path / "runs"), "--no-write", "--no-cache"])
        assert result.exit_code == 0, result.output
        assert any(b["model"] == "judge" for b in server.bodies)
    (folder,) = list((tmp_path / "runs").iterdir())
    assert json.loads((folder / "run.json").read_text())["options"]["judge"] == JUDGE
    shown = cli.invoke(app, ["eval", "metrics", str(folder), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    values = {v["metric"]: v["value"] for v in json.loads(shown.output)}
    assert values["benchage.bf"] == 1.0 and "benchage.kappa" in values
    refused = cli.invoke(app, ["--store", f"kglite://{evaluated['store']}", "eval", "run", str(qfile), "--model",
                               "baseline/oracle", "--judge", "baseline/oracle", "--log-dir", str(tmp_path / "r2"),
                               "--no-write"])
    assert refused.exit_code != 0 and "a judge must be a model" in refused.output


def test_profile_settings() -> None:
    q = Question.model_validate({
        "id": "q", "family": "benchage", "variant": "triviaqa/ts", "input": "Question: Who?\nAnswer: ",
        "target": "X", "snapshot": "s", "metadata": {"dataset": "TriviaQA", "question": "Who?"},
        "answer_key": {"query": "qa-gold", "params": {}, "evidence": [], "evidence_hash": "h"}})
    config = PROFILE.config(q, "seed", 0)
    assert (config.temperature, config.max_tokens) == (0.0, 50)  # OpenCompass: greedy, max_out_len 50
    assert judge_question(q) == "Who?"
