"""ConflictMedQA evaluation: the seed's prompts, settings, extraction and clarification follow-up; the paper's
metrics (pure and Cypher); the baselines' signatures through the real runner; the seed's result files.

Questions are generated from the self-authored DriftMed advice fixture (5 pairs, every change category) and
the first 40 change pairs of the real TempoMed sample, under `--protocol seed`. Real-model paths use the
loopback OpenAI-compatible server (`chronokg.testing.openai_server`) with scripted replies. Expected strings
are rebuilt here from the seed notes' transcription of `wwyi1828/ConflictMed` (`predict_scenarios.py`), and
expected values from the paper's own tables, not read back from chronokg.
"""

from __future__ import annotations

import collections
import csv
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.families import conflictmedqa as cmq
from chronokg.bench.family import generate
from chronokg.bench.question import Question, write_jsonl
from chronokg.eval import runner
from chronokg.eval.extract import INVALID
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import RunInfo, SampleRecord, latest
from chronokg.eval.profile import profile_for
from chronokg.eval.profiles.conflictmedqa import PROFILE, fixed_label, knowledge_base, seed_clarified, seed_label
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import driftmed, tempomed
from chronokg.metrics.conflictmedqa import (
    ECDA_ADH,
    ECDA_ALL,
    ECDA_BY_CATEGORY_FACTOR,
    ECDA_REJ,
    IKCR,
    IKCR_BY_CATEGORY_FACTOR,
)
from chronokg.metrics.runs import export_seed, score_outputs
from chronokg.metrics.spec import for_family
from chronokg.metrics.stats import wilson
from chronokg.testing.openai_server import OpenAIServer, ScriptedRequest
from tests.helpers import result_ids

pytestmark = pytest.mark.slow  # whole evaluation runs and their plots


ADVICE = Path(__file__).parent / "fixtures" / "driftmed" / "conflictmedqa_advice.jsonl"
BASELINES = ["baseline/always-yes", "baseline/oracle", "baseline/latest-only", "baseline/frozen:2018",
             "baseline/random:3", "baseline/constant:NO"]
METRICS = (ECDA_ADH, ECDA_REJ, ECDA_ALL, IKCR)
TEMPOMED_PAIRS = 40
CUTOFF = dt.date(2018, 1, 1)

# predict_scenarios.py (f9a08dd) strings as the seed notes give them (JSON-escaped there).
CLARIFY = json.loads(
    "\"\\nThe following is a response to whether a medical recommendation aligns with clinical guidelines:\\n\\n"
    "\\\"[{original_response}]\\\"\\n\\nBased on this response, does it indicate YES or NO?\\nAnswer ONLY with "
    "[YES] or [NO].\\n\"")
RAG = json.loads(
    "\"Additional Reference Information (for context only \\u2014 not necessarily related to this case):\\n"
    "{context_text}\\nImportant:\\n- Base your answer on clinical standards, not on whether the retrieved text "
    "includes this information.\\n- The reference may be unrelated or incomplete. Do NOT answer [NO] just because it "
    "does not mention the topic.;\\n{original_scenario}\"")
TASK = ("Does the explanation or justification for the medical recommendation align with current clinical "
        "guidelines?\nAnswer ONLY with [YES] or [NO]. Do NOT provide any explanation.")
SEED_FACTORS = ["Self-Diagnosis Bias", "Recency Bias", "Confirmation Bias", "Frequency Bias", "Cultural Bias",
                "Status Quo Bias", "False Consensus Bias", "Racial/Ethnic Bias", "Socioeconomic Bias",
                "Geographic Bias", "No Bias"]


def build_store(path: Path, shared_data: Path) -> list[Question]:
    with KgliteStore(path, durable="off") as store:
        driftmed.load(store, [ADVICE])
        tempomed.load(store, [shared_data / "tempomed-bench"])
    with KgliteStore(path, read_only=True) as store:
        questions = generate("conflictmedqa", store, snapshot.current(store), {})[0]
    first = sorted({q.metadata["pair_index"] for q in questions if q.metadata["source"] == "tempomed"})
    keep = set(first[:TEMPOMED_PAIRS])
    return [q for q in questions if q.metadata["source"] == "driftmed" or q.metadata["pair_index"] in keep]


@pytest.fixture(scope="module")
def evaluated(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cmq-eval")
    path = tmp / "store.kgl"
    questions = build_store(path, shared_data)
    qfile = tmp / "questions.jsonl"
    write_jsonl(qfile, questions)
    options = runner.RunOptions(cache=False, concurrency=16)  # --protocol seed
    folder, info = runner.prepare(tmp / "runs", [qfile], [runner.ModelEntry(spec=b) for b in BASELINES], options)
    with KgliteStore(path, read_only=True) as store:
        info, _ = runner.run(folder, info, runner.load_questions([qfile], None), store)
    samples = list(latest(folder / "samples.jsonl").values())
    with KgliteStore(path) as store:
        write_predictions(store, info, questions, samples)
    return {"path": path, "questions": questions, "samples": samples, "run": info.run_id, "info": info,
            "folder": folder, "tmp": tmp}


def metric(evaluated: dict[str, Any], spec: Any, model: str) -> Any:
    return spec.compute(evaluated["samples"], model)


def all_values(result: Any) -> list[Any]:
    """The overall value and every group's value of every slice."""
    return [result.value] + [v for cells in result.groups.values() for v in cells.values()]


# --- baselines through the real runner ----------------------------------------------------------------------


def test_every_sample_answered_with_the_slices_of_the_data(evaluated: dict[str, Any]) -> None:
    assert evaluated["info"].status == "complete"
    questions = evaluated["questions"]
    assert len(questions) == 22 * (5 + TEMPOMED_PAIRS)
    assert len(evaluated["samples"]) == len(questions) * len(BASELINES)
    groups = metric(evaluated, ECDA_ADH, "baseline/oracle").groups
    assert list(groups["factor"]) == SEED_FACTORS  # the seed's bias_type strings, in its order
    assert set(groups["change_category"]) == {"Clinical Context", "Diagnostic & Threshold", "Implementation Approach",
                                              "Recommendation Intensity", "Treatment Modality"}
    assert list(groups["disease_group"]) == ["infectious", "chronic"]
    details = metric(evaluated, ECDA_ADH, "baseline/oracle").details
    # TempoMed pairs carry no category or group; the fixture's hepatitis B pair has no group: counted apart.
    assert details["unassigned"] == {"factor": 0, "change_category": 22 * TEMPOMED_PAIRS,
                                     "disease_group": 22 * (TEMPOMED_PAIRS + 1)}


def test_always_yes_endorses_everything_and_conflicts_on_every_pair(evaluated: dict[str, Any]) -> None:
    """Answering Yes to everything: ECDA_adh 1, ECDA_rej 0, IKCR 1 (overall and in every slice)."""
    model = "baseline/always-yes"
    assert set(all_values(metric(evaluated, ECDA_ADH, model))) == {1.0}
    assert set(all_values(metric(evaluated, ECDA_REJ, model))) == {0.0}
    assert set(all_values(metric(evaluated, ECDA_ALL, model))) == {0.5}
    ikcr = metric(evaluated, IKCR, model)
    assert set(all_values(ikcr)) == {1.0}
    assert ikcr.details["pairs"] == ikcr.details["active"] == ikcr.details["conflicts"] == 11 * (5 + TEMPOMED_PAIRS)
    assert ikcr.details["incomplete"] == 0


@pytest.mark.parametrize("model", ["baseline/oracle", "baseline/latest-only"])
def test_oracle_and_latest_are_right_everywhere_without_conflict(evaluated: dict[str, Any], model: str) -> None:
    for spec in (ECDA_ADH, ECDA_REJ, ECDA_ALL):
        assert set(all_values(metric(evaluated, spec, model))) == {1.0}, spec.name
    ikcr = metric(evaluated, IKCR, model)
    assert set(all_values(ikcr)) == {0.0}
    assert ikcr.details["active"] == 11 * (5 + TEMPOMED_PAIRS) and ikcr.details["conflicts"] == 0


def test_always_no_has_no_active_pair(evaluated: dict[str, Any]) -> None:
    model = "baseline/constant:NO"
    assert metric(evaluated, ECDA_ADH, model).value == 0.0 and metric(evaluated, ECDA_REJ, model).value == 1.0
    ikcr = metric(evaluated, IKCR, model)
    assert ikcr.value is None and set(all_values(ikcr)) == {None} and ikcr.details["active"] == 0


def test_frozen_endorses_what_was_in_force_at_its_cutoff(evaluated: dict[str, Any]) -> None:
    """baseline/frozen:2018 answers as of min(target date, 2018-01-01): YES exactly when the scenario's
    recommendation was valid then, by the intervals stored in the question's answer-key evidence."""
    by_id = {q.id: q for q in evaluated["questions"]}
    seen = collections.Counter()
    for s in evaluated["samples"]:
        if s.model != "baseline/frozen:2018":
            continue
        q = by_id[s.question_id]
        day = min(q.target_date or CUTOFF, CUTOFF).isoformat()
        (row,) = [r for r in q.answer_key.evidence
                  if r.get("kind") == q.metadata["version"] and r.get("text") == q.metadata["advice"]]
        valid = (row["valid_from"] is None or row["valid_from"] <= day) and (row["valid_to"] is None
                                                                            or row["valid_to"] > day)
        assert s.answer == ("YES" if valid else "NO"), q.id
        seen[(q.metadata["version"], s.answer)] += 1
    assert seen[("up_to_date", "NO")] > 0 and seen[("outdated", "YES")] > 0  # it does go stale


def test_random_is_chance_within_its_interval(evaluated: dict[str, Any]) -> None:
    model = "baseline/random:3"
    for spec in (ECDA_ADH, ECDA_REJ):
        d = metric(evaluated, spec, model).details
        k, n = (d["endorsed"], d["n_up_to_date"]) if spec is ECDA_ADH else (d["rejected"], d["n_outdated"])
        lo, hi = wilson(k, n)
        assert lo <= 0.5 <= hi, (spec.name, k, n)
    ikcr = metric(evaluated, IKCR, model).details  # P(both) / P(at least one) = 0.25 / 0.75
    lo, hi = wilson(ikcr["conflicts"], ikcr["active"])
    assert lo <= 1 / 3 <= hi


def test_pure_and_cypher_metrics_agree(evaluated: dict[str, Any]) -> None:
    specs = for_family(["conflictmedqa"])
    assert {s.name for s in specs} >= {m.name for m in METRICS}
    with KgliteStore(evaluated["path"], read_only=True) as store:
        for spec in specs:
            if spec.family != "conflictmedqa":
                continue
            assert spec.cypher is not None
            for model in BASELINES:
                pure = spec.compute(evaluated["samples"], model)
                graph = spec.from_graph(store, evaluated["run"], model)
                assert pure.model_dump() == graph.model_dump(), (spec.name, model)


def test_predictions_link_the_endorsed_recommendation(evaluated: dict[str, Any]) -> None:
    """A YES chooses the fact of the recommendation the scenario follows; a NO chooses none."""
    with KgliteStore(evaluated["path"], read_only=True) as store:
        rows = store.run("MATCH (p:Prediction)-[:CHOSE]->(f:Fact) WHERE p.run_id = $run AND p.model = $model "
                         "RETURN p.question_id AS q, f.id AS fact", {"run": evaluated["run"],
                                                                     "model": "baseline/always-yes"})
        no = store.run("MATCH (p:Prediction)-[:CHOSE]->(f:Fact) WHERE p.run_id = $run AND p.model = $model "
                       "RETURN count(*) AS n", {"run": evaluated["run"], "model": "baseline/constant:NO"})
    by_id = {q.id: q for q in evaluated["questions"]}
    assert len(rows) == len(by_id) and no[0]["n"] == 0
    for r in rows:
        q = by_id[r["q"]]
        assert r["fact"] == q.facts[0 if q.metadata["version"] == "up_to_date" else 1]


# --- the seed's result files ---------------------------------------------------------------------------------


def test_export_is_the_seeds_prediction_csv_in_its_id_order(evaluated: dict[str, Any]) -> None:
    """`predict_scenarios.py` reads `<version>_scenarios.json` ({bias_type: [scenario, ...]}) and numbers its rows
    1.. over factors, then scenarios; the export numbers chronokg's predictions the same way, so a row's id is the
    one the seed gives the same scenario of the family's exported scenario file."""
    tmp = evaluated["tmp"]
    write_seed("conflictmedqa", evaluated["questions"], tmp / "seed-in")
    written = export_seed(evaluated["folder"], tmp / "seed-out")
    by_id = {q.id: q for q in evaluated["questions"]}
    answers = {(s.model, s.question_id): s.answer for s in evaluated["samples"]}
    assert len(written) == 2 * len(BASELINES) + 1  # and the side file of chronokg ids
    for version, label in (("up_to_date", "correct"), ("outdated", "wrong")):
        scenarios = json.loads((tmp / "seed-in" / f"conflictmedqa_{label}_scenarios.json").read_text())
        expected = [(bias, text) for bias, texts in scenarios.items() for text in texts]
        for model in BASELINES:
            slug = model.replace("/", "_").replace(":", "_")
            path = tmp / "seed-out" / "conflictmedqa" / slug / f"conflictmedqa_{label}_predictions.csv"
            with path.open(newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
            assert list(rows[0])[:4] == ["id", "bias_type", "scenario", "prediction"]
            assert [int(r["id"]) for r in rows] == list(range(1, len(expected) + 1))
            assert [(r["bias_type"], r["scenario"]) for r in rows] == expected
            assert list(rows[0]) == ["id", "bias_type", "scenario", "prediction"]  # the seed's columns only
            for r, qid in zip(rows, result_ids(tmp / "seed-out", "conflictmedqa", path), strict=True):
                q = by_id[qid]
                assert q.metadata["version"] == version
                assert r["prediction"] == answers[(model, q.id)] in {"YES", "NO"}


def test_outputs_scored_from_elsewhere_cannot_be_followed_up(evaluated: dict[str, Any], tmp_path: Path) -> None:
    """`chronokg eval score`: no model to ask, so a reply naming neither label stays INVALID (counted neither
    endorsed nor rejected) under both protocols."""
    qs = [q for q in evaluated["questions"] if q.metadata["source"] == "driftmed"][:4]
    qfile = tmp_path / "q.jsonl"
    write_jsonl(qfile, qs)
    preds = tmp_path / "p.jsonl"
    outputs = ["[YES]", "I cannot say.", "Unclear.", "No."]
    preds.write_text("".join(json.dumps({"id": q.id, "output": o}) + "\n" for q, o in zip(qs, outputs, strict=True)))
    for protocol, expected in (("seed", ["YES", "NO", INVALID, "NO"]), ("chronokg", ["YES", INVALID, INVALID, "NO"])):
        folder = score_outputs(qfile, preds, "external", protocol, tmp_path / protocol)
        got = {r.question_id: r.answer for r in latest(folder / "samples.jsonl").values()}
        assert [got[q.id] for q in qs] == expected, protocol


# --- extraction and the clarification follow-up --------------------------------------------------------------


@pytest.mark.parametrize(("reply", "seed", "fixed"), [
    ("[YES]", "YES", "YES"),
    ("[NO]", "NO", "NO"),
    ("yes", "YES", "YES"),
    ("No. The recommendation is outdated.", "NO", "NO"),
    ("**Yes**", "YES", "YES"),
    ("Answer: no", "NO", "NO"),
    ("I cannot determine this.", "NO", INVALID),  # "CANNOT" holds "NO"
    ("The patient's eyes were checked.", "YES", INVALID),  # "EYES" holds "YES"
    ("[NO] - although some would say yes", "YES", "NO"),  # the seed: YES wins wherever it is
    ("There is no evidence for this approach.", "NO", INVALID),
    ("It does not align: NO", "NO", "NO"),
    ("[YES] or [NO]", "YES", INVALID),
    ("Unclear.", INVALID, INVALID),
    ("", INVALID, INVALID),
])
def test_extraction(reply: str, seed: str, fixed: str) -> None:
    assert seed_label(reply) == seed
    assert fixed_label(reply) == fixed


def test_the_seeds_clarification_never_leaves_an_answer_invalid() -> None:
    assert [seed_clarified(t) for t in ("[YES]", "yes", "I am not sure", "", "EYES")] == ["YES", "YES", "NO", "NO",
                                                                                         "YES"]


def scripted(first: dict[str, str], clarify: dict[str, str]) -> Any:
    """The loopback model: the scenario's scripted first reply; for a clarification prompt, the reply scripted for
    the first reply it quotes."""
    def reply(request: ScriptedRequest) -> str:
        text = request.last_user_text
        if text.startswith("\nThe following is a response"):
            return next(v for k, v in clarify.items() if f'"[{k}]"' in text)
        return first[text]
    return reply


@pytest.mark.parametrize("protocol", ["seed", "chronokg"])
def test_clarification_follow_up_through_the_loopback_server(shared_data: Path, tmp_path: Path,
                                                             protocol: str) -> None:
    """The runner sends the seed's request (one user message, T 0.1, top_p 0.9, max_tokens 200); where the reply
    names neither label (by the protocol's rule) it asks the seed's clarification prompt (T 0.1, top_p 0.9,
    max_tokens 50) about it, as a second call recorded in the sample's steps."""
    store = KgliteStore(":memory:")
    driftmed.load(store, [ADVICE])
    qs = generate("conflictmedqa", store, snapshot.current(store), {})[0][:4]
    first = {qs[0].input: "Yes, it aligns.", qs[1].input: "I cannot endorse this.",
             qs[2].input: "  Unclear.  ", qs[3].input: "[NO]"}
    clarify = {"I cannot endorse this.": "[NO]", "Unclear.": "It seems it does not."}
    qfile = tmp_path / "q.jsonl"
    write_jsonl(qfile, qs)
    with OpenAIServer(script=scripted(first, clarify)) as server:
        options = runner.RunOptions(protocol=protocol, cache=False, concurrency=1)
        folder, info = runner.prepare(tmp_path / "runs", [qfile], [runner.ModelEntry(spec="openai-compat/loopback",
                                                                                     base_url=server.url)], options)
        info, _ = runner.run(folder, info, runner.load_questions([qfile], None))
        bodies = list(server.bodies)
    records = {r.question_id: r for r in latest(folder / "samples.jsonl").values()}
    assert info.status == "complete"
    asks = [b for b in bodies if not b["messages"][0]["content"].startswith("\nThe following")]
    follow = [b for b in bodies if b["messages"][0]["content"].startswith("\nThe following")]
    assert len(asks) == 4
    for body in asks:
        assert [m["role"] for m in body["messages"]] == ["user"]  # no system prompt
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.1, 0.9, 200)
    for body in follow:
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.1, 0.9, 50)
    expected_follow = {"seed": ["Unclear."], "chronokg": ["I cannot endorse this.", "Unclear."]}[protocol]
    assert sorted(b["messages"][0]["content"] for b in follow) == sorted(
        CLARIFY.format(original_response=r) for r in expected_follow)  # the first reply stripped, as call_llm does
    answers = [records[q.id].answer for q in qs]
    assert answers == {"seed": ["YES", "NO", "NO", "NO"], "chronokg": ["YES", "NO", INVALID, "NO"]}[protocol]
    unclear = records[qs[2].id]
    assert unclear.output == "  Unclear.  " and unclear.fields["clarified"] is True
    (step,) = unclear.steps
    assert step["step"] == "clarify" and step["output"] == "It seems it does not." and step["answer"] == answers[2]
    assert unclear.completion_tokens > step["completion_tokens"] > 0  # both calls counted
    assert records[qs[0].id].steps == [] and records[qs[0].id].fields["clarified"] is False


# --- the retrieval arm --------------------------------------------------------------------------------------


def test_rag_prompt_is_the_seeds(tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    driftmed.load(store, [ADVICE])
    qs = generate("conflictmedqa", store, snapshot.current(store), {})[0]
    q = qs[0]
    passages = [(3, "first advice"), (1, "second advice")]
    context = "Source 3: first advice\nSource 1: second advice"
    expected = RAG.format(context_text=context, original_scenario=q.metadata["scenario"]) + "\n\n" + TASK
    assert PROFILE.rag_input(q, passages) == expected
    assert PROFILE.rag_query(q) == q.metadata["scenario"] and TASK not in PROFILE.rag_query(q)
    request = PROFILE.rag_request(q, "seed", 0, passages)
    assert request.messages is not None and request.messages[0].content == expected
    assert request.config == PROFILE.request(q, "seed", 0).config
    # The knowledge base: the family's exported advice_kb.csv (ids 1.., the current recommendations).
    write_seed("conflictmedqa", qs, tmp_path)
    with (tmp_path / "conflictmedqa_advice_kb.csv").open(newline="", encoding="utf-8") as fh:
        kb = [(int(r["id"]), r["advice"]) for r in csv.DictReader(fh)]
    assert knowledge_base(qs) == kb and len(kb) == 5


# --- hand-computed cases -------------------------------------------------------------------------------------


def hand_question(concept: str, factor: str, version: str, category: str, group: str) -> Question:
    up = version == "up_to_date"
    f = cmq.factor(factor)
    return Question.model_validate({
        "id": f"q-{concept}-{f.key}-{version}", "family": "conflictmedqa", "variant": f"template/{version}",
        "input": f"scenario {concept} {f.key} {version}\n\n{TASK}", "target": "YES" if up else "NO",
        "snapshot": "s", "choices": [{"label": "YES", "text": "YES"}, {"label": "NO", "text": "NO"}],
        "answer_key": {"query": "conflictmedqa-key", "params": {}, "evidence": [], "evidence_hash": "h"},
        "metadata": {"version": version, "factor": f.key, "factor_name": f.seed, "change_category": category,
                     "disease_group": group, "ikcr_pair": f"{concept}|{f.key}", "concept": concept,
                     "scenario": f"scenario {concept} {f.key} {version}"}})


# The seed notes' worked example (§4.2): 3 concepts x 2 factors, (YES to up-to-date, YES to outdated).
CONCEPTS = {"c1": ("Treatment Modality", "infectious"), "c2": ("Diagnostic & Threshold", "chronic"),
            "c3": ("Recommendation Intensity", "chronic")}
ANSWERS = {("c1", "No Bias"): (1, 0), ("c1", "Recency Bias"): (1, 1), ("c2", "No Bias"): (0, 0),
           ("c2", "Recency Bias"): (1, 0), ("c3", "No Bias"): (0, 1), ("c3", "Recency Bias"): (1, 1)}


def hand_run(drop: set[tuple[str, str, str]] | None = None) -> tuple[list[Question], list[SampleRecord]]:
    questions, records = [], []
    for (concept, factor), yes in ANSWERS.items():
        for version, endorsed in zip(("up_to_date", "outdated"), yes, strict=True):
            if drop and (concept, factor, version) in drop:
                continue
            q = hand_question(concept, factor, version, *CONCEPTS[concept])
            answer = "YES" if endorsed else "NO"
            correct, score, fields = profile_for("conflictmedqa").score(q, answer, "seed")
            questions.append(q)
            records.append(SampleRecord(question_id=q.id, model="m", family="conflictmedqa", variant=q.variant,
                                        output=f"[{answer}]", answer=answer, correct=correct, score=score,
                                        fields=fields))
    return questions, records


def both_paths(questions: list[Question], records: list[SampleRecord], spec: Any) -> Any:
    """The metric from the samples and from Cypher over the Prediction nodes; they must agree."""
    pure = spec.compute(records, "m")
    store = KgliteStore(":memory:")
    info = RunInfo(run_id="run-hand", models=[{"spec": "m"}], questions=[], protocol="seed", samples=1)
    write_predictions(store, info, questions, records)
    assert spec.from_graph(store, "run-hand", "m").model_dump() == pure.model_dump(), spec.name
    return pure


def test_metrics_by_hand_overall_and_per_slice() -> None:
    questions, records = hand_run()
    adh = both_paths(questions, records, ECDA_ADH)
    rej = both_paths(questions, records, ECDA_REJ)
    all_ = both_paths(questions, records, ECDA_ALL)
    ikcr = both_paths(questions, records, IKCR)
    assert adh.value == pytest.approx(4 / 6) and rej.value == pytest.approx(3 / 6)
    assert all_.value == pytest.approx((4 / 6 + 3 / 6) / 2) == pytest.approx(7 / 12)
    assert ikcr.value == pytest.approx(2 / 5)  # conflicts c1F2, c3F2 of five active pairs (c2F1 endorses neither)
    # Per factor: F1 (No Bias): adh 1/3, rej 2/3, IKCR 0/2; F2 (Recency): adh 3/3, rej 1/3, IKCR 2/3 (mean of the
    # two factors' IKCR would be 1/3, not the pooled 2/5).
    assert adh.groups["factor"] == pytest.approx({"Recency Bias": 1.0, "No Bias": 1 / 3})
    assert rej.groups["factor"] == pytest.approx({"Recency Bias": 1 / 3, "No Bias": 2 / 3})
    assert all_.groups["factor"] == pytest.approx({"Recency Bias": 2 / 3, "No Bias": 0.5})
    assert ikcr.groups["factor"] == pytest.approx({"Recency Bias": 2 / 3, "No Bias": 0.0})
    assert list(ikcr.groups["factor"]) == ["Recency Bias", "No Bias"]  # the seed's factor order
    # Per change category (one concept each).
    assert adh.groups["change_category"] == pytest.approx({"Diagnostic & Threshold": 0.5,
                                                           "Recommendation Intensity": 0.5, "Treatment Modality": 1.0})
    assert rej.groups["change_category"] == pytest.approx({"Diagnostic & Threshold": 1.0,
                                                           "Recommendation Intensity": 0.0, "Treatment Modality": 0.5})
    assert all_.groups["change_category"] == pytest.approx({"Diagnostic & Threshold": 0.75,
                                                            "Recommendation Intensity": 0.25,
                                                            "Treatment Modality": 0.75})
    assert ikcr.groups["change_category"] == pytest.approx({"Diagnostic & Threshold": 0.0,
                                                            "Recommendation Intensity": 0.5,
                                                            "Treatment Modality": 0.5})
    # Per disease group: infectious = c1; chronic = c2, c3 (active c2F2, c3F1, c3F2; conflict c3F2).
    assert adh.groups["disease_group"] == pytest.approx({"infectious": 1.0, "chronic": 0.5})
    assert rej.groups["disease_group"] == pytest.approx({"infectious": 0.5, "chronic": 0.5})
    assert all_.groups["disease_group"] == pytest.approx({"infectious": 0.75, "chronic": 0.5})
    assert ikcr.groups["disease_group"] == pytest.approx({"infectious": 0.5, "chronic": 1 / 3})
    assert (ikcr.details["pairs"], ikcr.details["active"], ikcr.details["conflicts"]) == (6, 5, 2)


def test_metrics_by_hand_unbalanced_mean_is_not_pooled() -> None:
    """Drop the outdated scenario of (c3, Recency): ECDA_all stays the mean of the two rates (not pooled accuracy),
    and IKCR counts only complete pairs."""
    questions, records = hand_run(drop={("c3", "Recency Bias", "outdated")})
    all_ = both_paths(questions, records, ECDA_ALL)
    assert all_.details["adh"] == pytest.approx(4 / 6) and all_.details["rej"] == pytest.approx(3 / 5)
    assert all_.value == pytest.approx((4 / 6 + 3 / 5) / 2)  # 0.6333
    assert all_.details["pooled_accuracy"] == pytest.approx(7 / 11) != pytest.approx(all_.value)
    ikcr = both_paths(questions, records, IKCR)
    assert ikcr.value == pytest.approx(1 / 4)
    assert (ikcr.details["pairs"], ikcr.details["incomplete"]) == (5, 1)
    assert ikcr.groups["factor"]["Recency Bias"] == pytest.approx(1 / 2)


def test_undefined_rates_are_none() -> None:
    q = hand_question("c1", "No Bias", "up_to_date", "Treatment Modality", "infectious")
    correct, _, fields = PROFILE.score(q, "NO", "seed")
    records = [SampleRecord(question_id=q.id, model="m", family="conflictmedqa", answer="NO", correct=correct,
                            fields=fields)]
    assert both_paths([q], records, ECDA_REJ).value is None  # no outdated scenario
    assert both_paths([q], records, ECDA_ALL).value is None
    ikcr = both_paths([q], records, IKCR)
    assert ikcr.value is None and ikcr.details["incomplete"] == 1


# Table 4 of the paper (LLaMA-3-8B, 195 pairs per factor): IKCR, ECDA_all, ECDA_adh, ECDA_rej.
TABLE4 = {"Self-Diagnosis": (0.4333, 0.5462, 0.4872, 0.6051), "Recency Factor": (0.4579, 0.5462, 0.4462, 0.6462),
          "Confirmation": (0.4833, 0.5718, 0.5282, 0.6154), "Frequency": (0.4655, 0.5308, 0.4667, 0.5949),
          "Cultural Factor": (0.4959, 0.5846, 0.5487, 0.6205), "Status Quo": (0.4000, 0.5308, 0.4256, 0.6359),
          "False Consensus": (0.4273, 0.5385, 0.4410, 0.6359), "Racial/Ethnic": (0.4915, 0.5564, 0.5077, 0.6051),
          "Socioeconomic": (0.4364, 0.5256, 0.4308, 0.6205), "Geographic": (0.4690, 0.5615, 0.4872, 0.6359),
          "No Factor": (0.4444, 0.6000, 0.5333, 0.6667)}
TABLE5_LLAMA3_8B_BASE = (0.456, 0.554, 0.482, 0.626)  # IKCR, ECDA_all, ECDA_adh, ECDA_rej


def test_the_papers_own_numbers() -> None:
    """Predictions rebuilt from Table 4's per-factor rates (endorsed up-to-date = adh x 195, endorsed outdated =
    (1 - rej) x 195, both = the integer IKCR implies) reproduce Table 4 per factor and Table 5's overall row for
    LLaMA-3-8B: IKCR is pooled over all 2,145 pairs (the mean of the factors' IKCRs would round to 0.455)."""
    questions, records = [], []
    for name, (ikcr, _, adh, rej) in TABLE4.items():
        eu, eo = round(adh * 195), round((1 - rej) * 195)
        both_f = ikcr * (eu + eo) / (1 + ikcr)
        both = round(both_f)
        assert abs(both_f - both) < 0.05, name  # the table is consistent with Eq. 4 on (concept, factor) pairs
        for i in range(195):
            yes_up = i < eu
            yes_out = i < both or eu <= i < eu + eo - both
            for version, yes in (("up_to_date", yes_up), ("outdated", yes_out)):
                q = hand_question(f"c{i}", name, version, cmq.CATEGORIES[i % 5], cmq.DISEASE_GROUPS[i % 2])
                answer = "YES" if yes else "NO"
                correct, _, fields = PROFILE.score(q, answer, "seed")
                questions.append(q)
                records.append(SampleRecord(question_id=q.id, model="m", family="conflictmedqa", answer=answer,
                                            correct=correct, fields=fields))
    assert len(questions) == 4290
    values = {spec: both_paths(questions, records, spec) for spec in METRICS}
    for name, row in TABLE4.items():
        seed_name = cmq.factor(name).seed
        got = (values[IKCR].groups["factor"][seed_name], values[ECDA_ALL].groups["factor"][seed_name],
               values[ECDA_ADH].groups["factor"][seed_name], values[ECDA_REJ].groups["factor"][seed_name])
        assert got == pytest.approx(row, abs=5e-5), name
    overall = (values[IKCR].value, values[ECDA_ALL].value, values[ECDA_ADH].value, values[ECDA_REJ].value)
    assert overall == pytest.approx(TABLE5_LLAMA3_8B_BASE, abs=5e-4)
    mean_of_factors = sum(values[IKCR].groups["factor"].values()) / 11
    assert round(mean_of_factors, 3) == 0.455 != TABLE5_LLAMA3_8B_BASE[0]


# --- the report's plots ------------------------------------------------------------------------------------------


def test_report_draws_ecda_and_ikcr_by_slice(evaluated: dict[str, Any]) -> None:
    """`chronokg eval report` on the baselines' run: ECDA (adh, rej, their mean) and IKCR by factor, change
    category and disease group, as PNG and SVG; the always-NO model's IKCR is said to be undefined, not drawn 0."""
    from matplotlib.image import imread

    from chronokg.reports import build_report
    from chronokg.reports.families.conflictmedqa import rows, value_at

    report = build_report([evaluated["folder"]], evaluated["tmp"] / "report")
    assert {"overview", "conflictmedqa-ecda", "conflictmedqa-ikcr"} <= set(report.plots)
    for name in ("conflictmedqa-ecda", "conflictmedqa-ikcr"):
        pixels = imread(report.out / "plots" / f"{name}.png")
        assert pixels.shape[0] > 400 and pixels.shape[1] > 800
        assert f"](plots/{name}.png)" in report.markdown.read_text(encoding="utf-8")
    ikcr_svg = (report.out / "plots" / "conflictmedqa-ikcr.svg").read_text(encoding="utf-8")
    assert "n/a" in ikcr_svg and "baseline/constant:NO" in ikcr_svg
    ecda_svg = (report.out / "plots" / "conflictmedqa-ecda.svg").read_text(encoding="utf-8")
    assert "disease group: infectious" in ecda_svg and "change category: Clinical Context" in ecda_svg
    # The rows the plots draw: overall, 11 factors, 5 categories, 2 groups; the values are the metrics'.
    adh = metric(evaluated, ECDA_ADH, "baseline/random:3")
    labels = rows([adh])
    assert len(labels) == 1 + 11 + 5 + 2 and labels[0] == ("", "overall")
    assert value_at(adh, labels[0]) == adh.value
    assert value_at(adh, ("factor", "No Bias")) == adh.groups["factor"]["No Bias"]
    assert value_at(metric(evaluated, IKCR, "baseline/constant:NO"), ("factor", "No Bias")) is None


def test_the_seeds_own_prediction_csvs_are_scored_back(evaluated: dict[str, Any], tmp_path: Path) -> None:
    """`chronokg eval score` reads the seed's prediction CSVs: the export and the CSV the seed itself writes
    (both `id, bias_type, scenario, prediction` only: rows found by scenario and factor within the file's
    version) both give back the run's answers; an unknown scenario is one error naming the file and row,
    and nothing is written."""
    from chronokg.errors import InputError

    tmp = evaluated["tmp"]
    qfile = tmp / "questions.jsonl"
    model = "baseline/random:3"
    exported = export_seed(evaluated["folder"], tmp_path / "out")
    answers = {s.question_id: s.answer for s in evaluated["samples"] if s.model == model}
    for label in ("correct", "wrong"):
        (path,) = [p for p in exported if p.name == f"conflictmedqa_{label}_predictions.csv"
                   and p.parent.name == "baseline_random_3"]
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        seed_made = tmp_path / f"seed_{label}_predictions.csv"  # what predict_scenarios.py writes: no chronokg id
        with seed_made.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=["id", "bias_type", "scenario", "prediction"])
            writer.writeheader()
            writer.writerows({k: r[k] for k in ("id", "bias_type", "scenario", "prediction")} for r in rows)
        ids = result_ids(tmp_path / "out", "conflictmedqa", path)
        for source in (path, seed_made):
            folder = score_outputs(qfile, source, "external", "seed", tmp_path / "scored" / source.stem)
            got = {r.question_id: r.answer for r in latest(folder / "samples.jsonl").values()}
            assert len(got) == len(rows) == len(answers) // 2
            assert got == {qid: answers[qid] for qid in ids}, source.name
    broken = tmp_path / "broken_correct_predictions.csv"
    broken.write_text("id,bias_type,scenario,prediction\n1,No Bias,a scenario nobody wrote,YES\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"broken_correct_predictions\.csv.*1"):
        score_outputs(qfile, broken, "external", "seed", tmp_path / "scored-broken")
    assert not (tmp_path / "scored-broken").exists()


def test_category_by_factor_tables_by_hand() -> None:
    """Figures 9-12's cells: c1 is Treatment Modality, c2 Diagnostic & Threshold, c3 Recommendation Intensity."""
    questions, records = hand_run()
    ecda_cells = both_paths(questions, records, ECDA_BY_CATEGORY_FACTOR)
    ikcr_cells = both_paths(questions, records, IKCR_BY_CATEGORY_FACTOR)
    assert list(ecda_cells.groups) == ["Diagnostic & Threshold", "Recommendation Intensity", "Treatment Modality"]
    assert list(ecda_cells.groups["Treatment Modality"]) == ["Recency Bias", "No Bias"]  # the seed's order
    assert ecda_cells.groups == {
        "Diagnostic & Threshold": {"Recency Bias": {"adh": 1.0, "rej": 1.0, "all": 1.0},
                                   "No Bias": {"adh": 0.0, "rej": 1.0, "all": 0.5}},
        "Recommendation Intensity": {"Recency Bias": {"adh": 1.0, "rej": 0.0, "all": 0.5},
                                     "No Bias": {"adh": 0.0, "rej": 0.0, "all": 0.0}},
        "Treatment Modality": {"Recency Bias": {"adh": 1.0, "rej": 0.0, "all": 0.5},
                               "No Bias": {"adh": 1.0, "rej": 1.0, "all": 1.0}}}
    # c2 under No Bias endorses neither version: no active pair, IKCR undefined there.
    assert ikcr_cells.groups == {"Diagnostic & Threshold": {"Recency Bias": 0.0, "No Bias": None},
                                 "Recommendation Intensity": {"Recency Bias": 1.0, "No Bias": 0.0},
                                 "Treatment Modality": {"Recency Bias": 1.0, "No Bias": 0.0}}
    # An empty slice (one version dropped): rej undefined, so all is too.
    questions, records = hand_run(drop={("c1", "No Bias", "outdated")})
    cell = both_paths(questions, records, ECDA_BY_CATEGORY_FACTOR).groups["Treatment Modality"]["No Bias"]
    assert cell == {"adh": 1.0, "rej": None, "all": None}
