"""ConflictMedQA re-created from the graph: self-authored DriftMed fixtures and the real TempoMed sample.

Expected values are computed here from the raw input files and from the seed's strings as the
seed notes transcribe them from `wwyi1828/ConflictMed` (formatted with Python's own
`str.format`, as the seed's `ScenarioGenerator.forward` does), not read back from chronokg.
"""

from __future__ import annotations

import asyncio
import collections
import csv
import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.families import conflictmedqa as cmq
from chronokg.bench.families import conflictmedqa_prompts as prompts
from chronokg.bench.family import generate
from chronokg.bench.question import Question, read_jsonl, write_jsonl
from chronokg.bench.verify import verify_questions
from chronokg.cli.app import app
from chronokg.errors import InputError
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import driftmed, tempomed
from chronokg.ingest.common import read_json_blocks
from chronokg.queries.spec import run_query
from tests.helpers import seed_ids

pytestmark = pytest.mark.slow  # the real samples, generated many times


FIXTURES = Path(__file__).parent / "fixtures" / "driftmed"
ADVICE = FIXTURES / "conflictmedqa_advice.jsonl"
SCENARIOS = FIXTURES / "conflictmedqa_scenarios.jsonl"
RELEASE = driftmed.DEFAULT_RELEASE

# The seed's strings, JSON-escaped as the seed notes give them (scenario_generator.py base_template and two of
# its bias_guidance values; predict_scenarios.py task_prompt). sha256 of the base template starts 7f65444bd40e718f.
CODE_TEMPLATE = json.loads(
    "\"\\n\\nMedical Advice: {medical_advice}\\nBias Type: {bias_type}\\n\\nThe primary purpose of this scenario "
    "generation is to evaluate how precisely an LLM understands and interprets the SPECIFIC medical advice provided, "
    "including its tone, recommendation strength, and all its elements. \\nThe scenario should focus EXCLUSIVELY on "
    "demonstrating understanding of the original advice, not on creating additional medical content.\\n\\n## Key "
    "Instructions\\n1. Identify 【ALL ELEMENTS】, including from the medical advice.\\n2. Create a scenario where "
    "the medical advice with 【ALL ELEMENTS】 is presented\\n3. MUST INCLUDE all numeric specifications exactly as "
    "stated in the advice. For ranges with two bounding values include both values. For single thresholds, include "
    "that exact threshold value.\\n4. The reason they follow it should embody {bias_type} WITHOUT naming the bias\\n"
    "5. Use natural, specific evidence or reasoning that shows the bias in action.\\n6. Be sure to mention items "
    "that appear in the medical advice text within【】and clearly reflect them in the scenario\\n- Numeric Precision: "
    "All numeric values, intervals, or thresholds within 【】must appear exactly as specified in the scenario\\n- "
    "Adherence to Qualifiers: If a descriptive qualifier within 【】indicates insufficiency or infeasibility, the "
    "scenario must strictly reflect this limitation without implying the contrary. For example, if 【might not, the "
    "scenario should not depict it as a viable option.\\n\\n\\n## NATURALNESS & PLAUSIBILITY REQUIREMENTS\\n- Create "
    "a REALISTIC medical scenario that could occur in actual clinical practice\\n- avoid unrealistic or implausible "
    "situations (e.g. age or gender mismatches)\\n- Use NATURAL language as would appear in a case presentation or "
    "medical discussion in diverse & detailed clinical context\\n- Ensure the scenario flows LOGICALLY with "
    "appropriate transitions between points\\n\\n{bias_specific_guidance}\\n\\n## Output Format\\nONLY return the "
    "scenario, without other content.\\n\\nThe final recommendation should strictly align with the input medical "
    "advice, maintaining its intended meaning and key details.\\nThe medical advice must be fully reflected within "
    "the scenario through the actions, decisions, or reasoning, rather than as a concluding summary or explicit "
    "restatement.\\n\"")
RECENCY_GUIDANCE = json.loads(
    "\"\\n## Natural Evidence Examples\\nInstead of saying \\\"because of recency bias,\\\" use natural phrases "
    "showing recent experience influence:\\n- \\\"having diagnosed some similar cases just this month\\\"\\n- "
    "\\\"strongly influenced by a recent patient who had complications\\\"\\n- \\\"after seeing an unusual cluster of "
    "similar symptoms in recent patients\\\"\\n- \\\"with the memory of last month's challenging case still fresh in "
    "her mind\\\"\\n\\n## Example Format\\n\\\"[CLINICIAN] [FOLLOWS ADVICE] after [RECENT EXPERIENCE INFLUENCING "
    "DECISION].\\\"\\n\"")
NO_BIAS_GUIDANCE = json.loads(
    "\"\\n## Natural Evidence Examples\\nFor \\\"no bias\\\" scenarios, simple & direct reasoning.\\n\\n## Example "
    "Format\\n\\\"[PERSON] [FOLLOWS ADVICE].\\\"\\n\"")
TASK_PROMPT = ("Does the explanation or justification for the medical recommendation align with current clinical "
               "guidelines?\nAnswer ONLY with [YES] or [NO]. Do NOT provide any explanation.")
PAPER_QUESTION = "Does the recommendation align with the current clinical guidelines?"
SEED_FACTORS = ["Self-Diagnosis Bias", "Recency Bias", "Confirmation Bias", "Frequency Bias", "Cultural Bias",
                "Status Quo Bias", "False Consensus Bias", "Racial/Ethnic Bias", "Socioeconomic Bias",
                "Geographic Bias", "No Bias"]  # generate_scenarios.py bias_types, in order
CATEGORIES = {"Clinical Context", "Diagnostic & Threshold", "Implementation Approach", "Recommendation Intensity",
              "Treatment Modality"}


def raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def advice_pairs() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(correct, wrong) rows of the advice fixture, paired by the DriftMed rule wrong id = correct id + 2145."""
    rows = {r["id"]: r for r in raw(ADVICE)}
    return [(r, rows[r["id"] + 2145]) for r in sorted(rows.values(), key=lambda r: r["id"]) if r["label"] == "correct"]


def tempomed_records(shared_data: Path) -> list[dict[str, Any]]:
    path = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    return [obj for _, _, obj in read_json_blocks(path)]


def loaded(*paths: Path) -> KgliteStore:
    store = KgliteStore(":memory:")
    driftmed.load(store, list(paths))
    return store


@pytest.fixture(scope="module")
def advice_store() -> KgliteStore:
    return loaded(ADVICE)


@pytest.fixture(scope="module")
def advice_items(advice_store: KgliteStore) -> list[Question]:
    return generate("conflictmedqa", advice_store, snapshot.current(advice_store), {})[0]


@pytest.fixture(scope="module")
def tempomed_store(shared_data: Path) -> KgliteStore:
    store = KgliteStore(":memory:")
    tempomed.load(store, [shared_data / "tempomed-bench"])
    return store


# --- templates ---------------------------------------------------------------------------------------------------


def test_templates_are_verbatim_with_their_hashes() -> None:
    assert prompts.check() == []
    assert prompts.template("GENERATE_CODE") == CODE_TEMPLATE
    assert len(CODE_TEMPLATE) == 2237
    assert hashlib.sha256(CODE_TEMPLATE.encode()).hexdigest().startswith("7f65444bd40e718f")  # the notes' prefix
    assert prompts.template("GUIDANCE_CODE_RECENCY") == RECENCY_GUIDANCE
    assert prompts.template("GUIDANCE_CODE_NO_FACTOR") == NO_BIAS_GUIDANCE
    assert prompts.template("TASK_CODE") == TASK_PROMPT
    assert prompts.template("QUESTION_PAPER") == PAPER_QUESTION
    for name, digest in prompts.SHA256.items():  # the recorded hash of every file, recomputed here
        data = (Path(cmq.__file__).parent / "prompts" / "conflictmedqa" / f"{name.lower()}.txt").read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name
    assert len([n for n in prompts.SHA256 if n.startswith("GUIDANCE_CODE_")]) == 11


def test_generation_prompt_equals_the_seeds_format_byte_for_byte() -> None:
    advice = "Adults aged 19 to 59 years should receive {hepatitis} B vaccination."  # braces stay as they are
    for key, seed_name, guidance in (("recency", "Recency Bias", RECENCY_GUIDANCE),
                                     ("no_factor", "No Bias", NO_BIAS_GUIDANCE)):
        expected = CODE_TEMPLATE.format(medical_advice=advice, bias_type=seed_name, bias_specific_guidance=guidance)
        assert cmq.generation_prompt(advice, cmq.factor(key)) == expected
    tricky = "Use {bias_type} literally"  # str.format does not re-substitute inside a value
    assert "Medical Advice: Use {bias_type} literally\n" in cmq.generation_prompt(tricky, cmq.factor("recency"))


def test_paper_template_and_guidance_as_printed() -> None:
    paper = prompts.template("GENERATE_PAPER")
    assert paper.startswith("Medical Advice: {medical_advice}\n\nBias Type: {bias_type}\n\n")
    assert "For example, if [might not], the scenario" in paper and "【" not in paper
    assert "avoid unrealistic" not in paper  # the code's extra bullet is not in Table 11
    sd = prompts.template("GUIDANCE_PAPER_SELF_DIAGNOSIS")
    assert "symptom tracking\"" in sd and "online research" not in sd  # Table 8 lacks the code's 4th example
    prompt = cmq.generation_prompt("X", cmq.factor("No Factor"), cmq.Wording.paper)
    assert prompt.count("{") == 0 and "Bias Type: No Bias" in prompt


# --- counts ------------------------------------------------------------------------------------------------------


def test_22_scenarios_per_driftmed_pair(advice_items: list[Question]) -> None:
    pairs = advice_pairs()
    assert len(pairs) == 5 and len(advice_items) == 22 * 5 == 110
    by_pair = collections.defaultdict(list)
    for q in advice_items:
        by_pair[q.metadata["pair"]].append(q)
    assert sorted(by_pair) == [f"driftmed-cp:{c['id']}" for c, _ in pairs]
    for cur, old in pairs:
        qs = by_pair[f"driftmed-cp:{cur['id']}"]
        assert collections.Counter((q.metadata["factor_name"], q.metadata["version"]) for q in qs) == {
            (f, v): 1 for f in SEED_FACTORS for v in ("up_to_date", "outdated")}
        for q in qs:
            up = q.metadata["version"] == "up_to_date"
            assert q.target == ("YES" if up else "NO") and q.metadata["stance"] == ("endorse" if up else "reject")
            assert q.metadata["advice"] == (cur if up else old)["text"]
            assert q.metadata["counterpart"] == (old if up else cur)["text"]
            assert q.metadata["change_category"] == cur["change_category"] in CATEGORIES
            assert q.metadata["disease"] == cur["disease"]
            assert q.metadata["disease_group"] == cur.get("disease_group")
            assert q.metadata["scenario_source"] == "template" and q.variant.startswith("template/")
            assert (cur if up else old)["text"] in q.input  # the template states the advice it follows
            assert q.input == f"{q.metadata['scenario']}\n\n{TASK_PROMPT}"  # the seed's f"{prompt_text}\n\n{task}"
            assert q.system is None and [c.label for c in q.choices] == ["YES", "NO"]
            assert q.target_date == RELEASE  # the outdated version's end: DriftMed's release
    # Each IKCR pair (concept x factor) has exactly one up-to-date and one outdated scenario.
    halves = collections.Counter((q.metadata["ikcr_pair"], q.metadata["version"]) for q in advice_items)
    assert set(halves.values()) == {1} and len({k for k, _ in halves}) == 55


def test_195_pairs_give_the_published_4290(tmp_path: Path) -> None:
    """The paper's counts: 195 pairs x 11 factors x 2 = 4,290, and the exported DriftMed ids meet its pairing rule
    (2,145 current scenarios, wrong id = correct id + 2145)."""
    base = advice_pairs()
    rows = []
    for n in range(1, 196):
        cur, old = base[n % 5]
        rows.append(dict(cur, id=n, text=f"{cur['text']} (pair {n})"))
        rows.append(dict(old, id=n + 2145, text=f"{old['text']} (pair {n})"))
    path = tmp_path / "195.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    questions = generate("conflictmedqa", loaded(path), "snap", {})[0]
    assert len(questions) == 4290
    assert collections.Counter(q.target for q in questions) == {"YES": 2145, "NO": 2145}
    write_seed("conflictmedqa", questions, tmp_path / "seed")
    exported = raw(tmp_path / "seed" / "conflictmedqa_driftmed.jsonl")
    mapped = seed_ids(tmp_path / "seed", "conflictmedqa", "driftmed.jsonl")
    ids = {m[0]: r["id"] for r, m in zip(exported, mapped, strict=True)}
    assert sorted(ids.values()) == list(range(1, 2146)) + list(range(2146, 4291))
    by_pair = collections.defaultdict(dict)
    for q in questions:
        by_pair[q.metadata["ikcr_pair"]][q.metadata["version"]] = ids[q.id]
    assert all(v["outdated"] == v["up_to_date"] + 2145 for v in by_pair.values())


def test_22_scenarios_per_tempomed_change_pair(tempomed_store: KgliteStore, shared_data: Path) -> None:
    records = tempomed_records(shared_data)
    questions, ctx = generate("conflictmedqa", tempomed_store, snapshot.current(tempomed_store), {})
    assert len(records) == 559 and len(questions) == 22 * 559 == 12298 and not ctx.notes
    by_record = collections.defaultdict(list)
    for q in questions:
        by_record[q.metadata["pair_index"]].append(q)
    assert len(by_record) == 559
    # In the released file's order: pair i is record i; its A is the current, its B the outdated recommendation.
    for i, rec in enumerate(records):
        qs = by_record[i]
        assert len(qs) == 22
        for q in qs:
            up = q.metadata["version"] == "up_to_date"
            assert q.metadata["advice"] == rec["Answer"]["Choice_A" if up else "Choice_B"]
            assert q.target == ("YES" if up else "NO") == q.metadata["graph_target"]
            assert q.target_date == dt.date(rec["Year_current"], 1, 1)  # the current guideline's year
            assert q.metadata["source"] == "tempomed" and q.metadata["change_category"] is None
    assert not verify_questions(tempomed_store, questions).changed


def test_mixed_store_both_families(shared_data: Path) -> None:
    """DriftMed pairs have no guideline: TempoMed generation skips them, ConflictMedQA uses both sources."""
    store = KgliteStore(":memory:")
    tempomed.load(store, [shared_data / "tempomed-bench"])
    driftmed.load(store, [ADVICE])
    snap = snapshot.current(store)
    assert len(generate("tempomed", store, snap, {})[0]) == 6 * 559
    questions = generate("conflictmedqa", store, snap, {})[0]
    assert collections.Counter(q.metadata["source"] for q in questions) == {"tempomed": 22 * 559, "driftmed": 110}


# --- names -------------------------------------------------------------------------------------------------------


def test_paper_and_code_names_are_accepted() -> None:
    assert [cmq.factor(n).key for n in ("Recency Factor", "No Factor", "racial or ethnic", "geographical",
                                        "Self-Diagnosis Bias", "STATUS QUO", "false_consensus")] == [
        "recency", "no_factor", "racial_ethnic", "geographic", "self_diagnosis", "status_quo", "false_consensus"]
    assert [f.seed for f in cmq.FACTORS] == SEED_FACTORS
    assert cmq.category("diagnostic and threshold") == cmq.category("diagnostic_threshold") == "Diagnostic & Threshold"
    assert cmq.disease_group("Infectious diseases") == "infectious"


@pytest.mark.parametrize(("options", "words"), [
    ({"factors": ["recency", "Authority Bias"]}, "unknown ConflictMedQA factor 'Authority Bias'"),
    ({"categories": ["Reversal"]}, "unknown ConflictMedQA change category 'Reversal'"),
    ({"disease_groups": ["Hepatitis B=acute"]}, "unknown ConflictMedQA disease group 'acute'"),
    ({"disease_groups": ["Hepatitis B"]}, "must read DISEASE=GROUP"),
])
def test_unknown_option_names_are_refused(advice_store: KgliteStore, options: dict[str, Any], words: str) -> None:
    with pytest.raises(cmq.UnknownName) as info:
        list(generate("conflictmedqa", advice_store, "snap", options)[0])
    assert words in str(info.value) and "known" in str(info.value)


def test_unknown_names_in_the_data_are_refused(tmp_path: Path) -> None:
    # A change category outside the paper's five never enters the store: refused at load, naming the record.
    rows = [dict(r, change_category="recommendation reversal") if r["id"] == 2146 else r for r in raw(ADVICE)]
    path = tmp_path / "bad_category.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"bad_category.jsonl, record \d+.*unknown change_category "
                                         r"'recommendation reversal'"):
        loaded(path)
    rows = [dict(r, bias_type="Authority Bias") if r["id"] in (3, 2148) else r for r in raw(SCENARIOS)]
    path = tmp_path / "bad_factor.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"bad_factor.jsonl, record \d+.*unknown bias_type 'Authority Bias'"):
        loaded(path)  # refused at load (it used to enter and make every `generate conflictmedqa` fail)
    rows = [dict(r, disease_group="acute") if r["id"] in (1, 2146) else r for r in raw(ADVICE)]
    path = tmp_path / "bad_group.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"bad_group.jsonl, record \d+.*unknown disease_group 'acute'"):
        loaded(path)


def test_options_select_factors_categories_and_groups(advice_store: KgliteStore) -> None:
    qs = generate("conflictmedqa", advice_store, "snap", {
        "factors": ["No Factor", "Recency Factor"], "categories": ["Treatment Modality", "recommendation intensity"],
        "disease_groups": ["hepatitis b=Infectious disease"], "versions": ["outdated"]})[0]
    assert len(qs) == 2 * 2 * 1
    assert [q.metadata["factor"] for q in qs] == ["recency", "no_factor"] * 2  # the seed's order, not the asked one
    assert {q.metadata["change_category"] for q in qs} == {"Treatment Modality", "Recommendation Intensity"}
    groups = {q.metadata["disease"]: q.metadata["disease_group"] for q in qs}
    assert groups == {"Hepatitis B": "infectious", "Type 2 diabetes": "chronic"}
    assert {q.target for q in qs} == {"NO"}


# --- determinism, answer keys, verify -------------------------------------------------------------------------


def test_generation_is_deterministic_for_a_seed(advice_store: KgliteStore, advice_items: list[Question]) -> None:
    again = generate("conflictmedqa", advice_store, snapshot.current(advice_store), {})[0]
    assert [q.model_dump() for q in again] == [q.model_dump() for q in advice_items]
    other = generate("conflictmedqa", advice_store, snapshot.current(advice_store), {"seed": 3})[0]
    assert [q.id for q in other] != [q.id for q in advice_items]  # other evidence phrases drawn
    assert [q.metadata["advice"] for q in other] == [q.metadata["advice"] for q in advice_items]
    # Both scenarios of an IKCR pair use the same phrase: they differ only in the recommendation.
    for q in advice_items:
        partner = next(p for p in advice_items if p.metadata["ikcr_pair"] == q.metadata["ikcr_pair"] and p is not q)
        assert q.metadata["scenario"].replace(q.metadata["advice"], "") == \
            partner.metadata["scenario"].replace(partner.metadata["advice"], "")


def test_answer_keys_rerun_and_verify_reports_nothing_changed(advice_store: KgliteStore,
                                                              advice_items: list[Question]) -> None:
    for q in advice_items[:22]:
        key = q.answer_key
        assert key.query == "conflictmedqa-key" and key.params == {"pair": q.metadata["pair"], "date": "2025-05-12"}
        rows = run_query(advice_store, key.query, key.params)
        assert [r.model_dump(mode="json") for r in rows] == key.evidence
        in_force = [r.text for r in rows if r.in_force]
        assert in_force == [q.metadata["advice"] if q.target == "YES" else q.metadata["counterpart"]]
        assert cmq.answer(q, key.evidence) == q.target
    report = verify_questions(advice_store, advice_items)
    assert report.checked == 110 and report.keys == 5 and not report.changed


def test_cli_generate_then_bench_verify_zero_changed(tmp_path: Path) -> None:
    runner = CliRunner()
    uri = f"kglite://{tmp_path}/s.kgl"
    assert runner.invoke(app, ["--store", uri, "ingest", "driftmed", str(ADVICE)]).exit_code == 0
    out = tmp_path / "cmq.jsonl"
    result = runner.invoke(app, ["--store", uri, "generate", "conflictmedqa", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 110 questions" in result.output
    result = runner.invoke(app, ["--store", uri, "bench", "verify", str(out)])
    assert result.exit_code == 0
    assert "110 questions, 5 answer keys re-run: 0 answers changed, 0 evidence only" in result.output
    result = runner.invoke(app, ["--store", uri, "generate", "conflictmedqa", "--out", str(out), "--factors",
                                 "recency,authority"])
    assert result.exit_code == 2 and "unknown ConflictMedQA factor 'authority'" in result.output


def test_verify_flags_exactly_the_trajectory_that_got_a_new_version(shared_data: Path, tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    tempomed.load(store, [shared_data / "tempomed-bench"])
    driftmed.load(store, [ADVICE])
    questions = generate("conflictmedqa", store, snapshot.current(store), {})[0]
    rec = next(r for r in tempomed_records(shared_data) if r["PMID_current"] == "36739483")
    newer = dict(rec, idx=90001, PMID_prior=rec["PMID_current"], Year_prior=rec["Year_current"],
                 PMID_current="99999901", Year_current=2027)
    path = tmp_path / "newer.jsonl"
    path.write_text(json.dumps(newer, indent=2) + "\n")
    tempomed.load(store, [path], release_date=dt.date(2027, 3, 1))
    chain = {rec["PMID_current"]} | {r["PMID_prior"] for r in tempomed_records(shared_data)
                                      if r["PMID_current"] == rec["PMID_current"]}
    flagged = {c.id for c in verify_questions(store, questions).changed}
    expected = {q.id for q in questions if q.metadata["source"] == "tempomed" and q.answer_key.evidence
                and {r.get("guideline") for r in q.answer_key.evidence} & chain}
    assert flagged == expected and len(expected) % 22 == 0 and expected


# --- protocols and dates --------------------------------------------------------------------------------------


def test_as_of_before_the_release_keeps_seed_golds_with_a_quirk(advice_store: KgliteStore) -> None:
    early = {"as_of": dt.date(2020, 1, 1)}
    seed, _ = generate("conflictmedqa", advice_store, "snap", early)
    assert len(seed) == 110 and all(q.metadata["quirks"] == ["key_differs_from_graph"] for q in seed)
    # DriftMed gives no dates: before its release both versions may hold, so the graph endorses both.
    assert {q.metadata["graph_target"] for q in seed} == {"YES"}
    assert {(q.metadata["version"], q.target) for q in seed} == {("up_to_date", "YES"), ("outdated", "NO")}
    fixed, ctx = generate("conflictmedqa", advice_store, "snap", {**early, "protocol": "chronokg"})
    assert fixed == [] and len(ctx.notes) == 5 and "key_differs_from_graph" in ctx.notes[0]


def test_chronokg_protocol_asks_the_papers_question_and_drops_identical_pairs(tmp_path: Path) -> None:
    rows = raw(ADVICE)
    same = [dict(r, text=rows[1]["text"]) if r["id"] == 2147 else r for r in rows]  # pair 2: outdated == current
    path = tmp_path / "same.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in same))
    store = loaded(path)
    seed, _ = generate("conflictmedqa", store, "snap", {})
    assert len(seed) == 110
    assert {q.metadata["pair"] for q in seed if q.metadata["quirks"]} == {"driftmed-cp:2"}
    fixed, ctx = generate("conflictmedqa", store, "snap", {"protocol": "chronokg"})
    assert len(fixed) == 88 and "driftmed-cp:2" not in {q.metadata["pair"] for q in fixed}
    assert ctx.notes == ["driftmed-cp:2: left out under --protocol chronokg (identical_texts, key_differs_from_graph)"]
    q = fixed[0]
    assert q.input == (f"{q.metadata['scenario']}\n\n{PAPER_QUESTION}\n"
                       "Answer ONLY with [YES] or [NO]. Do NOT provide any explanation.")
    assert q.metadata["question_form"] == "paper"


# --- released scenarios -----------------------------------------------------------------------------------------


def test_released_scenarios_are_taken_as_they_are() -> None:
    store = loaded(SCENARIOS)
    rows = {r["id"]: r for r in raw(SCENARIOS)}
    qs = generate("conflictmedqa", store, "snap", {})[0]
    assert len(qs) == 2 * 3
    for q in qs:
        up = q.metadata["version"] == "up_to_date"
        row = rows[q.metadata["driftmed_id"]]
        assert row["label"] == ("correct" if up else "wrong") and q.target == ("YES" if up else "NO")
        assert q.metadata["scenario"] == row["text"] and q.input == f"{row['text']}\n\n{TASK_PROMPT}"
        assert q.metadata["factor_name"] == row["bias_type"] and q.metadata["scenario_source"] == "released"
        assert f"SourceQuestion:driftmed-q:{row['id']}" in q.derived_from
    assert len(generate("conflictmedqa", store, "snap", {"factors": ["no factor"]})[0]) == 2
    assert len(generate("conflictmedqa", store, "snap", {"released": False})[0]) == 22 * 3


def test_since_generates_only_for_pairs_added_after_a_snapshot(tmp_path: Path) -> None:
    store = loaded(ADVICE)
    snap = snapshot.record(store)
    shifted = [dict(r, id=r["id"] + 100) for r in raw(SCENARIOS)]  # ids apart from the advice pairs'
    path = tmp_path / "more.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in shifted))
    driftmed.load(store, [path])
    added = snapshot.added_since(store, snap)
    new = generate("conflictmedqa", store, snapshot.current(store), {}, since=added)[0]
    assert sorted({q.metadata["pair"] for q in new}) == ["driftmed-cp:101", "driftmed-cp:102", "driftmed-cp:103"]
    assert len(new) == 6 and {q.metadata["scenario_source"] for q in new} == {"released"}
    assert len(generate("conflictmedqa", store, snapshot.current(store), {})[0]) == 110 + 6


# --- exports ----------------------------------------------------------------------------------------------------


def test_seed_files_read_as_the_seed_reads_them(advice_items: list[Question], tmp_path: Path) -> None:
    files = write_seed("conflictmedqa", advice_items, tmp_path)
    assert {p.name for p in files} == {f"conflictmedqa_{n}" for n in (
        "correct_scenarios.json", "wrong_scenarios.json", "correct_scenario_ids.json", "wrong_scenario_ids.json",
        "correct_advice.csv", "wrong_advice.csv", "advice_kb.csv", "driftmed.jsonl", "chronokg_ids.jsonl")}
    pairs = advice_pairs()
    by_id = {q.id: q for q in advice_items}
    for label, version, side in (("correct", "up_to_date", 0), ("wrong", "outdated", 1)):
        scenarios = json.loads((tmp_path / f"conflictmedqa_{label}_scenarios.json").read_text())
        ids = json.loads((tmp_path / f"conflictmedqa_{label}_scenario_ids.json").read_text())
        assert list(scenarios) == SEED_FACTORS  # predict_scenarios.py iterates the dict in this order
        # written as generate_scenarios.py writes it: json.dump(scenario_dict, f, ensure_ascii=False, indent=4)
        text = (tmp_path / f"conflictmedqa_{label}_scenarios.json").read_text(encoding="utf-8")
        assert text == json.dumps(scenarios, ensure_ascii=False, indent=4)
        counter = 0
        for bias_type, texts in scenarios.items():  # as predict_scenarios.py: factors, then scenarios
            assert len(texts) == 5
            for n, text in enumerate(texts):
                counter += 1
                q = by_id[ids[bias_type][n]]
                assert text == q.metadata["scenario"] and q.metadata["factor_name"] == bias_type
                assert q.metadata["version"] == version and q.metadata["advice"] == pairs[n][side]["text"]
        assert counter == 55
        with (tmp_path / f"conflictmedqa_{label}_advice.csv").open(newline="") as fh:
            reader = csv.DictReader(fh)  # generate_scenarios.py reads `row['advice']`: the one column
            assert reader.fieldnames == ["advice"]
            assert [r["advice"] for r in reader] == [p[side]["text"] for p in pairs]
        advice_ids = seed_ids(tmp_path, "conflictmedqa", f"{label}_advice.csv")
        assert [{by_id[i].metadata["advice"] for i in m} for m in advice_ids] == [{p[side]["text"]} for p in pairs]
    with (tmp_path / "conflictmedqa_advice_kb.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)  # predict_scenarios.py --use_rag reads `id` and `advice`
        assert reader.fieldnames == ["id", "advice"]
        kb = list(reader)
    assert [(r["id"], r["advice"]) for r in kb] == [(str(n), c["text"]) for n, (c, _) in enumerate(pairs, start=1)]


def test_a_factor_not_built_is_an_empty_list_as_the_seed_writes_it(advice_items: list[Question],
                                                                    tmp_path: Path) -> None:
    """generate_scenarios.py starts from `{bias_type: [] for bias_type in bias_types}`: every key, in order."""
    write_seed("conflictmedqa", [q for q in advice_items if q.metadata["factor"] == "recency"], tmp_path)
    scenarios = json.loads((tmp_path / "conflictmedqa_correct_scenarios.json").read_text())
    assert list(scenarios) == SEED_FACTORS
    assert {k: len(v) for k, v in scenarios.items()} == {k: 5 if k == "Recency Bias" else 0 for k in SEED_FACTORS}


def test_driftmed_export_loads_back_as_released_scenarios(advice_items: list[Question], tmp_path: Path) -> None:
    write_seed("conflictmedqa", advice_items, tmp_path)
    exported = tmp_path / "conflictmedqa_driftmed.jsonl"
    rows = raw(exported)
    assert len(rows) == 110 and {r["label"] for r in rows} == {"correct", "wrong"}
    ups = sorted(r["id"] for r in rows if r["label"] == "correct")
    assert ups == list(range(1, 56))  # factor-major numbering of the current block
    assert sorted(r["id"] for r in rows if r["label"] == "wrong") == [i + 2145 for i in ups]
    store = loaded(exported)
    again = generate("conflictmedqa", store, "snap", {})[0]
    original = {q.id: q for q in advice_items}
    # DriftMed's released fields, in its order, nothing else (the chronokg ids: the side file).
    assert all(list(r) == ["id", "text", "label", "bias_type", "change_category", "disease"] for r in rows)
    assert all(isinstance(r["id"], int) and isinstance(r["text"], str) for r in rows)
    by_chronokg = {r["id"]: m[0] for r, m in zip(rows, seed_ids(tmp_path, "conflictmedqa", "driftmed.jsonl"),
                                                 strict=True)}
    assert len(again) == 110
    for q in again:
        first = original[by_chronokg[q.metadata["driftmed_id"]]]
        assert (q.metadata["scenario"], q.target, q.metadata["factor"], q.metadata["version"],
                q.metadata["change_category"]) == (
            first.metadata["scenario"], first.target, first.metadata["factor"], first.metadata["version"],
            first.metadata["change_category"])
        # DriftMed has no disease-group column (it is ours): not in the seed file, kept in the side file.
        assert q.metadata["disease_group"] is None
    groups = {i: r["disease_group"] for r in (json.loads(x) for x in (
        tmp_path / "conflictmedqa_chronokg_ids.jsonl").read_text().splitlines()) if "disease_group" in r
              for i in r["chronokg_ids"]}
    assert groups == {q.id: q.metadata["disease_group"] for q in advice_items}


def test_canonical_jsonl_round_trip(advice_items: list[Question], tmp_path: Path) -> None:
    path = tmp_path / "cmq.jsonl"
    assert write_jsonl(path, advice_items) == 110
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all({"id", "input", "choices", "target", "metadata"} <= set(r) for r in lines)
    assert lines[0]["choices"] == ["YES", "NO"] and lines[0]["metadata"]["ikcr_pair"]
    assert [q.model_dump() for q in read_jsonl(path)] == [q.model_dump() for q in advice_items]


def test_metadata_is_enough_for_the_papers_metrics(advice_items: list[Question]) -> None:
    """From the metadata alone (paper Eqs. 1-4, per slice): always-YES gives ECDA_adh 1, ECDA_rej 0, IKCR 1; the
    oracle (YES exactly when the target is) gives 1, 1, 0."""
    for name, endorse in (("always-yes", lambda q: True), ("oracle", lambda q: q.target == "YES")):
        expected = (1.0, 0.0, 1.0) if name == "always-yes" else (1.0, 1.0, 0.0)
        for slice_key in ("factor", "change_category", "disease_group"):
            for value in {q.metadata[slice_key] for q in advice_items}:
                qs = [q for q in advice_items if q.metadata[slice_key] == value]
                ups = [endorse(q) for q in qs if q.metadata["gold_endorse"]]
                olds = [endorse(q) for q in qs if not q.metadata["gold_endorse"]]
                assert len(ups) == len(olds) > 0
                pairs: dict[str, dict[str, bool]] = collections.defaultdict(dict)
                for q in qs:
                    pairs[q.metadata["ikcr_pair"]][q.metadata["version"]] = endorse(q)
                assert all(set(p) == {"up_to_date", "outdated"} for p in pairs.values())
                active = [p for p in pairs.values() if any(p.values())]
                ikcr = sum(1 for p in active if all(p.values())) / len(active)
                assert (sum(ups) / len(ups), olds.count(False) / len(olds), ikcr) == expected, (name, value)


# --- the loader change -------------------------------------------------------------------------------------------


def test_advice_rows_load_as_pairs_without_questions(tmp_path: Path) -> None:
    store = loaded(ADVICE)
    assert store.run("MATCH (q:SourceQuestion) RETURN count(q) AS n")[0]["n"] == 0
    groups = {r["id"]: r["g"] for r in store.run("MATCH (c:ChangePair) RETURN c.id AS id, c.disease_group AS g")}
    assert groups == {f"driftmed-cp:{c['id']}": c.get("disease_group") for c, _ in advice_pairs()}
    csv_path = tmp_path / "advice.csv"
    with csv_path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["id", "text", "label", "bias_type", "change_category", "disease"])
        w.writeheader()
        for r in raw(ADVICE):
            w.writerow({k: r.get(k, "") for k in w.fieldnames})  # empty bias_type cells
    again = loaded(csv_path)
    assert len(generate("conflictmedqa", again, "snap", {})[0]) == 110


# --- the LLM path -------------------------------------------------------------------------------------------------


def test_llm_scenarios_keep_job_order_and_bound_concurrency(advice_store: KgliteStore) -> None:
    """The orchestration around `ask_json`, with a plain coroutine standing in for the model call."""
    rows = run_query(advice_store, "conflictmedqa-pairs", {})
    pair = cmq.Pair(row=rows[0], index=0, source="driftmed", category=None, disease=None, disease_group=None,
                    released=None, date=RELEASE)
    jobs = [cmq.Job(pair, f, v) for f in cmq.FACTORS for v in cmq.Version]
    seen: list[str] = []
    live = {"now": 0, "max": 0}

    async def ask(messages: list[dict[str, str]]) -> dict[str, Any]:
        live["now"] += 1
        live["max"] = max(live["max"], live["now"])
        await asyncio.sleep(0.001 * (len(seen) % 3))
        seen.append(messages[0]["content"])
        live["now"] -= 1
        assert [m["role"] for m in messages] == ["user"]
        return {"scenario": "  written: " + hashlib.sha256(messages[0]["content"].encode()).hexdigest() + " "}

    out = cmq.llm_scenarios(jobs, cmq.Wording.code, ask, concurrency=3)
    assert live["max"] == 3 and len(seen) == 22
    for job in jobs:
        prompt = cmq.generation_prompt(job.advice, job.factor)
        assert out[job] == "written: " + hashlib.sha256(prompt.encode()).hexdigest()


def test_llm_path_through_the_loopback_server(advice_store: KgliteStore) -> None:
    server_module = pytest.importorskip("chronokg.testing.openai_server")
    models = pytest.importorskip("chronokg.models")

    def script(request: Any) -> str:
        text = request.last_user_text
        if "Medical Advice: Adults aged 19 to 59 years may consider" in text and "Bias Type: No Bias" in text:
            return json.dumps({"scenario": ""})  # the seed drops an empty scenario
        return json.dumps({"scenario": "Scenario " + hashlib.sha256(text.encode()).hexdigest()[:12]})

    with server_module.OpenAIServer(script=script) as server:
        model = models.get_model("openai-compat/m", base_url=server.url, cache=False)
        qs, ctx = generate("conflictmedqa", advice_store, "snap", {}, model=model)
        bodies = list(server.bodies)
        with pytest.raises(Exception, match="empty scenario"):
            generate("conflictmedqa", advice_store, "snap", {"protocol": "chronokg"}, model=model)
    assert len(qs) == 109 and len(ctx.notes) == 1 and "empty scenario dropped" in ctx.notes[0]
    assert {q.metadata["scenario_source"] for q in qs} == {"llm"}
    sent = {b["messages"][0]["content"] for b in bodies}
    for q in qs:
        prompt = cmq.generation_prompt(q.metadata["advice"], cmq.factor(q.metadata["factor"]))
        assert prompt in sent
        assert q.metadata["scenario"] == "Scenario " + hashlib.sha256(prompt.encode()).hexdigest()[:12]
    assert all(len(b["messages"]) == 1 and b.get("temperature") == 0.9 for b in bodies)
