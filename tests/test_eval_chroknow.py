"""ChroKnow evaluation: baselines through the real runner give the categories the rules predict, pure and
Cypher metrics agree, every category rule is checked by hand, the seed-format export re-scores to the same
categories, and ChroKnowPrompt runs against the loopback model server with the seed's prompts.

Questions are generated (`--protocol seed`) from the self-authored ChroKnowBench fixtures in
tests/fixtures/chroknow/bench/. The expected categories of the date-moving baselines are derived here from
the raw fixture rows (which objects a row lists for which year), independently of chronokg's code.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.family import generate
from chronokg.bench.question import Question, write_jsonl
from chronokg.eval import chroknow_prompt as ckp
from chronokg.eval import runner
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import SampleRecord, latest
from chronokg.eval.profiles.chroknow import PROFILE, fuzzy
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import chroknow
from chronokg.metrics.chroknow import (
    ANSWERS,
    FACT_SPLIT,
    PROMPT_GAIN,
    YEAR_SPLIT,
    fact_category,
    year_category,
    years_of,
)
from chronokg.metrics.runs import export_seed
from chronokg.metrics.spec import for_family
from chronokg.models import ChatMessage
from chronokg.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.slow  # whole evaluation runs and their plots


BENCH = Path(__file__).parent / "fixtures" / "chroknow" / "bench"
FROZEN = 2019
SEED_MODELS = ["baseline/oracle", f"baseline/frozen:{FROZEN}", "baseline/latest-only", "baseline/random:1",
               "baseline/always-yes"]
FIXED_MODELS = ["baseline/oracle", f"baseline/frozen:{FROZEN}", "baseline/latest-only"]


def rows(domain: str = "*") -> list[dict[str, Any]]:
    out = []
    for path in sorted(BENCH.glob(f"TimeVariant_{domain}_*.jsonl")):
        out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def year_objects(row: dict[str, Any]) -> dict[int, list[list[str]]]:
    """Per year, each object as its list of aliases (plain strings are one-alias objects)."""
    prefix = "answers_" if "question" in row else "objects_"
    return {int(k[len(prefix):]): [v if isinstance(v, list) else [v] for v in vs]
            for k, vs in row.items() if k.startswith(prefix)}


def expected(row: dict[str, Any], template: str, at: int | None) -> str:
    """The category of a baseline answering every year y as of year `at` (None: the year itself; a year
    after y keeps y's own window, as frozen-at-cutoff does): a year is right when the object the template
    asks about (generation: any of the year's objects; MCQA/TF: the first) is listed for the answering year."""
    objs = year_objects(row)
    flags = []
    for y in sorted(objs):
        when = y if at is None or (at != -1 and y <= at) else (max(objs) if at == -1 else at)
        held = {a.lower() for o in objs.get(when, []) for a in o}
        asked = objs[y] if template == "generation" else objs[y][:1]
        flags.append(any(a.lower() in held for o in asked for a in o))
    if all(flags):
        return "Known"
    if not any(flags):
        return "Unknown"
    cut = flags.index(not flags[0])
    return "Cut-off" if all(f == flags[0] for f in flags[:cut]) and all(f != flags[0] for f in flags[cut:]) \
        else "Partial_known"


def key_of(row: dict[str, Any]) -> str:
    return str(row.get("subject") or row.get("question"))


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("ck-eval")
    path = tmp / "store.kgl"
    with KgliteStore(path, durable="off") as store:
        chroknow.load(store, [BENCH])
    out: dict[str, Any] = {"path": path, "tmp": tmp}
    with KgliteStore(path, read_only=True) as store:
        questions = generate("chroknow", store, snapshot.current(store), {"cfr": False})[0]
        qfile = tmp / "questions.jsonl"
        write_jsonl(qfile, questions)
        out["questions"] = questions
        out["qfile"] = qfile
        for protocol, models in (("seed", SEED_MODELS), ("chronokg", FIXED_MODELS)):
            options = runner.RunOptions(protocol=protocol, cache=False, concurrency=16)
            folder, info = runner.prepare(tmp / "runs", [qfile], [runner.ModelEntry(spec=m) for m in models],
                                          options)
            info, _ = runner.run(folder, info, runner.load_questions([qfile], None), store)
            out[protocol] = {"folder": folder, "info": info,
                             "samples": list(latest(folder / "samples.jsonl").values())}
    with KgliteStore(path) as store:
        for protocol in ("seed", "chronokg"):
            run = out[protocol]
            write_predictions(store, run["info"], questions, run["samples"])
    return out


def per_fact(evaluated: dict[str, Any], protocol: str, model: str) -> dict[tuple[str, str], str]:
    """(template, subject or question) -> the fact category the metric's rules give."""
    by_key = {q.metadata["fact_key"]: q for q in evaluated["questions"]}
    rows_ = [r for r in _count(evaluated[protocol]["samples"], model)]
    out = {}
    for (template, _, _, fact), years in years_of(rows_).items():
        m = by_key[fact].metadata
        out[(template, str(m.get("subject") or m.get("question")))] = fact_category([years[y] for y in sorted(years)])
    return out


def _count(samples: list[SampleRecord], model: str) -> list[dict[str, Any]]:
    return FACT_SPLIT.count([s for s in samples if s.model == model])


def test_every_sample_answered_twice_per_draw(evaluated: dict[str, Any]) -> None:
    seed = evaluated["seed"]
    assert seed["info"].status == "complete"
    assert len(seed["samples"]) == 2 * len(evaluated["questions"]) * len(SEED_MODELS)
    greedy = [s for s in seed["samples"] if s.sample == 0]
    assert {s.fields["draw"] for s in greedy} == {0, 1, 2, 3, 4}


def test_oracle_knows_every_fact(evaluated: dict[str, Any]) -> None:
    cats = per_fact(evaluated, "chronokg", "baseline/oracle")
    assert len(cats) == 3 * len(rows()) and set(cats.values()) == {"Known"}
    assert FACT_SPLIT.compute(evaluated["chronokg"]["samples"], "baseline/oracle").value == 1.0
    years = YEAR_SPLIT.compute(evaluated["chronokg"]["samples"], "baseline/oracle")
    assert years.value == 1.0 and all(c["percent_correct"] == 100 for g in years.groups.values() for c in g.values())


def test_oracle_under_the_seed_rules_misses_plain_string_general_rows(evaluated: dict[str, Any]) -> None:
    """process.py flattens General objects as lists of alias lists: a plain string becomes its characters, so
    no answer matches (generation and MCQA); TF ignores the gold. Everything else is Known."""
    cats = per_fact(evaluated, "seed", "baseline/oracle")
    plain = {key_of(r) for r in rows("General") if any(
        isinstance(v, str) for k, vs in r.items() if k.startswith("objects_") for v in vs)}
    assert plain == {"Angela Merkel"}
    for (template, subject), category in cats.items():
        wrong = subject in plain and template != "tf"
        assert category == ("Unknown" if wrong else "Known"), (template, subject)


@pytest.mark.parametrize("protocol", ["seed", "chronokg"])
def test_frozen_at_cutoff_is_cut_off_where_the_answer_changed_after_it(evaluated: dict[str, Any],
                                                                       protocol: str) -> None:
    cats = per_fact(evaluated, protocol, f"baseline/frozen:{FROZEN}")
    seen = Counter()
    for row in rows():
        for template in ("generation", "mcqa", "tf"):
            want = expected(row, template, FROZEN)
            if protocol == "seed" and key_of(row) == "Angela Merkel" and template != "tf":
                want = "Unknown"  # the seed's gold set of characters (see the oracle test)
            assert cats[(template, key_of(row))] == want, (template, key_of(row))
            seen[want] += 1
    assert seen["Cut-off"] >= 4 and seen["Known"] >= 6 and seen["Unknown"] == 3 + (2 if protocol == "seed" else 0)


def test_latest_only_is_cut_off_from_the_other_side(evaluated: dict[str, Any]) -> None:
    """Answering every year with today's objects: wrong before the last change, right after it."""
    cats = per_fact(evaluated, "chronokg", "baseline/latest-only")
    for row in rows():
        for template in ("generation", "mcqa", "tf"):
            assert cats[(template, key_of(row))] == expected(row, template, -1), (template, key_of(row))
    assert Counter(cats.values())["Cut-off"] >= 6


def test_random_is_mostly_unknown_and_never_known(evaluated: dict[str, Any]) -> None:
    cats = per_fact(evaluated, "seed", "baseline/random:1")
    assert "Known" not in cats.values()
    assert all(c == "Unknown" for (template, _), c in cats.items() if template == "generation")
    assert Counter(cats.values())["Unknown"] > len(cats) / 3


def test_always_true_knows_every_tf_fact_under_the_seed(evaluated: dict[str, Any]) -> None:
    """The seed's TF target is always the true statement and its check ignores the gold (Q-G2, Q-S8)."""
    cats = per_fact(evaluated, "seed", "baseline/always-yes")
    assert all(c == "Known" for (template, _), c in cats.items() if template == "tf")
    assert all(c == "Unknown" for (template, _), c in cats.items() if template == "generation")


def test_pure_and_cypher_metrics_agree(evaluated: dict[str, Any]) -> None:
    with KgliteStore(evaluated["path"], read_only=True) as store:
        for protocol, models in (("seed", SEED_MODELS), ("chronokg", FIXED_MODELS)):
            run = evaluated[protocol]
            for spec in for_family(["chroknow"]):
                assert spec.cypher is not None
                for model in models:
                    pure = spec.compute(run["samples"], model)
                    graph = spec.from_graph(store, run["info"].run_id, model)
                    assert pure.model_dump() == graph.model_dump(), (spec.name, model)


# --- the seed's result files --------------------------------------------------------------------------------


def _reparse(raw: list[str]) -> list[str]:
    """process.py:19-32, written again for this test: keep outputs starting "A. ", first line, minus "A. "."""
    return [r.split("\n")[0][3:].strip() for r in raw if r.startswith("A. ")]


def _gold_set(row: dict[str, Any], year: int, domain: str) -> set[str]:
    if domain == "Legal":
        return set(row[f"answers_{year}"])
    if domain == "General":
        return {str(o) for group in row[f"objects_{year}"] for o in group}
    return set(row[f"objects_{year}"])


def test_seed_format_export_rescored_as_the_seed_does(evaluated: dict[str, Any], tmp_path: Path) -> None:
    """`eval export` writes Result_TimeVariant_{domain}_{split}_temp{T}.json per template and model: a list
    aligned with the exported benchmark rows, each `{"objects_YYYY": [5 generations]}`. Scoring those files
    with the seed's rules (re-written here) gives the categories of the metric."""
    run = evaluated["seed"]
    written = export_seed(run["folder"], tmp_path / "out")
    bench = write_seed("chroknow", evaluated["questions"], tmp_path / "bench")
    assert bench
    model = "baseline_frozen_2019"
    for domain, split in (("General", "Dynamic"), ("Legal", "Dynamic"), ("General", "Static")):
        bench_rows = [json.loads(line) for line in (tmp_path / "bench" / "chroknow_ChroKnowBench" / (
            f"TimeVariant_{domain}_{split}.jsonl")).read_text(encoding="utf-8").splitlines()]
        base = tmp_path / "out" / "chroknow" / "generation" / "Results" / model
        greedy = json.loads((base / f"Result_TimeVariant_{domain}_{split}_temp0.0.json").read_text())
        sampled = json.loads((base / f"Result_TimeVariant_{domain}_{split}_temp0.7.json").read_text())
        assert len(greedy) == len(sampled) == len(bench_rows)
        cats = per_fact(evaluated, "seed", f"baseline/frozen:{FROZEN}")
        side = [json.loads(x) for x in (tmp_path / "out" / "chroknow" / "chroknow_chronokg_ids.jsonl")
                .read_text(encoding="utf-8").splitlines()]
        name = f"generation/Results/{model}/Result_TimeVariant_{domain}_{split}_temp0.0.json"
        mine = [r for r in side if r["file"] == name]  # one line per generation: its row, year and draw
        assert sorted((r["record"], r["year"], r["draw"]) for r in mine) == sorted(
            (n, int(k[8:]), d) for n, g in enumerate(greedy) for k, texts in g.items() for d in range(len(texts)))
        assert "chronokg_id" not in (base / name.rsplit("/", 1)[1]).read_text(encoding="utf-8")
        for row, g, s in zip(bench_rows, greedy, sampled, strict=True):
            years = sorted(int(k[8:]) for k in g)
            assert all(len(g[f"objects_{y}"]) == 5 for y in years)
            per_year = []
            for y in years:
                gold = {x.lower() for x in _gold_set(row, y, domain)}
                gs, ss = _reparse(g[f"objects_{y}"]), _reparse(s[f"objects_{y}"])
                match = [any(fuzzy(a, [x]) for x in gold) for a in gs]
                smatch = [any(fuzzy(a, [x]) for x in gold) for a in ss]
                per_year.append(year_category(len(gs), sum(match), sum(smatch)))
            assert fact_category(per_year) == cats[("generation", key_of(row))], key_of(row)
    assert any(p.name.endswith("temp0.7.json") for p in written)


# --- hand-computed cases ----------------------------------------------------------------------------------------


def test_year_category_every_branch() -> None:
    assert year_category(5, 5, 0) == "correct"
    assert year_category(5, 2, 0) == "partial_correct1"
    assert year_category(5, 0, 1) == "partial_correct2"
    assert year_category(5, 0, 0) == "incorrect"
    assert year_category(0, 0, 3) == "partial_correct2"  # every greedy answer dropped: the sampled branch
    assert year_category(0, 0, 0) == "incorrect"
    assert year_category(2, 2, 0) == "correct"  # seed: "all" over the parsed greedy answers only


def test_fact_category_every_branch() -> None:
    c, p1, p2, i = "correct", "partial_correct1", "partial_correct2", "incorrect"
    assert fact_category([c, c, c, c, c]) == "Known"
    assert fact_category([i, i, i]) == "Unknown"
    assert fact_category([c, p1, i, i, i]) == "Cut-off"  # known early, then lost
    assert fact_category([i, i, p2, c, c]) == "Cut-off"  # unknown early, known from some year on
    assert fact_category([c, i, c, c, c]) == "Partial_known"
    assert fact_category([p1, c, c, c, c]) == "Partial_known"  # no incorrect year, not all correct
    assert fact_category([i, c, i]) == "Partial_known"
    assert fact_category([c, i, p2]) == "Partial_known"


def srec(sample: int, correct: bool, parsed: bool = True, protocol: str = "seed", **fields: Any) -> SampleRecord:
    base = {"kind": "check", "template": "generation", "domain": "General", "split": "Dynamic", "fact_key": "f1",
            "year": 2020, "draw": 0, "parsed": parsed, "protocol": protocol}
    return SampleRecord(question_id=f"q{id(fields)}-{sample}-{correct}-{parsed}", model="m", sample=sample,
                        family="chroknow", correct=correct and parsed, fields={**base, **fields})


def test_categories_by_hand_from_samples() -> None:
    samples = [
        # f1 2020: greedy 2 of 5 right -> partial_correct1; 2021: greedy 0, one sampled right -> partial_correct2
        *[srec(0, k < 2, draw=k) for k in range(5)], *[srec(1, False, draw=k) for k in range(5)],
        *[srec(0, False, year=2021, draw=k) for k in range(5)], srec(1, True, year=2021),
        # f2: 2020 all greedy right (two unparsed, dropped by the seed) -> correct; 2021 nothing right -> incorrect
        *[srec(0, True, fact_key="f2", draw=k) for k in range(3)],
        *[srec(0, False, parsed=False, fact_key="f2", draw=k) for k in (3, 4)],
        *[srec(0, False, fact_key="f2", year=2021, draw=k) for k in range(5)],
    ]
    years = YEAR_SPLIT.compute(samples, "m")
    g = years.groups["generation/General/Dynamic"]
    assert g["2020"]["correct"] == 1 and g["2020"]["partial_correct1"] == 1 and g["2020"]["percent_correct"] == 50
    assert g["2021"]["partial_correct2"] == 1 and g["2021"]["incorrect"] == 1
    assert years.value == pytest.approx(1 / 4)
    facts = FACT_SPLIT.compute(samples, "m")
    assert facts.details["Partial_known"] == 1 and facts.details["Cut-off"] == 1 and facts.value == 0
    # chronokg: the two unparsed greedy answers count as wrong -> f2 2020 partial_correct1 (f2 still Cut-off)
    fixed = [s.model_copy(update={"fields": {**s.fields, "protocol": "chronokg"}}) for s in samples]
    assert YEAR_SPLIT.compute(fixed, "m").groups["generation/General/Dynamic"]["2020"]["partial_correct1"] == 2
    assert FACT_SPLIT.compute(fixed, "m").details["Cut-off"] == 1
    answers = ANSWERS.compute(samples, "m")
    assert answers.groups["generation/greedy"]["unparsed"] == 2
    assert answers.value == pytest.approx(2 / len(samples))


def test_prompt_gain_by_hand() -> None:
    def prec(before: str, after: str, previous: str) -> SampleRecord:
        return SampleRecord(question_id=f"{before}{after}{previous}{id(before)}", model="m", family="chroknow",
                            correct=after == "Known", fields={
                                "kind": "prompt", "template": "generation", "domain": "General",
                                "split": "Dynamic", "before": before, "after": after, "after_previous": previous})
    samples = [prec("Known", "Known", "Known"), prec("Partial_known", "Known", "Partial_known"),
               prec("Partial_known", "Known", "Known"), prec("Partial_known", "Partial_known", "Partial_known"),
               prec("Unknown", "Unknown", "Unknown")]
    gain = PROMPT_GAIN.compute(samples, "m")
    assert gain.value == pytest.approx(100 * 2 / 5)
    assert gain.details["gain_previous"] == pytest.approx(100 * 1 / 5)
    assert gain.details["known_before"] == 1 and gain.details["known_after"] == 3


def q(template: str, **meta: Any) -> Question:
    base = {"domain": "General", "origin": "chroknowbench", "template": template, "fact_key": "f", "year": 2020,
            "draw": 0, "gold_objects": [["Manchester United F.C.", "Manchester United"]],
            "gold_aliases": ["Manchester United F.C.", "Manchester United"]}
    choices = [{"label": x, "text": t} for x, t in zip("abcd", ["Arsenal", "Chelsea", "Everton",
                                                                  "Manchester United F.C."], strict=True)]
    return Question.model_validate({
        "id": "q", "family": "chroknow", "variant": f"general/{template}", "input": "x", "target": "d",
        "snapshot": "s", "answer_key": {"query": "facts-during", "params": {}, "evidence": [], "evidence_hash": "h"},
        "choices": choices if template == "mcqa" else [], "metadata": {**base, **meta}})


def read(question: Question, output: str, protocol: str = "seed") -> tuple[bool | None, dict[str, Any]]:
    answer = PROFILE.extract(question, output, protocol)
    correct, _, fields = PROFILE.score(question, answer, protocol)
    return correct, fields


def test_seed_extraction_and_matching_cases() -> None:
    gen = q("generation")
    assert read(gen, "A. Manchester City")[0] is True  # token_set_ratio 81.25 >= 70: the seed's fuzzy rule
    assert read(gen, "A. manchester united\nQ. In 2021")[0] is True  # first line only
    assert read(gen, " A. Manchester United") == (False, read(gen, " A. Manchester United")[1])
    assert read(gen, " A. Manchester United")[1]["parsed"] is False  # no leading "A. ": dropped
    assert read(gen, " A. Manchester United", "chronokg")[0] is True
    assert read(gen, "A. Liverpool")[0] is False
    assert fuzzy("the", ["the hague"]) and not fuzzy("paris", ["london"])
    tf = q("tf", expected="true")
    assert read(tf, "A. untrue")[0] is True  # the seed's substring test (Q-S8)
    assert read(tf, "A. untrue", "chronokg")[0] is False
    assert read(tf, "A. false", "chronokg")[0] is False and read(tf, "A. True.", "chronokg")[0] is True
    mcqa = q("mcqa")
    assert read(mcqa, "(d)")[0] is False  # a bare letter never fuzzy-matches the gold text (Q-S5)
    assert read(mcqa, "(d)", "chronokg")[0] is True
    assert read(mcqa, "(d) Manchester United F.C.")[0] is True
    assert read(mcqa, "(a) Arsenal")[1]["letter"] == "a"


def test_seed_gold_set_of_a_plain_string_general_row_is_its_characters() -> None:
    plain = q("generation", gold_objects=["Leipzig University"], gold_aliases=["Leipzig University"])
    assert read(plain, "A. Leipzig University")[0] is False
    assert read(plain, "A. Leipzig University", "chronokg")[0] is True
    assert read(plain, "A. l")[0] is True  # one of the characters


def test_decoding_is_the_seeds_two_runs() -> None:
    gen = q("generation")
    assert PROFILE.samples(gen, "seed", 1) == 2 and PROFILE.samples(gen, "seed", 9) == 2
    assert PROFILE.samples(gen, "chronokg", 6) == 6
    greedy, sampled = PROFILE.config(gen, "seed", 0), PROFILE.config(gen, "seed", 1)
    assert (greedy.temperature, sampled.temperature) == (0.0, 0.7)
    assert greedy.max_tokens == 50 and greedy.stop == ["\n"] and greedy.top_p == 1.0 and greedy.seed == 42
    request = PROFILE.request(gen, "seed", 1)
    assert request.prompt == "x" and request.messages is None  # raw completion text, no chat template


# --- ChroKnowPrompt -----------------------------------------------------------------------------------------


def trace_fact() -> ckp.FactState:
    """The seed notes' worked trace: Nana Akwasi Asare / member of sports team, 2010-2014; 2012 incorrect,
    2013 partial_correct1 with T=0.7 answers [FC Utrecht], the other years correct with FC Utrecht."""
    years = {}
    for y in range(2010, 2015):
        category = {2012: "incorrect", 2013: "partial_correct1"}.get(y, "correct")
        years[y] = ckp.Year(category, ["FC Utrecht"] * 5 if category == "correct" else ["Ajax"],
                            ["FC Utrecht"], [["FC Utrecht"]], f"q{y}")
    return ckp.FactState("f", {"domain": "General", "split": "Dynamic", "subject": "Nana Akwasi Asare",
                               "relation": "member of sports team"}, years)


def traverse(fact: ckp.FactState, protocol: str, model: str = "m") -> tuple[list[list[ChatMessage]], Any]:
    seen: list[list[ChatMessage]] = []

    async def call(messages: list[ChatMessage], _: str) -> str:
        seen.append(messages)
        return f"A. answer{len(seen)}"

    traversal = ckp.Traversal(fact, model, protocol, 3, 3, call)
    result = asyncio.run(traversal.run(2012))
    return seen, result


NONE = "Answer 'Candidate A. [Object]' based on the timestamp. Output only the answer, 'A. [Object]'."
CAND = ("Answer 'Candidate A. [Object]' based on the timestamp. If it is correct, repeat same [Object]. If it is "
        "wrong, generate new [Object]. Output only the answer, 'A. [Object]'.")


def test_chroknow_prompt_reproduces_the_seed_trace() -> None:
    seen, result = traverse(trace_fact(), "seed")
    line = "Q. In {}, Nana Akwasi Asare, member of sports team, [Object]\n"
    assert result == ["answer1", "answer2", "answer3", "answer4"]
    assert [(m[0].content, m[1].content) for m in seen] == [
        (NONE, line.format(2011) + "A. fc utrecht\n\n" + line.format(2012) + "Candidate A. [Object]\n"),
        (CAND, line.format(2010) + "A. fc utrecht\n\n" + line.format(2011) + "A. fc utrecht\n\n" + line.format(2012)
         + "Candidate A. answer1\n"),
        (CAND, line.format(2010) + "A. fc utrecht\n\n" + line.format(2011) + "A. fc utrecht\n\n" + line.format(2012)
         + "Candidate A. answer2\n\n" + line.format(2013) + "A. fc utrecht\n"),
        (CAND, line.format(2010) + "A. fc utrecht\n\n" + line.format(2011) + "A. fc utrecht\n\n" + line.format(2012)
         + "Candidate A. answer3\n\n" + line.format(2013) + "A. fc utrecht\n\n" + line.format(2014)
         + "A. fc utrecht\n"),
    ]
    gemma, _ = traverse(trace_fact(), "seed", "google/gemma-2-9b-it")
    assert len(gemma[0]) == 1 and gemma[0][0].content.startswith(NONE + "\n\n")


def test_chroknow_prompt_seed_quirks_and_their_fixes() -> None:
    fact = trace_fact()
    fact.years[2011].category = "incorrect"  # an incorrect span year: the seed still shows its sampled answer
    seen, _ = traverse(fact, "seed")
    assert "Q. In 2011, Nana Akwasi Asare, member of sports team, [Object]\nA. fc utrecht\n" in seen[0][1].content
    fixed, _ = traverse(fact, "chronokg")
    assert "In 2011" not in fixed[0][1].content and "In 2010" in fixed[0][1].content  # only reference years
    legal = ckp.FactState("l", {"domain": "Legal", "split": "Dynamic", "question": "The ____ shall publish."},
                          {y: ckp.Year("correct" if y != 2012 else "incorrect", ["Director"], ["Director"],
                                       ["Director"], f"q{y}") for y in (2011, 2012)})
    seed_legal, _ = traverse(legal, "seed")
    assert seed_legal[0][1].content == "Q. In 2011, \nA. director\n\nQ. In 2012, \nCandidate A. [Object]\n"  # Q-CP4
    fixed_legal, _ = traverse(legal, "chronokg")
    assert "Q. In 2012, The ____ shall publish.\nCandidate A. [Object]\n" in fixed_legal[0][1].content
    assert ckp.passes("seed", "Dynamic")[1] == "parital_correct2" and ckp.passes("chronokg", "Dynamic")[1] == (
        "partial_correct2")
    assert ckp.clean(["Norwich City", "Sure, FC Utrecht"], "seed") == []  # Q-CP7
    assert ckp.clean(["Norwich City", "Sure, FC Utrecht"], "chronokg") == ["Norwich City"]


def _script(body: dict[str, Any]) -> str:
    """A model that knows Donald Tusk's office except in 2020, answers the ChroKnowPrompt calls right, and
    knows nothing else."""
    if "messages" in body:
        return "A. chairperson" if "Donald Tusk" in body["messages"][-1]["content"] else "A. nothing"
    last = body["prompt"].rstrip("\n").split("\n")[-1]
    if "Donald Tusk" in last:
        return "A. Prime Minister of Poland" if "2020" in last else "A. chairperson"
    return "A. nothing"


def test_chroknow_prompt_against_the_loopback_server(tmp_path: Path) -> None:
    """Real HTTP (loopback OpenAI-compatible server): the knowledge check sends raw completion prompts at T 0
    and 0.7; the Partial_known fact is traversed with chat calls and moves to Known: gain 100 x 1 / 4."""
    path = tmp_path / "store.kgl"
    with KgliteStore(path, durable="off") as store:
        chroknow.load(store, [BENCH])
    with OpenAIServer() as server, KgliteStore(path, read_only=True) as store:
        seen: list[dict[str, Any]] = []

        def script(request: Any) -> str:
            seen.append({"endpoint": request.endpoint, **request.body})
            return _script(request.body)

        server.script = script
        questions = generate("chroknow", store, snapshot.current(store),
                             {"templates": ["generation"], "domains": ["General"], "cfr": False})[0]
        qfile = tmp_path / "q.jsonl"
        write_jsonl(qfile, questions)
        spec = "openai-compat/m"
        options = runner.RunOptions(protocol="seed", cache=False)
        folder, info = runner.prepare(tmp_path / "runs", [qfile], [runner.ModelEntry(spec=spec,
                                                                                   base_url=server.url)], options)
        info, _ = runner.run(folder, info, questions, store)
        completions = [b for b in seen if b["endpoint"] == "completions"]
        assert len(completions) == 2 * len(questions)
        assert {b["temperature"] for b in completions} == {0.0, 0.7}
        assert all(b["max_tokens"] == 50 and b["stop"] == ["\n"] for b in completions)
        assert {b["prompt"] for b in completions} == {q.input for q in questions}
        samples = list(latest(folder / "samples.jsonl").values())
        facts = FACT_SPLIT.compute(samples, spec)
        assert facts.details["Partial_known"] == 1 and facts.details["Unknown"] == 3

        pfolder, pinfo = ckp.prepare(folder, None, ckp.PromptOptions(fraction=1.0, cache=False))
        pinfo, counts = ckp.run_pass(pfolder, pinfo, samples, questions, store)
        assert pinfo.status == "complete" and counts["facts"] == 4
        chats = [b for b in seen if b["endpoint"] == "chat"]
        line = "Q. In {}, Donald Tusk, position held, [Object]\n"
        assert [m["content"] for m in chats[0]["messages"]] == [
            NONE, line.format(2019) + "A. chairperson\n\n" + line.format(2020) + "Candidate A. [Object]\n"]
        assert chats[1]["messages"][1]["content"] == (line.format(2019) + "A. chairperson\n\n" + line.format(2020)
                                                      + "Candidate A. chairperson\n\n" + line.format(2021)
                                                      + "A. chairperson\n")
        assert len(chats) == 2 and chats[0]["temperature"] == 0.0
        records = list(latest(pfolder / "samples.jsonl").values())
        gain = PROMPT_GAIN.compute(records, spec)
        assert gain.value == pytest.approx(25.0) and gain.details["moved"] == 1
        before = server.model_requests
        _, again = ckp.run_pass(pfolder, pinfo, samples, questions, store)
        assert again["skipped"] == 4 and server.model_requests == before  # resumed: nothing asked twice
    with KgliteStore(path) as rw:
        write_predictions(rw, pinfo, questions, records)
    with KgliteStore(path, read_only=True) as ro:
        assert PROMPT_GAIN.from_graph(ro, pinfo.run_id, spec).model_dump() == gain.model_dump()


# --- report plots -------------------------------------------------------------------------------------------


def test_report_plots_chroknow_categories(evaluated: dict[str, Any], tmp_path: Path) -> None:
    """`eval report` draws the ChroKnow plots from the seed run of five baselines (PNG and SVG); the per-year
    counts they draw are the metric's, summed over domains and splits (checked against the metric)."""
    from chronokg.reports import build_report
    from chronokg.reports.families.chroknow import by_template_year

    report = build_report([evaluated["seed"]["folder"]], tmp_path / "report")
    for name in ("chroknow-correct_by_year", "chroknow-categories_by_year", "chroknow-fact_categories"):
        assert (report.out / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert "<svg" in (report.out / "plots" / f"{name}.svg").read_text(encoding="utf-8")
    years = YEAR_SPLIT.compute(evaluated["seed"]["samples"], "baseline/oracle")
    table = by_template_year(years.groups)
    assert set(table) == {"generation", "mcqa", "tf"}
    for template, per_year in table.items():
        for year, counts in per_year.items():
            cells = [g[str(year)] for k, g in years.groups.items() if k.startswith(template + "/") and str(year) in g]
            assert counts == {c: sum(cell[c] for cell in cells) for c in counts}
    assert sum(sum(c.values()) for t in table.values() for c in t.values()) == years.details["n"]


def test_cli_chroknow_prompt_over_a_baseline_run(evaluated: dict[str, Any], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`chronokg eval chroknow-prompt RUN` on the seed run: frozen-at-2019 has no Partial_known fact (its facts
    are Known, Cut-off or Unknown), so every sampled fact keeps its category and the gain is 0; latest-only
    likewise. The pass's run folder holds one record per sampled fact and resumes without new work."""
    from typer.testing import CliRunner

    from chronokg.cli.app import app

    monkeypatch.setenv("CHRONOKG_STORE", f"kglite://{evaluated['path']}")
    args = ["eval", "chroknow-prompt", str(evaluated["seed"]["folder"]), "--fraction", "1", "--no-write",
            "--log-dir", str(tmp_path), "--model", f"baseline/frozen:{FROZEN}", "--no-cache"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    folder = next(tmp_path.glob("run-*"))
    records = list(latest(folder / "samples.jsonl").values())
    cats = per_fact(evaluated, "seed", f"baseline/frozen:{FROZEN}")
    generation = Counter(c for (t, _), c in cats.items() if t == "generation")
    assert len(records) == sum(generation.values()) and all(r.ok for r in records)
    assert Counter(r.fields["before"] for r in records) == generation
    assert all(r.fields["after"] == r.fields["before"] and r.fields["calls"] == 0 for r in records)
    assert "chroknow.prompt_gain" in result.output
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and f"{len(records):,} already done" in again.output
