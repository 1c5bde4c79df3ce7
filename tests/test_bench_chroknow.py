"""ChroKnowBench re-created from the graph, on the self-authored fixtures in tests/fixtures/chroknow/bench/
(the seed's file layout, with a Fewshots/ folder) and on CFR editions made from the real eCFR sample.

The expected prompts below are written by hand from the seed's templates (ChroKnowledge `sources/
template.py`, quoted in the seed notes) and its assembly rules (`ChroKnowledge.py`: options (a)=d0,
(b)=d2, (c)=d1, (d)=gold; the few-shot label patterns; TF targets true). The few-shot order is replayed
here with Python's own `random` from the raw fixture files, independently of chronokg.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.families import chroknow_prompts
from chronokg.bench.families.chroknow import word_span
from chronokg.bench.family import generate
from chronokg.bench.question import Question, read_jsonl, write_jsonl
from chronokg.bench.verify import verify_questions
from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import cfr, chroknow
from chronokg.queries import catalog

BENCH = Path(__file__).parent / "fixtures" / "chroknow" / "bench"


def raw(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (BENCH / name).read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def store() -> KgliteStore:
    s = KgliteStore(":memory:")
    chroknow.load(s, [BENCH])
    return s


@pytest.fixture(scope="module")
def seed_items(store: KgliteStore) -> list[Question]:
    return generate("chroknow", store, snapshot.current(store), {})[0]


@pytest.fixture(scope="module")
def fixed_items(store: KgliteStore) -> list[Question]:
    return generate("chroknow", store, snapshot.current(store), {"protocol": "chronokg"})[0]


def pick(items: list[Question], template: str, year: int, draw: int = 0, **where: Any) -> Question:
    (q,) = [q for q in items if q.metadata["template"] == template and q.metadata["year"] == year
            and q.metadata["draw"] == draw and all(q.metadata.get(k) == v for k, v in where.items())]
    return q


# --- templates ----------------------------------------------------------------------------------------------------


def test_templates_are_verbatim() -> None:
    assert chroknow_prompts.check() == []
    assert chroknow_prompts.template("prompt_kt_zs_t") == "Q. In {{t}}, {{sub}}, {{rel}}, [Object]\n"
    assert chroknow_prompts.template("prompt_tf_legal_t") == "Please answer true/false.\nQ. In {{t}}, {{q}}\n"
    assert chroknow_prompts.keyed("prompt_qa_general_t")["employer"] == (
        "In {{t}}, which organization is {{sub}}'s employer?\n(a) {{Ans1}} (b) {{Ans2}} (c) {{Ans3}} (d) {{Ans4}}\n")
    assert chroknow_prompts.keyed("prompt_tf_math_t")["Inverse_belong_to"] == (
        "Q. In {{t}}, {{sub}} is belonged to by {{obj}}.\n")
    assert len(chroknow_prompts.keyed("prompt_qa_biomedical_t")) == 12
    assert chroknow_prompts.template("chrono_none_system") == (
        "Answer 'Candidate A. [Object]' based on the timestamp. Output only the answer, 'A. [Object]'.")


def test_rendering_follows_python_liquid() -> None:
    render = chroknow_prompts.render
    assert render("A. {{obj}}|{{missing}}|", obj=["Real Madrid CF", "Real Madrid"]) == "A. Real Madrid CFReal Madrid||"
    assert render("{{a}} {{b}} {{c}} {{d}}", a=None, b=True, c=[["x", "y"]], d=2015) == " true ['x', 'y'] 2015"
    assert render("{{a}}", a="{{b}}", b="no second pass") == "{{b}}"


# --- the seed's prompts, byte for byte -------------------------------------------------------------------------------

GENERAL_GENERATION = (
    "Q. In 2020, James E. McPherson, position held, [Object]\n"
    "A. United States Secretary of the Navy\n"
    "\n"
    "Q. In 2020, Pedro Braillard Poccard, position held, [Object]\n"
    "A. member of the Argentine Chamber of Senators\n"
    "\n"
    "Q. In 2020, Jesús Ávila de Grado, position held, [Object]\n"
    "A. chief scientific officer\n"
    "\n"
    "Q. In 2020, Ana Santos Aramburo, position held, [Object]\n"
    "A. Spain National Library general manager\n"
    "\n"
    "Q. In 2020, Donald Tusk, position held, [Object]\n"
)
GENERAL_MCQA = (
    "In 2020, what office does James E. McPherson hold?\n"
    "(a) United States Secretary of the Navy (b) United States Secretary of Defense (c) United States Attorney "
    "General (d) United States Secretary of Homeland Security\n"
    "\n"
    "(a) United States Secretary of the Navy\n"
    "\n"
    "In 2020, what office does Pedro Braillard Poccard hold?\n"
    "(a) Minister of Foreign Affairs (b) Governor of Corrientes Province (c) member of the Argentine Chamber of "
    "Senators (d) Mayor of Buenos Aires\n"
    "\n"
    "(c) member of the Argentine Chamber of Senators\n"
    "\n"
    "In 2020, what office does Jesús Ávila de Grado hold?\n"
    "(a) Director of the World Health Organization (b) Minister of Health (c) chief scientific officer "
    "(d) President of the National Research Council\n"
    "\n"
    "(c) chief scientific officer\n"
    "\n"
    "In 2020, what office does Ana Santos Aramburo hold?\n"
    "(a) Director of the Prado Museum (b) Minister of Culture and Sports of Spain (c) President of the Spanish "
    "Royal Academy (d) Spain National Library general manager\n"
    "\n"
    "(d) Spain National Library general manager\n"
    "\n"
    "In 2020, what office does Donald Tusk hold?\n"
    "(a) President of the European Commission (b) Chancellor of Germany (c) President of Poland (d) chairperson\n"
    "\n"
)
GENERAL_TF = (
    "Q. In 2020, James E. McPherson holds the position of United States Secretary of Defense.\n"
    "A. false\n"
    "\n"
    "Q. In 2020, Pedro Braillard Poccard holds the position of Minister of Foreign Affairs.\n"
    "A. false\n"
    "\n"
    "Q. In 2020, Jesús Ávila de Grado holds the position of Director of the World Health Organization.\n"
    "A. false\n"
    "\n"
    "Q. In 2020, Ana Santos Aramburo holds the position of Spain National Library general manager.\n"
    "A. true\n"
    "\n"
    "Q. In 2020, Donald Tusk holds the position of chairperson.\n"
)
LEGAL_GENERATION = (
    "Q. In 2020, Question 3 text with a ____ blank.\n"
    "A. ans3\n"
    "\n"
    "Q. In 2020, Question 1 text with a ____ blank.\n"
    "A. ans1\n"
    "\n"
    "Q. In 2020, Question 5 text with a ____ blank.\n"
    "A. ans5\n"
    "\n"
    "Q. In 2020, Question 4 text with a ____ blank.\n"
    "A. ans4\n"
    "\n"
    "Q. In 2020, The ____ shall publish the notice.\n"
)
LEGAL_MCQA = (
    "Fill in the blank.\nIn 2020, Question 3 text with a ____ blank.\n(a) d30 (b) ans3 (c) d31 (d) d32\n\n(b) ans3\n"
    "\n"
    "Fill in the blank.\nIn 2020, Question 1 text with a ____ blank.\n(a) ans1 (b) d11 (c) d12 (d) d10\n\n(a) ans1\n"
    "\n"
    "Fill in the blank.\nIn 2020, Question 5 text with a ____ blank.\n(a) ans5 (b) d51 (c) d50 (d) d52\n\n(a) ans5\n"
    "\n"
    "Fill in the blank.\nIn 2020, Question 4 text with a ____ blank.\n(a) d41 (b) d40 (c) ans4 (d) d42\n\n(c) ans4\n"
    "\n"
    "Fill in the blank.\nIn 2020, The ____ shall publish the notice.\n"
    "(a) Secretary (b) Commission (c) Board (d) Director\n"
    "\n"
)
LEGAL_TF = (
    "Please answer true/false.\nQ. In 2020, Question 3 text with ad30blank.\nA. false\n"
    "\n"
    "Please answer true/false.\nQ. In 2020, Question 1 text with aans1blank.\nA. true\n"
    "\n"
    "Please answer true/false.\nQ. In 2020, Question 5 text with aans5blank.\nA. true\n"
    "\n"
    "Please answer true/false.\nQ. In 2020, Question 4 text with ad41blank.\nA. false\n"
    "\n"
    "Please answer true/false.\nQ. In 2020, TheDirectorshall publish the notice.\n"
)
BIOMEDICAL_MCQA_TAIL = (
    "In 2022, which of the following does COVID-19 may treat?\n"
    "(a) oseltamivir (b) zidovudine (c) acyclovir (d) remdesivir\n"
    "\n"
)


def test_general_seed_prompts_byte_for_byte(seed_items: list[Question]) -> None:
    tusk = {"subject": "Donald Tusk"}
    assert pick(seed_items, "generation", 2020, **tusk).input == GENERAL_GENERATION
    mcqa = pick(seed_items, "mcqa", 2020, **tusk)
    assert mcqa.input == GENERAL_MCQA
    assert mcqa.target == "d" and [c.text for c in mcqa.choices] == [
        "President of the European Commission", "Chancellor of Germany", "President of Poland", "chairperson"]
    tf = pick(seed_items, "tf", 2020, **tusk)
    assert (tf.input, tf.target) == (GENERAL_TF, "true")
    assert pick(seed_items, "generation", 2020, **tusk).target == "chairperson"


def test_legal_seed_prompts_byte_for_byte(seed_items: list[Question]) -> None:
    notice = {"question": "The ____ shall publish the notice."}
    assert pick(seed_items, "generation", 2020, **notice).input == LEGAL_GENERATION
    assert pick(seed_items, "mcqa", 2020, **notice).input == LEGAL_MCQA
    assert pick(seed_items, "tf", 2020, **notice).input == LEGAL_TF
    # A blank not written " ____ " stays unfilled in the seed's TF statement (its replace(' ____ ', x)).
    other = pick(seed_items, "tf", 2020, question="Applications are filed with the ____, which decides them.")
    assert other.input.endswith("\n\nPlease answer true/false.\nQ. In 2020, Applications are filed with the ____, "
                                 "which decides them.\n")


def test_biomedical_and_alias_list_quirks(seed_items: list[Question], fixed_items: list[Question]) -> None:
    bio = pick(seed_items, "mcqa", 2022, subject="COVID-19")
    assert bio.input.endswith(BIOMEDICAL_MCQA_TAIL)
    # Biomedical's few-shot label pattern is b, c, d, d (ChroKnowledge.py:91-109).
    assert [line[:3] for line in bio.input.split("\n") if line[:1] == "(" and line[3:4] == " " and
            " (b) " not in line] == ["(b)", "(c)", "(d)", "(d)"]
    # An alias list prints glued under the seed (python-liquid), as one clean name under chronokg.
    seed = pick(seed_items, "mcqa", 2017, subject="Cristiano Ronaldo")
    assert seed.input.endswith("(d) Real Madrid CFReal Madrid\n\n")
    assert "alias_list_rendered_glued" in seed.metadata["quirks"]
    fixed = pick(fixed_items, "mcqa", 2017, subject="Cristiano Ronaldo")
    assert "Real Madrid CF" in [c.text for c in fixed.choices] and "CFReal" not in fixed.input


def test_five_draws_per_known_year_and_template(seed_items: list[Question]) -> None:
    expected = collections.Counter[str]()
    for name, domain in (("TimeVariant_General_Dynamic.jsonl", "general"), ("TimeVariant_General_Static.jsonl",
                         "general"), ("TimeVariant_Legal_Dynamic.jsonl", "legal"),
                         ("TimeVariant_Biomedical_Dynamic.jsonl", "biomedical")):
        for row in raw(name):
            years = {k.split("_")[-1] for k, v in row.items() if k.startswith(("objects_", "answers_")) and v}
            for template in ("generation", "mcqa", "tf"):
                expected[f"{domain}/{template}"] += 5 * len(years)
    assert collections.Counter(q.variant for q in seed_items) == expected
    assert len(seed_items) == 315 and len({q.id for q in seed_items}) == 315


def test_seed_draws_replay_pythons_random(seed_items: list[Question]) -> None:
    """The seed's draws: one random.Random(seed) per domain, Dynamic rows then Static, years ascending, five
    random.sample(candidates, 4) each; General candidates are the same relation's few-shots having the year."""
    pool = raw("Fewshots/Fewshot_General.jsonl")
    rng = random.Random(0)
    expected = {}
    for row in raw("TimeVariant_General_Dynamic.jsonl") + raw("TimeVariant_General_Static.jsonl"):
        years = sorted({str(v)[:4] for k, v in row.items() if k.startswith("release_date_")})
        for year in years:
            candidates = [f for f in pool if f["relation"] == row["relation"] and f"objects_{year}" in f]
            for draw in range(5):
                expected[row["subject"], int(year), draw] = [f["subject"] for f in rng.sample(candidates, 4)]
    got = {(q.metadata["subject"], q.metadata["year"], q.metadata["draw"]): [f["subject"] for f in
                                                                            q.metadata["fewshots"]]
           for q in seed_items if q.variant == "general/generation"}
    assert got == expected
    # Jane Roe has only 2019: drawn in 2019 (five candidates), never in other years.
    assert any("Jane Roe" in v for (_, y, _), v in got.items() if y == 2019)
    assert not any("Jane Roe" in v for (_, y, _), v in got.items() if y != 2019)


def test_another_seed_draws_other_exemplars(store: KgliteStore, seed_items: list[Question]) -> None:
    other = generate("chroknow", store, snapshot.current(store), {"seed": 42})[0]
    assert len(other) == len(seed_items)
    assert [q.metadata["fewshots"] for q in other] != [q.metadata["fewshots"] for q in seed_items]
    again = generate("chroknow", store, snapshot.current(store), {})[0]
    assert [q.model_dump() for q in again] == [q.model_dump() for q in seed_items]


# --- distractors ----------------------------------------------------------------------------------------------------


def _valid_texts(store: KgliteStore) -> dict[str, set[str]]:
    """Per subject (text): every object it takes at any time, from the raw rows and from the graph's timeline."""
    def norm(t: str) -> str:
        return " ".join(t.casefold().split())

    def flat(v: Any) -> list[str]:
        return [t for x in v for t in flat(x)] if isinstance(v, list) else [str(v)]

    out: dict[str, set[str]] = collections.defaultdict(set)
    for name in [p.relative_to(BENCH).as_posix() for p in [*BENCH.glob("*.jsonl"), *BENCH.glob("Fewshots/*.jsonl")]]:
        for row in raw(name):
            key = row.get("subject") or row["question"]
            out[key] |= {norm(t) for k, v in row.items() if k.startswith(("objects_", "answers_")) for t in flat(v)}
    for row in raw("TimeVariant_General_Dynamic.jsonl") + raw("TimeVariant_General_Static.jsonl"):
        for fact in catalog.timeline(store, chroknow.entity_id(row["subject"]), row["relation"]):
            aliases = store.run("MATCH (e:Entity {id: $id}) RETURN e.aliases AS a", {"id": fact.object})
            out[row["subject"]] |= {norm(fact.shown)} | {norm(a) for r in aliases for a in r["a"] or []}
    return out


def shown_distractors(q: Question) -> list[tuple[str, str]]:
    """(subject, text) of every distractor the prompt shows: the item's options and false statements, and the
    exemplars' distractor options and false statements."""
    m = q.metadata
    subject = m["subject"] or m["question"]
    out = [(subject, c.text) for c in q.choices if c.role == "distractor"]
    if m["template"] == "tf" and m["expected"] == "false":
        out.append((subject, m["statement"]))
    if m["template"] in ("mcqa", "tf"):
        for shot in m["fewshots"]:
            out += [(shot.get("subject") or shot["question"], str(d[0] if isinstance(d, list) else d))
                    for d in shot["distractor"]]
    return out


def test_no_distractor_is_ever_a_valid_object_of_its_subject(store: KgliteStore, seed_items: list[Question],
                                                           fixed_items: list[Question]) -> None:
    valid = _valid_texts(store)
    checked = 0
    for q in [*seed_items, *fixed_items]:
        for subject, text in shown_distractors(q):
            assert " ".join(text.casefold().split()) not in valid[subject], (q.id, subject, text)
            checked += 1
    assert checked > 3000
    # Von der Leyen's first source distractor was her own office in 2018-2019: replaced from the graph.
    vdl = pick(seed_items, "mcqa", 2020, subject="Ursula von der Leyen")
    assert "Federal Minister of Defence" not in vdl.input
    assert [(d["text"], d["source"]) for d in vdl.metadata["distractors"]] == [
        ("Chancellor of Germany", "source"), ("President of the European Council", "graph"), ("chairperson", "graph")]
    assert "source_distractor_valid_for_subject" in vdl.metadata["quirks"]


# --- the chronokg protocol -------------------------------------------------------------------------------------------


def test_chronokg_protocol_balances_gold_and_fixes_the_quirks(store: KgliteStore, fixed_items: list[Question]
                                                              ) -> None:
    for domain in ("general", "legal", "biomedical"):
        golds = collections.Counter(q.target for q in fixed_items if q.variant == f"{domain}/mcqa")
        assert set(golds) == set("abcd") and max(golds.values()) - min(golds.values()) <= 1, (domain, golds)
        labels = collections.Counter(q.target for q in fixed_items if q.variant == f"{domain}/tf")
        assert abs(labels["true"] - labels["false"]) <= 1, (domain, labels)
    # The exemplars' gold letters are balanced too (not the seed's fixed pattern).
    shown = collections.Counter(line[1] for q in fixed_items if q.variant == "general/mcqa"
                                for line in q.input.split("\n\n") if len(line) > 3 and line[0] == "(" and
                                line[2:4] == ") " and "\n" not in line)
    assert max(shown.values()) - min(shown.values()) <= 1
    # The Legal blank is filled where it is.
    statements = {q.metadata["statement"]: q.input for q in fixed_items
                  if q.variant == "legal/tf" and q.metadata["question"].startswith("Applications")}
    assert any(p.endswith("Q. In 2020, Applications are filed with the Board, which decides them.\n")
               for p in statements.values())
    # Draws depend on (row, year, draw) only: the same questions when the rows arrive in another order.
    other = KgliteStore(":memory:")
    chroknow.load(other, [BENCH / "TimeVariant_General_Static.jsonl", BENCH / "Fewshots"])
    chroknow.load(other, [*sorted(BENCH.glob("TimeVariant_*.jsonl"), reverse=True)])
    again = generate("chroknow", other, snapshot.current(other), {"protocol": "chronokg"})[0]
    assert sorted(q.id for q in again) == sorted(q.id for q in fixed_items)


# --- metadata, answer keys, aging ------------------------------------------------------------------------------------


def test_metadata_carries_what_the_chroknow_metrics_need(seed_items: list[Question]) -> None:
    q = pick(seed_items, "generation", 2019, draw=3, subject="Donald Tusk")
    m = q.metadata
    assert (m["year"], m["relation"], m["temporal_state"], m["split"], m["years"]) == (
        2019, "position held", "dynamic", "Dynamic", [2019, 2020, 2021])
    assert m["gold_aliases"] == ["President of the European Council", "chairperson"]
    assert m["decoding"]["temperatures"] == [0.0, 0.7] and m["decoding"]["max_tokens"] == 50
    assert m["answer_format"]["prefix"] == "A. " and m["answer_format"]["threshold"] == 70
    assert q.target_date == dt.date(2019, 1, 1)
    merkel = pick(seed_items, "tf", 2020, subject="Angela Merkel")
    assert merkel.metadata["temporal_state"] == "static" and merkel.metadata["split"] == "Static"
    ronaldo = pick(seed_items, "generation", 2017, subject="Cristiano Ronaldo")
    assert ronaldo.metadata["gold_aliases"] == ["Real Madrid CF", "Real Madrid",
                                                "Portugal national association football team"]
    # One fact_key per row: every year and draw of a (subject, relation) groups into one fact.
    keys = {q.metadata["fact_key"] for q in seed_items if q.metadata["subject"] == "Donald Tusk"}
    assert len(keys) == 1
    # The answer key is the graph's facts of that (subject, relation) in that year.
    assert q.answer_key.query == "facts-during"
    assert {r["caption"] for r in q.answer_key.evidence} == {"President of the European Council", "chairperson"}


def test_verify_is_clean_then_flags_exactly_the_changed_year(seed_items: list[Question], tmp_path: Path) -> None:
    s = KgliteStore(":memory:")
    chroknow.load(s, [BENCH])
    assert verify_questions(s, seed_items).changed == []
    newer = dict(raw("TimeVariant_General_Dynamic.jsonl")[0])
    newer["objects_2021"] = [["chairperson"], ["Prime Minister of Poland"]]
    path = tmp_path / "newer.jsonl"
    path.write_text(json.dumps(newer) + "\n")
    chroknow.load(s, [path])
    report = verify_questions(s, seed_items)
    flagged = {c.id for c in report.changed}
    assert flagged == {q.id for q in seed_items if q.metadata["subject"] == "Donald Tusk" and q.metadata["year"] ==
                       2021}
    # chairperson still holds: the targets stand (a TF statement of the gold stays true).
    assert {(c.old_target, c.new_target) for c in report.changed if c.variant == "general/tf"} == {("true", "true")}


def test_cli_generate_then_bench_verify_reports_nothing_changed(tmp_path: Path) -> None:
    runner = CliRunner()
    uri = f"kglite://{tmp_path}/s.kgl"
    assert runner.invoke(app, ["--store", uri, "ingest", "chroknow", str(BENCH)]).exit_code == 0
    out = tmp_path / "chroknow.jsonl"
    result = runner.invoke(app, ["--store", uri, "generate", "chroknow", "--out", str(out), "--templates", "mcqa"])
    assert result.exit_code == 0, result.output
    assert "general/mcqa: 60" in result.output
    result = runner.invoke(app, ["--store", uri, "bench", "verify", str(out), "--fail-on-change"])
    assert result.exit_code == 0, result.output
    assert "0 answers changed, 0 evidence only" in result.output
    result = runner.invoke(app, ["--store", uri, "generate", "chroknow", "--out", str(out), "--domains", "Sports"])
    assert result.exit_code == 2 and "--domains: Input should be 'General'" in result.output


# --- the seed's own data format --------------------------------------------------------------------------------------


def test_seed_format_rows_are_what_chroknowledge_reads(seed_items: list[Question], tmp_path: Path) -> None:
    canonical = tmp_path / "chroknow.jsonl"
    write_jsonl(canonical, seed_items)
    files = write_seed("chroknow", list(read_jsonl(canonical)), tmp_path / "seed")
    root = tmp_path / "seed" / "chroknow_ChroKnowBench"
    side_file = tmp_path / "seed" / "chroknow_chronokg_ids.jsonl"
    assert {p.relative_to(root).as_posix() for p in files if p != side_file} == {
        "TimeVariant_General_Dynamic.jsonl", "TimeVariant_General_Static.jsonl", "TimeVariant_Legal_Dynamic.jsonl",
        "TimeVariant_Biomedical_Dynamic.jsonl", "Fewshots/Fewshot_General.jsonl", "Fewshots/Fewshot_Legal.jsonl",
        "Fewshots/Fewshot_Biomedical.jsonl"} and side_file in files

    def seed_load(path: Path) -> list[dict[str, Any]]:  # sources/utils.py:46-51
        return [json.loads(line.strip()) for line in path.read_text(encoding="utf-8").splitlines()]

    ids = {q.id for q in seed_items}
    ids_side = [json.loads(x) for x in (tmp_path / "seed" / "chroknow_chronokg_ids.jsonl").read_text().splitlines()]
    for name in ("TimeVariant_General_Dynamic.jsonl", "TimeVariant_General_Static.jsonl",
                 "TimeVariant_Legal_Dynamic.jsonl", "TimeVariant_Biomedical_Dynamic.jsonl"):
        exported, original = seed_load(root / name), raw(name)
        assert len(exported) == len(original)
        side = [r for r in ids_side if r["file"] == f"chroknow_ChroKnowBench/{name}"]
        assert [r["record"] for r in side] == list(range(len(exported)))
        for out, row, mapped in zip(exported, original, side, strict=True):
            assert set(mapped["chronokg_ids"]) <= ids and len(mapped["chronokg_ids"]) % 15 == 0
            # Exactly the released row's keys in its order, every field the seed reads as the row has it (the
            # distractors as shown).
            assert list(out) == [k for k, v in row.items() if v is not None]
            assert {k: v for k, v in out.items() if k != "distractor"} == {
                k: v for k, v in row.items() if k != "distractor" and v is not None}
            assert len(out["distractor"]) == 3
            if row["subject" if "subject" in row else "question"] != "Ursula von der Leyen":
                assert out["distractor"] == row["distractor"]
    pool = {r["subject"]: r for r in raw("Fewshots/Fewshot_General.jsonl")}
    for shot in seed_load(root / "Fewshots" / "Fewshot_General.jsonl"):
        source = pool[shot["subject"]]
        assert all(source[k] == v for k, v in shot.items())  # the years it was used for, as released
        assert list(shot) == [k for k in source if k in shot]  # in the released key order


# --- Legal cloze items from CFR changes ------------------------------------------------------------------------------

EDITS = [("$1,019 per year", "$1,120 per year"), ("is $30. The price", "is $35. The price"),
         ("annually revised", "biennially revised"), ("(3) News conferences", "(3) Press conferences"),
         ("cooperate in keeping", "assist in keeping"), ("is the Chairman;", "is the Chair;"),
         ("8:45 a.m.", "9:00 a.m."), ("suite A–734", "suite A–800"),
         ("not later than the working day", "not later than the business day"),
         ("designated by the Attorney General", "designated by the Deputy Attorney General")]
# What each edit blanks (whole words, closing punctuation left out) and its answer in the 2022 and 2023 editions.
# "8:45" -> "9:00" changes two regions (8, 45) and the last edit inserts a word: neither is a cloze item.
SPANS = {("$1,019", "$1,120"), ("$30", "$35"), ("annually", "biennially"), ("News", "Press"),
         ("cooperate", "assist"), ("Chairman", "Chair"), ("A–734", "A–800"), ("working", "business")}


@pytest.fixture(scope="module")
def cfr_store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> KgliteStore:
    sample = shared_data / "ecfr-title1" / "ECFR-title1.subset.xml"
    text = sample.read_text(encoding="utf-8").replace("<AMDDATE>Dec. 29, 2022(fm)", "<AMDDATE>Mar. 1, 2023(fm)")
    for old, new in EDITS:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    edition2 = tmp_path_factory.mktemp("cfr") / "ECFR-title1.ed2.xml"
    edition2.write_text(text, encoding="utf-8")
    s = KgliteStore(":memory:")
    cfr.load(s, [sample])
    cfr.load(s, [edition2])
    return s


def test_cfr_changes_become_cloze_items(cfr_store: KgliteStore) -> None:
    items, ctx = generate("chroknow", cfr_store, snapshot.current(cfr_store), {})
    gens = [q for q in items if q.variant == "legal/generation"]
    answers = {(q.metadata["fact_key"], q.metadata["year"]): q.target for q in gens}
    pairs = {tuple(answers[k, y] for y in (2022, 2023)) for k, _ in answers}
    assert pairs == SPANS
    assert len(items) == len(SPANS) * 2 * 5 * 3 and not ctx.notes
    for q in gens:
        question = q.metadata["question"]
        assert question.count("____") == 1
        # Filling the blank with a year's answer gives that edition's paragraph (the answer key's evidence).
        (evidence,) = q.answer_key.evidence
        assert question.replace("____", q.target) == evidence["value"]
        assert q.answer_key.params["from"] == ("2022-12-29" if q.metadata["year"] == 2022 else "2023-03-01")
    assert verify_questions(cfr_store, items).changed == []
    # Distractors are other paragraphs' spans, never one of this paragraph's own.
    for q in items:
        own = {q.metadata["gold_text"]} | {q2.target for q2 in gens if q2.metadata["fact_key"] ==
                                           q.metadata["fact_key"]}
        assert not own & {d["text"] for d in q.metadata["distractors"]}
        assert all(d["source"] == "graph" for d in q.metadata["distractors"])


def test_word_span_widens_to_whole_words() -> None:
    text = "is $1,120 per year (see A–800)."
    start = text.index("120")
    assert text[slice(*word_span(text, start, start + 3))] == "$1,120"
    start = text.index("800")
    assert text[slice(*word_span(text, start, start + 3))] == "A–800"


# --- distractors written by a model (skipped until chronokg.models and its loopback server land) ---------------------


def test_model_written_distractors_are_checked_against_the_graph(store: KgliteStore) -> None:
    server_mod = pytest.importorskip("chronokg.testing.openai_server")
    pytest.importorskip("chronokg.models")
    from chronokg.bench.llm import open_model
    from chronokg.testing.replies import Reply

    def script(request: Any) -> Reply:
        text = request.last_user_text
        assert "What office does Ursula von der Leyen hold?" in text
        assert "'Federal Minister of Defence', 'President of the European Commission'" in text
        return Reply(text=json.dumps({"distractors": ["Federal Minister of Defence", "NATO Secretary General",
                                                      "Mayor of Hanover"]}))

    with server_mod.OpenAIServer(script=script) as server:
        model = open_model("openai-compat/m", base_url=server.url)
        items = generate("chroknow", store, snapshot.current(store), {"domains": ["General"]}, model=model)[0]
        system = server.bodies[0]["messages"][0]["content"]
    assert system.startswith("You are an expert in natural language processing and logic puzzles")
    vdl = pick(items, "mcqa", 2020, subject="Ursula von der Leyen")
    assert [(d["text"], d["source"]) for d in vdl.metadata["distractors"]] == [
        ("Chancellor of Germany", "source"), ("NATO Secretary General", "llm"), ("Mayor of Hanover", "llm")]


def test_since_builds_only_what_was_added(tmp_path: Path) -> None:
    s = KgliteStore(":memory:")
    chroknow.load(s, [BENCH])
    snap = snapshot.record(s)
    new = tmp_path / "TimeVariant_Legal_Dynamic.jsonl"
    row = {"question": "The ____ may waive the fee.", "question_type": "Organization", "answers_2020": ["Director"],
           "answers_2021": ["Administrator"], "release_date_2020": "2020-01-01", "release_date_2021": "2021-01-01",
           "distractor": ["Secretary", "Board", "Commission"]}
    new.write_text(json.dumps(row) + "\n")
    chroknow.load(s, [new])
    added = snapshot.added_since(s, snap)
    items, _ = generate("chroknow", s, snapshot.current(s), {}, since=added)
    assert {q.metadata["question"] for q in items} == {row["question"]}
    assert len(items) == 2 * 5 * 3
    full, _ = generate("chroknow", s, snapshot.current(s), {})
    # The seed's draws are replayed over every row, so the prompts are the ones a full run gives.
    assert {q.id for q in items} <= {q.id for q in full}


def test_rows_of_an_unnamed_file_are_left_out_with_a_note() -> None:
    s = KgliteStore(":memory:")
    chroknow.load(s, [BENCH.parent / "invariant.jsonl"])
    items, ctx = generate("chroknow", s, snapshot.current(s), {})
    assert items == [] and any("invariant.jsonl" in n and "seed domain" in n for n in ctx.notes)
