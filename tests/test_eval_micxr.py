"""MI-CXR evaluation: baselines give the signatures the metrics predict; pure and Cypher metrics agree; the
stage-wise protocol makes two calls and answers from the first call's descriptions.

Questions are generated from a synthetic cohort (`cxr_synth`: no MIMIC data may ship), answered by the
reference baselines through the real runner, and by a real OpenAI-compatible HTTP server on loopback
(`chronokg.testing.openai_server`) in scripted mode standing in for a vision-language model: no model can
run here. For the scripted model the five study images are stand-in files written under an image root at
the questions' MIMIC-CXR-JPG paths (bytes naming the study), so the server can tell windows apart as a
model would from the pixels.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import Question, write_jsonl
from chronokg.errors import ChronoKGError
from chronokg.eval import runner
from chronokg.eval.extract import INVALID
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import SampleRecord, latest
from chronokg.eval.profiles.micxr import PROFILE, letter_fixed, letter_seed, stage1_complete
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import cxr, cxr_synth
from chronokg.metrics import micxr as M
from chronokg.metrics.runs import export_seed, run_samples, score_outputs
from chronokg.metrics.spec import for_family
from chronokg.metrics.stats import wilson
from chronokg.testing.openai_server import Fault, OpenAIServer
from chronokg.testing.replies import ScriptedRequest
from tests.helpers import result_ids

pytestmark = pytest.mark.slow  # the MI-CXR store and whole evaluation runs


BASELINES = ["baseline/oracle", "baseline/random:5", "baseline/constant:E", "baseline/constant:B"]
STAGEWISE = ["baseline/oracle", "baseline/random:5"]
SINGLE_METRICS = ["micxr.accuracy", "micxr.accuracy_by_type", "micxr.table1", "micxr.answers",
                  "micxr.accuracy_bootstrap"]


def run_models(store: Any, qfile: Path, runs: Path, models: list[runner.ModelEntry],
               **options: Any) -> tuple[runner.RunOptions, Path, Any]:
    opts = runner.RunOptions(cache=False, concurrency=16, **options)
    folder, info = runner.prepare(runs, [qfile], models, opts)
    info, _ = runner.run(folder, info, runner.load_questions([qfile], None), store)
    return opts, folder, info


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("micxr-eval")
    cxr_synth.generate(tmp / "cohort", patients=60, visits=6, seed=21, findings=5,
                       patterns=cxr_synth.PATTERNS + cxr_synth.DOUBLE_EVENT_PATTERNS)
    path = tmp / "store.kgl"
    with KgliteStore(path, durable="off") as store:
        cxr.load(store, [tmp / "cohort" / "scene_data", tmp / "cohort" / cxr.SOURCE_FILE])
    with KgliteStore(path, read_only=True) as store:
        questions = generate("micxr", store, snapshot.current(store), {"quota": 20})[0]
        qfile = tmp / "questions.jsonl"
        write_jsonl(qfile, questions)
        _, folder, info = run_models(store, qfile, tmp / "runs", [runner.ModelEntry(spec=b) for b in BASELINES])
        _, sfolder, sinfo = run_models(store, qfile, tmp / "runs", [runner.ModelEntry(spec=b) for b in STAGEWISE],
                                       family_options={"micxr": {"stagewise": True}})
    samples = list(latest(folder / "samples.jsonl").values())
    staged = list(latest(sfolder / "samples.jsonl").values())
    with KgliteStore(path) as store:
        write_predictions(store, info, questions, samples)
        write_predictions(store, sinfo, questions, staged)
    return {"path": path, "tmp": tmp, "qfile": qfile, "questions": questions, "samples": samples,
            "staged": staged, "run": info.run_id, "srun": sinfo.run_id, "folder": folder, "sfolder": sfolder,
            "info": info, "sinfo": sinfo}


def metric(samples: list[SampleRecord], name: str, model: str) -> Any:
    return for_family_map()[name].compute(samples, model)


def for_family_map() -> dict[str, Any]:
    return {m.name: m for m in for_family(["micxr"])}


def test_every_sample_answered_and_the_stagewise_run_is_its_own(evaluated: dict[str, Any]) -> None:
    n = len(evaluated["questions"])
    assert n == 220 and Counter(q.metadata["qtype"] for q in evaluated["questions"]) == dict.fromkeys(M.QTYPES, 20)
    assert evaluated["info"].status == evaluated["sinfo"].status == "complete"
    assert len(evaluated["samples"]) == n * len(BASELINES) and len(evaluated["staged"]) == n * len(STAGEWISE)
    assert evaluated["run"] != evaluated["srun"]  # family options are part of the run id
    assert all(s.fields["mode"] == "single" and not s.steps for s in evaluated["samples"])
    assert all(s.fields["mode"] == "stagewise" and len(s.steps) == 1 for s in evaluated["staged"])


def test_oracle_is_right_everywhere(evaluated: dict[str, Any]) -> None:
    for samples, prefix in ((evaluated["samples"], "micxr."), (evaluated["staged"], "micxr.stagewise.")):
        acc = metric(samples, prefix + "accuracy", "baseline/oracle")
        assert acc.value == 1.0 and acc.details["overall"]["n"] == 220
        assert {f: g["accuracy"] for f, g in acc.groups.items()} == {"TEL": 1.0, "ICR": 1.0, "GTS": 1.0}
        by_type = metric(samples, prefix + "accuracy_by_type", "baseline/oracle").groups
        assert list(by_type) == list(M.QTYPES)
        assert all(g["accuracy"] == 1.0 and g["n"] == 20 for g in by_type.values())
        table = metric(samples, prefix + "table1", "baseline/oracle")
        assert list(table.groups) == [*M.COLUMNS, "Overall"]
        assert all(g["accuracy"] == 1.0 for g in table.groups.values())
        answers = metric(samples, prefix + "answers", "baseline/oracle")
        assert answers.value == 0.0 and answers.groups["predicted"] == answers.groups["key"] | {INVALID: 0.0}
        assert answers.details["e_when_change"] == 0.0 and answers.details["e_when_none"] == 1.0
    # each protocol's metrics see only its own samples
    assert metric(evaluated["staged"], "micxr.accuracy", "baseline/oracle").value is None
    assert metric(evaluated["samples"], "micxr.stagewise.accuracy", "baseline/oracle").value is None


def test_random_is_chance_within_its_interval(evaluated: dict[str, Any]) -> None:
    for samples, prefix in ((evaluated["samples"], "micxr."), (evaluated["staged"], "micxr.stagewise.")):
        acc = metric(samples, prefix + "accuracy", "baseline/random:5")
        lo, hi = acc.details["overall"]["wilson95"]
        assert lo <= 0.2 <= hi and 0.1 < acc.value < 0.3, (prefix, acc.value, lo, hi)
        lo, hi = metric(samples, prefix + "accuracy_bootstrap", "baseline/random:5").groups["Overall"]["bootstrap95"]
        assert lo <= 0.2 <= hi
        letters = metric(samples, prefix + "answers", "baseline/random:5").groups["predicted"]
        assert letters[INVALID] == 0.0 and all(0.1 < letters[x] < 0.3 for x in "ABCDE")


def test_constant_baselines_score_the_share_of_their_letter(evaluated: dict[str, Any]) -> None:
    questions = evaluated["questions"]
    for letter in "EB":
        model = f"baseline/constant:{letter}"
        by_type = metric(evaluated["samples"], "micxr.accuracy_by_type", model).groups
        for qtype in M.QTYPES:
            mine = [q for q in questions if q.metadata["qtype"] == qtype]
            assert by_type[qtype]["correct"] == sum(q.target == letter for q in mine), (model, qtype)
        overall = metric(evaluated["samples"], "micxr.accuracy", model).value
        assert overall == pytest.approx(sum(q.target == letter for q in questions) / len(questions))
    answers = metric(evaluated["samples"], "micxr.answers", "baseline/constant:E")
    assert answers.groups["predicted"]["E"] == 1.0 and answers.details["e_when_change"] == 1.0


def test_pure_and_cypher_metrics_agree(evaluated: dict[str, Any]) -> None:
    specs = [s for s in for_family(["micxr"]) if s.family == "micxr"]
    assert {s.name for s in specs} >= {*SINGLE_METRICS, "micxr.stagewise.accuracy", "micxr.stagewise.stage1"}
    with KgliteStore(evaluated["path"], read_only=True) as store:
        for samples, run, models in ((evaluated["samples"], evaluated["run"], BASELINES),
                                     (evaluated["staged"], evaluated["srun"], STAGEWISE)):
            for spec in specs:
                assert spec.cypher is not None, spec.name
                for model in models:
                    pure = spec.compute(samples, model)
                    graph = spec.from_graph(store, run, model)
                    assert pure.model_dump() == graph.model_dump(), (spec.name, model)


def test_seed_export_is_the_released_format_plus_the_prediction(evaluated: dict[str, Any]) -> None:
    out = evaluated["tmp"] / "export"
    written = export_seed(evaluated["folder"], out)
    names = {p.name for p in written} - {"micxr_chronokg_ids.jsonl"}
    assert names == {f"micxr_test_predictions_baseline_{m.split('/')[1].replace(':', '_')}.json" for m in BASELINES}
    path = out / "micxr" / "micxr_test_predictions_baseline_random_5.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    assert len(records) == 220
    released = ["q_id", "group_type", "qtype", "images", "question", "choices", "answer"]
    assert list(records[0])[:7] == released
    by_id = {q.id: q for q in evaluated["questions"]}
    for r, qid in zip(records, result_ids(out, "micxr", path), strict=True):
        q = by_id[qid]
        assert r["choices"] == {c.label: c.text for c in q.choices} and r["answer"] == q.target
        assert sorted(r["images"]) == ["T1", "T2", "T3", "T4", "T5"] and r["prediction"] in "ABCDE"
        assert r["correct"] == (r["prediction"] == r["answer"])
    # the exported file is read back by `eval score`, and scores the same
    folder = score_outputs(evaluated["qfile"], path, "rescored", "seed", evaluated["tmp"] / "rescored")
    _, rescored = run_samples(folder)
    assert sum(bool(s.correct) for s in rescored) == sum(r["correct"] for r in records)
    staged = export_seed(evaluated["sfolder"], evaluated["tmp"] / "export-stagewise")
    records = json.loads(next(iter(staged)).read_text(encoding="utf-8"))
    assert all(r["mode"] == "stagewise" and r["stage1_descriptions"] == r["prediction"] for r in records)


# --- extraction -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("output", "seed", "fixed"), [
    ("B", "B", "B"),
    (" (c) ", "C", "C"),
    ("**D**", "D", "D"),
    ("E.", "E", "E"),
    ("B. T2 → T3", "B", "B"),
    ("The answer is C.", "C", "C"),
    ("Answer: A", "A", "A"),
    ("A small left pleural effusion appears at T3, so the answer is C.", "C", "C"),
    ("B or C", INVALID, INVALID),
    ("C is wrong because T1 shows it. Answer: B", INVALID, "B"),
    ("A is correct.", "A", "A"),
    ("A or B", INVALID, INVALID),
    ("<think>Maybe A, maybe D.</think>\nD", INVALID, "D"),
    ("Maybe A or E...</think> The answer is E", INVALID, "E"),
    ("I cannot determine this from the images.", INVALID, INVALID),
    ("", INVALID, INVALID),
    ("F", INVALID, INVALID),
    ("Between T3 and T4, the effusion is new.", INVALID, INVALID),
])
def test_exactly_one_letter(output: str, seed: str, fixed: str) -> None:
    assert (letter_seed(output), letter_fixed(output)) == (seed, fixed)


def test_stage1_completeness() -> None:
    assert stage1_complete("T1–T2: a\nT2–T3: b\nT3–T4: c\nT4–T5: d")
    assert stage1_complete("- **T1-T2**: a\n- T2 → T3: b\n- T3 to T4: c\n- T4-T5: d")
    assert not stage1_complete("T1–T2: a\nT2–T3: b\nT4–T5: d")
    assert not stage1_complete("T1–T3: a\nT2–T3: b\nT3–T4: c\nT4–T5: d")


# --- a model on loopback: single step and stage-wise -------------------------------------------------------


def with_images(evaluated: dict[str, Any]) -> Path:
    """Stand-in image files at every question's MIMIC-CXR-JPG paths (bytes naming the study)."""
    root = evaluated["tmp"] / "mimic-cxr-jpg"
    for q in evaluated["questions"]:
        for rel in q.metadata["images"].values():
            path = root / rel
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(f"JPEG stand-in {rel.split('/')[3]}".encode())
    return root


def studies_in(body: dict[str, Any]) -> tuple[str, ...]:
    """The study of each attached image (what a vision model would see), in order."""
    user = next(m for m in body["messages"] if m["role"] == "user")
    if isinstance(user["content"], str):
        return ()
    urls = [p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url"]
    return tuple(base64.b64decode(u.split(",", 1)[1]).decode().split()[-1] for u in urls)


def tail(text: str) -> str:
    """The question and its options (shared by the single-step and stage-2 prompts)."""
    return text[text.index("Question: "):]


def scripted(questions: list[Question], stage1: Callable[[tuple[str, ...]], str] | None = None) -> Any:
    """A scripted 'model' that knows each window's answers: single step from the images and the question;
    stage 1 names the window (from the images) in four interval lines; stage 2 answers only if the stage-1
    description of the window reached it."""
    keys: dict[tuple[tuple[str, ...], str], str] = {}
    for q in questions:
        keys[(tuple(q.metadata["study_ids"]), tail(q.input))] = q.target
    assert len(keys) == len(questions)  # (window, question and options) tells every question apart

    def reply(request: ScriptedRequest) -> str:
        body = request.body
        system = body["messages"][0]["content"]
        text = request.last_user_text
        if "You describe the changes" in system:
            assert "A. " not in text and "Question:" not in text  # stage 1 shows no options
            window = studies_in(body)
            return stage1(window) if stage1 else "\n".join(f"T{k}–T{k + 1}: window {' '.join(window)}"
                                                           for k in range(1, 5))
        if "You answer multiple-choice questions about serial" in system:
            assert not studies_in(body)  # stage 2 is text only
            m = re.search(r"window ((?:s\S+ ?){5})", text)
            return f"The answer is {keys[(tuple(m.group(1).split()), tail(text))]}." if m else "I cannot tell."
        return f"**{keys[(studies_in(body), tail(text))]}**"

    return reply


def loopback_run(evaluated: dict[str, Any], server: OpenAIServer, name: str, **family: Any) -> list[SampleRecord]:
    entry = runner.ModelEntry(spec="openai-compat/vlm", base_url=server.url)
    _, folder, info = run_models(None, evaluated["qfile"], evaluated["tmp"] / name, [entry],
                                 family_options={"micxr": family})
    assert info.status == "complete"
    return list(latest(folder / "samples.jsonl").values())


def test_single_step_against_a_loopback_model(evaluated: dict[str, Any]) -> None:
    root = with_images(evaluated)
    questions = evaluated["questions"]
    with OpenAIServer(script=scripted(questions)) as server:
        samples = loopback_run(evaluated, server, "single", image_root=str(root))
        assert server.model_requests == len(questions)
        body = server.bodies[0]
    parts = body["messages"][1]["content"]
    q = next(q for q in questions if tuple(q.metadata["study_ids"]) == studies_in(body) and
             q.input == parts[-1]["text"])
    assert body["temperature"] == 0.0 and body["messages"][0] == {"role": "system", "content": q.system}
    assert [p["text"] for p in parts[0:10:2]] == ["T1:", "T2:", "T3:", "T4:", "T5:"]
    assert parts[-1] == {"type": "text", "text": q.input} and len(parts) == 11
    assert M.ACCURACY.compute(samples, "openai-compat/vlm").value == 1.0


def test_stagewise_answers_from_the_interval_descriptions(evaluated: dict[str, Any]) -> None:
    root = with_images(evaluated)
    questions = evaluated["questions"]
    with OpenAIServer(script=scripted(questions)) as server:
        samples = loopback_run(evaluated, server, "stagewise", stagewise=True, image_root=str(root))
        assert server.model_requests == 2 * len(questions)
        stages = Counter("describe" if "You describe the changes" in b["messages"][0]["content"] else "answer"
                         for b in server.bodies)
    assert stages == {"describe": 220, "answer": 220}
    model = "openai-compat/vlm"
    assert M.STAGEWISE[0].compute(samples, model).value == 1.0  # stage 2 found the window in stage 1's lines
    assert M.STAGE1.compute(samples, model).value == 1.0
    assert M.ACCURACY.compute(samples, model).value is None  # reported apart from the single-step protocol
    s = samples[0]
    assert s.steps[0]["stage"] == 1 and s.steps[0]["output"].startswith("T1–T2: window ")
    assert s.prompt_tokens > s.steps[0]["prompt_tokens"] > 0 and s.request_hash


def test_stagewise_without_usable_descriptions_is_wrong(evaluated: dict[str, Any]) -> None:
    """Stage 1 that omits an interval for half the windows: stage 2 cannot answer those (counted wrong), and
    the stage-1 metric says how many descriptions were complete."""
    root = with_images(evaluated)
    questions = evaluated["questions"]

    def stage1(window: tuple[str, ...]) -> str:
        if int(window[0][1:]) % 2:
            return "T1–T2: nothing to see"
        return "\n".join(f"T{k}–T{k + 1}: window {' '.join(window)}" for k in range(1, 5))

    with OpenAIServer(script=scripted(questions, stage1)) as server:
        samples = loopback_run(evaluated, server, "stagewise-bad", stagewise=True, image_root=str(root))
    odd = sum(int(q.metadata["study_ids"][0][1:]) % 2 for q in questions)
    assert 0 < odd < len(questions)
    result = M.STAGE1.compute(samples, "openai-compat/vlm")
    assert result.value == pytest.approx(1 - odd / len(questions))
    assert result.groups["complete"]["accuracy"] == 1.0 and result.groups["incomplete"]["correct"] == 0
    answers = M.STAGEWISE[3].compute(samples, "openai-compat/vlm")
    assert answers.value == pytest.approx(odd / len(questions))  # "I cannot tell." is invalid


def test_a_failed_stage_is_retried_on_resume_without_duplicates(evaluated: dict[str, Any]) -> None:
    """Refused requests (400: no retry) fail their samples in either stage; re-running the same run retries
    exactly those, both stages again, and every sample is logged as answered once."""
    root = with_images(evaluated)
    questions = evaluated["questions"]
    with OpenAIServer(script=scripted(questions)) as server:
        entry = runner.ModelEntry(spec="openai-compat/vlm", base_url=server.url)
        server.fail_next(Fault.status_code(400), times=9)
        options = runner.RunOptions(cache=False, concurrency=8,
                                    family_options={"micxr": {"stagewise": True, "image_root": str(root)}})
        folder, info = runner.prepare(evaluated["tmp"] / "resumed", [evaluated["qfile"]], [entry], options)
        info, tally = runner.run(folder, info, questions)
        assert info.status == "incomplete" and tally.failed == 9
        first = server.model_requests
        again, _ = runner.prepare(evaluated["tmp"] / "resumed", [evaluated["qfile"]], [entry], options)
        assert again == folder
        info, tally = runner.run(folder, info, questions)
        assert info.status == "complete" and tally.done == 9 and tally.failed == 0
        assert server.model_requests - first == 18  # both stages of the nine failed samples
    lines = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == len(questions) + 9 and sum(1 for x in lines if x["error"]) == 9
    final = latest(folder / "samples.jsonl")
    assert len(final) == len(questions) and all(r.ok and r.correct for r in final.values())


def test_text_only_prompts_and_a_missing_image(evaluated: dict[str, Any], tmp_path: Path) -> None:
    q = evaluated["questions"][0]
    request = PROFILE.request(q, "seed", 0)
    assert [m.content for m in request.messages] == [q.system, q.input]  # as the generator wrote them
    first = PROFILE.with_options({"stagewise": True}).stage_request(q, 1, "seed", 0)
    second = PROFILE.with_options({"stagewise": True}).stage_request(q, 2, "seed", 0, "T1–T2: x")
    prompts = q.metadata["stagewise"]
    assert [m.content for m in first.messages] == [prompts["stage1_system"], prompts["stage1_user"]]
    assert second.messages[1].content == prompts["stage2_user"].replace("{descriptions}", "T1–T2: x")
    with pytest.raises(ChronoKGError, match="image T1 not found"):
        PROFILE.with_options({"image_root": str(tmp_path)}).request(q, "seed", 0)


def test_bad_family_options_fail_before_a_run_folder(evaluated: dict[str, Any], tmp_path: Path) -> None:
    from chronokg.cli.eval import parse_family_options

    assert parse_family_options(["micxr.stagewise=true", "micxr.temperature=0.7", "micxr.image_root=/x"]) == {
        "micxr": {"stagewise": True, "temperature": 0.7, "image_root": "/x"}}
    for bad in ["micxr=true", "stagewise=true", "micxr.stagewise"]:
        with pytest.raises(ChronoKGError, match=r"FAMILY\.KEY=VALUE"):
            parse_family_options([bad])
    entry = [runner.ModelEntry(spec="baseline/oracle")]
    for options, message in (({"micxr": {"stagewse": True}}, "stagewse"),
                             ({"micxr": {"temperature": 5}}, "temperature"),
                             ({"micxr": {"image_root": str(tmp_path / "none")}}, "no such folder"),
                             ({"tempomed": {"stagewise": True}}, "tempomed evaluation profile takes no options")):
        with pytest.raises(ChronoKGError, match=message):
            runner.prepare(tmp_path / "runs", [evaluated["qfile"]], entry,
                           runner.RunOptions(family_options=options))
    assert not (tmp_path / "runs").exists()


# --- hand-computed cases ----------------------------------------------------------------------------------------


def rec(correct: bool, qtype: str, key: str, predicted: str, patient: str = "p1", mode: str = "single",
        **extra: Any) -> SampleRecord:
    from chronokg.bench.families.micxr import GROUP, TABLE1_COLUMN, QType

    fields = {"mode": mode, "qtype": qtype, "task_family": GROUP[QType(qtype)],
              "table1_column": TABLE1_COLUMN[QType(qtype)], "key": key, "predicted": predicted, "patient": patient,
              **extra}
    return SampleRecord(question_id=f"{qtype}{key}{predicted}{patient}{len(extra)}{correct}", model="m",
                        family="micxr", correct=correct, fields=fields)


HAND = [
    rec(True, "single_emergence", "B", "B", "p1"),
    rec(False, "single_emergence", "E", "A", "p1"),
    rec(True, "multiple_resolution_2", "E", "E", "p2"),
    rec(False, "emergence_to_resolution", "C", INVALID, "p2"),
    rec(True, "icr_multi_abn", "D", "D", "p3"),
    rec(False, "icr_multi_abn", "A", "E", "p3"),
    rec(False, "icr_multi_abn", "B", "E", "p3"),
    rec(True, "single_entity_interval_summary", "A", "A", "p4"),
    rec(True, "multi_entity_interval_summary", "E", "E", "p4"),
    rec(False, "multi_entity_interval_summary", "C", "D", "p4"),
]


def test_accuracy_and_table1_by_hand() -> None:
    acc = M.ACCURACY.compute(HAND, "m")
    assert acc.value == pytest.approx(5 / 10)
    # TEL 2/4, ICR 1/3, GTS 2/3
    assert {f: (g["correct"], g["n"]) for f, g in acc.groups.items()} == {"TEL": (2, 4), "ICR": (1, 3),
                                                                          "GTS": (2, 3)}
    assert acc.groups["ICR"]["wilson95"] == pytest.approx(list(wilson(1, 3)))
    # Wilson by hand for 1/3: centre (1/3 + 1.96²/6) / (1 + 1.96²/3), margin 1.96·sqrt(2/27 + 1.96²/36) / (1 + 1.96²/3)
    z2 = 1.96 ** 2
    centre, margin = (1 / 3 + z2 / 6) / (1 + z2 / 3), 1.96 * (2 / 27 + z2 / 36) ** 0.5 / (1 + z2 / 3)
    assert acc.groups["ICR"]["wilson95"] == pytest.approx([centre - margin, centre + margin])
    by_type = M.ACCURACY_BY_TYPE.compute(HAND, "m").groups
    assert list(by_type) == ["single_emergence", "multiple_resolution_2", "emergence_to_resolution", "icr_multi_abn",
                             "single_entity_interval_summary", "multi_entity_interval_summary"]
    assert by_type["single_emergence"]["accuracy"] == 0.5
    assert by_type["icr_multi_abn"]["accuracy"] == pytest.approx(1 / 3)
    assert by_type["multiple_resolution_2"]["task_family"] == "TEL"
    table = M.TABLE1.compute(HAND, "m")
    cols = {c: (g["correct"], g["n"]) for c, g in table.groups.items()}
    assert cols == {"TEL Single (E/R)": (1, 2), "TEL Multiple (E/R)": (1, 1), "TEL E\u2192R / R\u2192E": (0, 1),
                    "ICR": (1, 3), "GTS Single Abnormality": (1, 1), "GTS Multi Abnormality": (1, 2),
                    "Overall": (5, 10)}
    assert table.value == 0.5
    assert table.details["mean_of_columns"] == pytest.approx((0.5 + 1 + 0 + 1 / 3 + 1 + 0.5) / 6)
    assert table.details["mean_of_families"] == pytest.approx((0.5 + 1 / 3 + 2 / 3) / 3)


def test_answers_bootstrap_and_stage1_by_hand() -> None:
    answers = M.ANSWERS.compute(HAND, "m")
    assert answers.value == pytest.approx(1 / 10)  # one INVALID
    assert answers.groups["predicted"] == pytest.approx({"A": 0.2, "B": 0.1, "C": 0.0, "D": 0.2, "E": 0.4,
                                                         INVALID: 0.1})
    assert answers.groups["key"] == pytest.approx({"A": 0.2, "B": 0.2, "C": 0.2, "D": 0.1, "E": 0.3})
    # keys not E: 7 questions, E chosen on 2 (the ICR ones); keys E: 3 questions, E chosen on 2
    assert answers.details["e_when_change"] == pytest.approx(2 / 7)
    assert answers.details["e_when_none"] == pytest.approx(2 / 3)
    boot = M.ACCURACY_BOOTSTRAP.compute(HAND, "m")
    assert boot.value == 0.5 and boot.groups["Overall"]["patients"] == 4 and boot.groups["ICR"]["patients"] == 1
    assert boot.groups["ICR"]["bootstrap95"] == [pytest.approx(1 / 3), pytest.approx(1 / 3)]  # one cluster
    lo, hi = boot.groups["Overall"]["bootstrap95"]
    assert 0.0 <= lo < 0.5 < hi <= 1.0
    staged = [rec(True, "single_emergence", "B", "B", mode="stagewise", stage1_complete=True),
              rec(False, "single_emergence", "C", "B", mode="stagewise", stage1_complete=True),
              rec(False, "icr_multi_abn", "A", INVALID, mode="stagewise", stage1_complete=False)]
    stage1 = M.STAGE1.compute(staged + HAND, "m")
    assert stage1.value == pytest.approx(2 / 3)
    assert (stage1.groups["complete"]["correct"], stage1.groups["complete"]["n"]) == (1, 2)
    assert (stage1.groups["incomplete"]["correct"], stage1.groups["incomplete"]["n"]) == (0, 1)
    assert M.STAGEWISE[0].compute(staged + HAND, "m").value == pytest.approx(1 / 3)
    assert M.ACCURACY.compute(staged + HAND, "m").value == pytest.approx(5 / 10)  # the protocols kept apart
