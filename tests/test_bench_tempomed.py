"""TempoMed-Bench re-created from the graph, on the real released sample.

Expected values are computed here from the raw records with the seed's rules as written in
its code (GuanZihan/TempoMed-Bench `pubmed_evaluation_5_option.py`: keys A / B, options A-D
then the fixed E, the stem rewrite), not read back from chronokg.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.families import tempomed_prompts
from chronokg.bench.family import generate
from chronokg.bench.question import Question, read_jsonl, write_jsonl
from chronokg.bench.verify import verify_questions
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.ingest.common import read_json_blocks
from chronokg.queries import catalog
from chronokg.queries.spec import run_query

pytestmark = pytest.mark.slow  # the real TempoMed sample, generated many times


def records(shared_data: Path) -> list[dict[str, Any]]:
    path = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    return [obj for _, _, obj in read_json_blocks(path)]


@pytest.fixture(scope="module")
def loaded(shared_data: Path) -> KgliteStore:
    store = KgliteStore(":memory:")
    tempomed.load(store, [shared_data / "tempomed-bench"])
    return store


@pytest.fixture(scope="module")
def items(loaded: KgliteStore) -> list[Question]:
    return generate("tempomed", loaded, snapshot.current(loaded), {})[0]


def seed_rewrite(stem: str, cur: int, prior: int) -> str:
    """The seed's counterpart stem, written here independently from its description."""
    out, n = re.subn(rf"(issued in ){cur}(\b)", rf"\g<1>{prior}\2", stem, count=1)
    if n:
        return out
    return re.sub(rf"\b{cur}\b", str(prior), stem, count=1)


def test_templates_are_verbatim() -> None:
    assert tempomed_prompts.check() == []
    system = "You are a medical QA model. Answer the multiple-choice question."
    assert tempomed_prompts.template("MCQ5_SYSTEM") == system


def test_six_items_per_record_following_the_seed(items: list[Question], shared_data: Path) -> None:
    raw = records(shared_data)
    assert len(items) == 6 * len(raw) == 3354
    by_idx = collections.defaultdict(list)
    for q in items:
        by_idx[q.metadata["idx"]].append(q)
    assert sorted(by_idx) == sorted(r["idx"] for r in raw)
    for rec in raw:
        qs = by_idx[rec["idx"]]
        assert collections.Counter(q.variant for q in qs) == {
            f"mcq5/{t}/{m}": 1 for t in ("up_to_date", "historical")
            for m in ("reorder_only", "shuffle_labels", "alternate_labels")}
        answer = rec["Answer"]
        for q in qs:
            current = q.metadata["target"] == "up_to_date"
            # Options: the record's A-D texts (permuted) and the fixed abstain option, last, labelled E.
            assert sorted(c.text for c in q.choices[:4]) == sorted(answer[f"Choice_{c}"] for c in "ABCD")
            assert (q.choices[4].label, q.choices[4].text) == ("E", answer["Choice_E"]) == ("E",
                                                                                             "I do not know the answer")
            # Key: the current recommendation (A) or the prior one (B), whatever label it is shown under.
            keyed = next(c for c in q.choices if c.label == q.target)
            assert keyed.text == answer["Choice_A" if current else "Choice_B"]
            stem = rec["Question"] if current else seed_rewrite(rec["Question"], rec["Year_current"],
                                                                  rec["Year_prior"])
            assert q.input.startswith(f"\nQuestion:\n{stem}\n\n")
            assert q.target_date == dt.date(rec["Year_current" if current else "Year_prior"], 1, 1)
            if q.metadata["shuffle_method"] == "alternate_labels":  # the seed's default labels: the canonical item
                assert [c.label for c in q.choices] == list("ABCDE")
                assert [c.text for c in q.choices[:4]] == [answer[f"Choice_{c}"] for c in "ABCD"]


def test_a_prompt_byte_for_byte(items: list[Question]) -> None:
    q = next(q for q in items if q.metadata["shuffle_method"] == "alternate_labels")
    options = "\n".join(f"{c.label}) {c.text}" for c in q.choices)
    expected = (
        f"\nQuestion:\n{q.metadata['stem']}\n\n{options}\n\n# You MUST Not generated any fabricated evidence or "
        "hallucinated words (e.g., the guideline would likely xxx)! If you do know the answer, simply choose the "
        "option of 'I do not know the answer' (E).\n# Please answer with the following format:\n##Explanation: "
        "[Your Explanations Here]\n##Answer: [Your Choice Here (A/B/C/D/E)]\n")
    assert q.input == expected
    assert q.system == "You are a medical QA model. Answer the multiple-choice question."


def test_stem_rewrite_rules_and_quirks(items: list[Question]) -> None:
    hist = [q for q in items if q.metadata["target"] == "historical" and q.metadata["shuffle_method"] == "reorder_only"]
    rules = collections.Counter(q.metadata["stem_rule"] for q in hist)
    assert rules == {"issued_in": 521, "first_year": 31, "unchanged": 7}  # the notes' count on this sample
    same_year = {q.metadata["idx"] for q in hist if "same_year_pair" in q.metadata["quirks"]}
    assert same_year == {505, 510, 511, 520, 521, 584}
    # For those the graph answers with the update all year, the seed keys B: the item says so.
    assert all("key_differs_from_graph" in q.metadata["quirks"] for q in hist if q.metadata["idx"] in same_year)


def test_generation_is_deterministic_for_a_seed(loaded: KgliteStore, items: list[Question]) -> None:
    again = generate("tempomed", loaded, snapshot.current(loaded), {})[0]
    assert [q.model_dump() for q in again] == [q.model_dump() for q in items]
    other = generate("tempomed", loaded, snapshot.current(loaded), {"seed": 7, "limit": 40})[0]
    assert [q.id for q in other] != [q.id for q in items[: len(other)]]  # another seed draws other permutations
    assert [q.metadata["permutation"] for q in other] != [q.metadata["permutation"] for q in items[: len(other)]]


def test_chronokg_protocol_fixes_the_quirks(loaded: KgliteStore) -> None:
    qs, ctx = generate("tempomed", loaded, snapshot.current(loaded), {"protocol": "chronokg"})
    assert all(not q.metadata["quirks"] for q in qs)
    assert len(ctx.notes) == 6 * 3 + 7 * 3  # same-year and unrewritten historical items left out, said so
    shuffled = [q for q in qs if q.metadata["shuffle_method"] == "shuffle_labels"]
    moved = [q for q in qs if q.metadata["shuffle_method"] != "alternate_labels"]
    assert all(q.metadata["permutation"] != [0, 1, 2, 3] for q in moved)
    positions = collections.Counter(q.target for q in shuffled)
    assert max(positions.values()) - min(positions.values()) <= 1  # gold balanced over A-D
    alternate = next(q for q in qs if q.metadata["shuffle_method"] == "alternate_labels")
    assert [c.label for c in alternate.choices] == ["W", "X", "Y", "Z", "V"]
    assert "'I do not know the answer' (V)" in alternate.input


def test_probe_golds_equal_recommended_on_every_year(loaded: KgliteStore) -> None:
    probes, _ = generate("tempomed", loaded, snapshot.current(loaded), {"mcq": False, "probes": True})
    assert len(probes) == 559 * 2 * 27
    cache: dict[tuple[str, int], dict[str, str]] = {}
    for q in probes:
        year = q.metadata["target_year"]
        pmid = q.derived_from[0].split(">")[-1]  # the pair's current guideline
        if (pmid, year) not in cache:
            rows = catalog.recommended_on(loaded, dt.date(year, 1, 1), guideline=pmid)
            cache[pmid, year] = {r.decision_id: r.recommendation for r in rows}
        decision = q.answer_key.params["decision"]
        expected = cache[pmid, year].get(decision)
        statement = q.metadata["statement_text"]
        assert q.target == ("C" if expected is None else "A" if expected == statement else "B"), (q.id, year)
    # The seed's rule on one pair: C before the prior version, then Yes/No, then the reverse.
    pair = probes[0].derived_from
    for source, yes, no in (("prior", "A", "B"), ("current", "B", "A")):
        one = {q.metadata["target_year"]: q.target for q in probes
               if q.derived_from == pair and q.metadata["statement_source"] == source}
        first = min(y for y, t in one.items() if t != "C")
        cur = next(q.metadata["statement_guideline_year"] for q in probes
                   if q.derived_from == pair and q.metadata["statement_source"] == "current")
        assert all(t == "C" for y, t in one.items() if y < first)
        assert all(t == yes for y, t in one.items() if first <= y < cur)
        assert all(t == no for y, t in one.items() if y >= cur)


def test_verify_flags_exactly_the_trajectory_that_got_a_new_version(shared_data: Path, tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    tempomed.load(store, [shared_data / "tempomed-bench"])
    questions, _ = generate("tempomed", store, snapshot.current(store), {})
    assert not verify_questions(store, questions).changed
    rec = next(r for r in records(shared_data) if r["PMID_current"] == "36739483")
    chain = {v.pmid for v in catalog.trajectory(store, "36739483")}
    newer = dict(rec, idx=90001, PMID_prior=rec["PMID_current"], Year_prior=rec["Year_current"],
                 PMID_current="99999901", Year_current=2027,
                 Question=rec["Question"].replace(f"issued in {rec['Year_current']}", "issued in 2027"))
    path = tmp_path / "newer.jsonl"
    path.write_text(json.dumps(newer, indent=2) + "\n")
    tempomed.load(store, [path], release_date=dt.date(2027, 3, 1))
    report = verify_questions(store, questions)
    flagged = {c.id for c in report.changed}
    expected = {q.id for q in questions if {q.metadata["PMID_current"], q.metadata["PMID_prior"]} & chain}
    assert flagged == expected and len(expected) >= 6
    # The new evidence names the new version; what each question's target was is reported beside it.
    for change in report.changed[:10]:
        rows = run_query(store, "decision-at", change.params)
        assert "99999901" in {r.guideline for r in rows} and change.old_target


def test_since_generates_only_what_was_added(shared_data: Path, tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    tempomed.load(store, [shared_data / "tempomed-bench"])
    snap = snapshot.record(store)
    diffs = tmp_path / "99999903_36739483_extracted_diffs.json"
    diffs.write_text(json.dumps([{
        "clinical_focus": "Quality assurance of brachytherapy treatment planning systems",
        "current_recommendation": "Verify every treatment plan with an independent dose calculation.",
        "prior_recommendation": "Verify treatment plans with an independent dose calculation when feasible.",
        "change_summary": "Independent verification became mandatory."}]))
    trajectory = tmp_path / "trajectory_99999903.json"
    trajectory.write_text(json.dumps({"PMID": "99999903", "year_of_current_guidance": 2027, "Topic": "QA",
                                      "Organization": ["AAPM"],
                                      "prior_guidelines": [{"PMID": "36739483", "year": 2023}]}))
    tempomed.load(store, [trajectory, diffs])
    added = snapshot.added_since(store, snap)
    new, _ = generate("tempomed", store, snapshot.current(store), {}, since=added)
    assert new and {q.metadata["PMID_current"] for q in new} == {"99999903"}
    assert {q.metadata["mcq_source"] for q in new} == {"template"}
    assert len(new) == 6


def test_exports_load_in_the_seed_format_and_as_json_lines(items: list[Question], tmp_path: Path) -> None:
    canonical = tmp_path / "tempomed.jsonl"
    assert write_jsonl(canonical, items[:60]) == 60
    lines = [json.loads(line) for line in canonical.read_text().splitlines()]
    assert all({"id", "input", "choices", "target", "metadata"} <= set(r) for r in lines)
    assert [q.id for q in read_jsonl(canonical)] == [q.id for q in items[:60]]
    files = write_seed("tempomed", items[:60], tmp_path / "seed")
    records_file = tmp_path / "seed" / "tempomed_questions.jsonl"
    assert files[records_file] == 10
    # The seed's `load_data`: split on blank lines, json.loads each non-empty block.
    blocks = [json.loads(b) for b in records_file.read_text().strip().split("\n\n") if b.strip()]
    assert len(blocks) == 10
    for block in blocks:
        assert list(block)[:7] == ["idx", "PMID_current", "Year_current", "PMID_prior", "Year_prior", "Question",
                                   "Answer"]
        assert block["Answer"]["Correct"] == "A" and block["Answer"]["Choice_E"] == "I do not know the answer"
        assert "chronokg_question_ids" not in block
    side = [json.loads(x) for x in (tmp_path / "seed" / "tempomed_chronokg_ids.jsonl").read_text().splitlines()]
    assert [len(r["chronokg_ids"]) for r in side if r["file"] == "tempomed_questions.jsonl"] == [6] * 10
    item_rows = json.loads((tmp_path / "seed" / "tempomed_items.json").read_text())
    assert len(item_rows) == 60 and all(r["gold"] in r["option_order"] for r in item_rows)
