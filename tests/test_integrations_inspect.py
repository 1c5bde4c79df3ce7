"""chronokg inside inspect_ai, with the real package: the canonical JSONL under inspect's own multiple-choice path,
the shipped tasks (`inspect eval chronokg/<family>`), and inspect logs scored by `chronokg eval score`.

inspect's `mockllm` counts tokens with tiktoken's o200k_base, which tiktoken would download: the test process
points TIKTOKEN_CACHE_DIR at the copy the litellm package ships (no network here).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench.question import Question, write_jsonl
from chronokg.metrics.runs import metrics, run_samples, score_outputs
from tests.integration_questions import every_family

inspect_ai = pytest.importorskip("inspect_ai", reason="the integrations extra (inspect_ai) is not installed") \
    if not os.environ.get("CI") else __import__("inspect_ai")

from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import json_dataset  # noqa: E402
from inspect_ai.model import ChatMessage, ModelOutput, get_model  # noqa: E402
from inspect_ai.scorer import choice  # noqa: E402
from inspect_ai.solver import multiple_choice  # noqa: E402
from inspect_ai.solver._task_state import sample_state  # noqa: E402  (inspect's running sample; not re-exported)

pytestmark = pytest.mark.slow  # inspect_ai's harness


@pytest.fixture(autouse=True, scope="module")
def tiktoken_offline() -> Any:
    import importlib.util

    spec = importlib.util.find_spec("litellm")  # located, not imported (its import fetches a price list)
    assert spec is not None and spec.origin is not None, "litellm (the integrations extra) is not installed"
    cache = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    assert (cache / "fb374d419588a4632f3f557e76b4b70aebbca790").is_file(), "litellm no longer ships o200k_base"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        yield


@pytest.fixture(scope="module")
def questions(shared_data: Path) -> dict[tuple[str, str], list[Question]]:
    return every_family(shared_data)


def run_inspect(task: Task | str, answer: Callable[[list[ChatMessage]], str], log_dir: Path,
                log_samples: bool = True, **task_args: Any) -> Any:
    """inspect's run of `task` by a mock model answering `answer(messages)`. Without `log_samples` the log holds
    the results alone (writing each sample's record is most of inspect's time on a mock model)."""
    def output(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        return ModelOutput.from_content("mockllm", answer(messages))

    model = get_model("mockllm/model", custom_outputs=output)
    (log,) = inspect_eval(task, model=model, display="none", log_dir=str(log_dir), task_args=task_args,
                          max_connections=32, log_samples=log_samples)
    assert log.status == "success", log.error
    return log


def canonical_datasets(questions: dict[tuple[str, str], list[Question]],
                       folder: Path) -> Iterator[tuple[str, str, list[Question], Any]]:
    """(family, protocol, its multiple-choice questions, inspect's dataset of their canonical JSONL as written)."""
    for (family, protocol), qs in questions.items():
        mcq = [q for q in qs if q.choices]
        if mcq:
            path = folder / f"{family}-{protocol}.jsonl"
            write_jsonl(path, mcq)
            yield family, protocol, mcq, json_dataset(str(path))


# A label instruction: a list of two or more labels as a prompt asks for them ("one of A,B,C", "(W/X/Y/Z/V)",
# "A, B, C, D or E", "[YES] or [NO]", "true/false"), or a display label named alone in parentheses.
LABEL_LIST = re.compile(r"\b(?:one of|letter:?)\s+([A-Za-z](?:\s*,\s*[A-Za-z])+(?:,?\s+or\s+[A-Za-z])?)\b"
                        r"|\(([A-Za-z](?:/[A-Za-z])+)\)|\[(\w+)\] or \[(\w+)\]|\b(true/false)\b", re.IGNORECASE)


def label_sets(text: str) -> list[list[str]]:
    """Every label instruction in `text`, in reading order, as its list of labels."""
    found = []
    for m in LABEL_LIST.finditer(text):
        if m.group(1):
            found.append(re.split(r"\s*,\s*|,?\s+or\s+", m.group(1).strip()))
        elif m.group(2) or m.group(5):
            found.append((m.group(2) or m.group(5)).split("/"))
        else:
            found.append([m.group(3), m.group(4)])
    return found


def test_canonical_input_names_no_label_set_of_its_own(questions: dict[tuple[str, str], list[Question]]) -> None:
    """No generated item's canonical `input`, in any family or protocol, carries an answer-format instruction or
    a label of its own (the seed's "##Answer: [Your Choice Here (W/X/Y/Z/V)]", "(E)", "[YES] or [NO]", answered
    few-shot demonstrations): inspect's template is then the only label set the model reads. The seed's exact
    prompt, with all of them, stays in `metadata.prompt`."""
    checked = 0
    for qs in questions.values():
        for q in qs:
            record = q.canonical()
            assert record["metadata"]["prompt"] == q.input
            if not q.choices:
                continue
            text = record["input"]
            assert label_sets(text) == [], (q.id, text)
            assert not re.search(r"(?im)^\s*(#*\s*answer\b|\(\w\) |A\. )", text), (q.id, text)
            for c in q.choices:
                assert f"({c.label})" not in text and f"[{c.label}]" not in text, (q.id, c.label, text)
            checked += 1
    # the seed lines that were there, in the prompts themselves: the detector sees them
    prompts = [q.input for qs in questions.values() for q in qs if q.choices]
    assert any(["W", "X", "Y", "Z", "V"] in label_sets(p) for p in prompts)
    assert any(["YES", "NO"] in label_sets(p) for p in prompts)
    assert checked == sum(1 for qs in questions.values() for q in qs if q.choices) > 1000


def test_inspect_multiple_choice_scores_a_model_following_the_one_label_instruction_1_000_on_every_family(
        questions: dict[tuple[str, str], list[Question]], tmp_path: Path) -> None:
    """inspect's own `multiple_choice()` solver and `choice()` scorer over the canonical JSONL as written, one
    inspect run per family and protocol: the prompt lists each option once (`input` leaves the options to
    `choices`) and holds exactly one label instruction, inspect's own A, B, ...; a mock model that names the option
    chronokg's key marks correct, by its position in that FIRST label set it reads, scores 1.000. The model knows
    the sample by its id (inspect's running sample state), not by prompt text: some seed prompts repeat with
    different keys."""
    seen = set()
    for family, protocol, mcq, dataset in canonical_datasets(questions, tmp_path):
        by_id: dict[str, Any] = {}
        for sample, q in zip(dataset, mcq, strict=True):
            assert isinstance(sample.input, str) and isinstance(sample.target, str) and sample.choices
            correct = next(c.text for c in q.choices if c.label == q.target)
            assert sample.choices[ord(sample.target) - ord("A")] == correct and sample.id == q.id
            by_id[q.id] = sample
            seen.add(frozenset(c.label for c in q.choices))
        position = {q.id: [c.label for c in q.choices].index(q.target) for q in mcq}

        def answer(messages: list[ChatMessage], by_id: dict[str, Any] = by_id,
                   position: dict[str, int] = position) -> str:
            state = sample_state()
            assert state is not None
            sample = by_id[str(state.sample_id)]
            # inspect's template: instruction, blank line, the question, blank line, the options "A) ..." once
            assert messages[-1].text.split("\n\n", 1)[1] == rendered(sample)
            sets = label_sets("\n".join(m.text for m in messages))
            assert len(sets) == 1, (state.sample_id, sets)
            return f"ANSWER: {sets[0][position[str(state.sample_id)]]}"

        log = run_inspect(Task(dataset=dataset, solver=multiple_choice(), scorer=choice()), answer,
                          tmp_path / "logs", log_samples=False)  # its scores and counts are what is read
        value = log.results.scores[0].metrics["accuracy"].value
        assert (family, protocol, value) == (family, protocol, 1.0)
        assert log.results.completed_samples == len(dataset) == len(mcq)
    assert set("WXYZV") in seen and set("ABCDE") in seen  # both label sets were there


def test_label_sets_reads_the_instructions_it_is_used_to_reject() -> None:
    """The detector the test above relies on finds each family's answer-format line and inspect's."""
    assert label_sets("##Answer: [Your Choice Here (W/X/Y/Z/V)]") == [["W", "X", "Y", "Z", "V"]]
    assert label_sets("where LETTER is one of A,B,C,D,E.") == [["A", "B", "C", "D", "E"]]
    assert label_sets("Answer with exactly one letter: A, B, C, D or E.") == [["A", "B", "C", "D", "E"]]
    assert label_sets("Answer ONLY with [YES] or [NO].") == [["YES", "NO"]]
    assert label_sets("Please answer true/false.") == [["true", "false"]]
    assert label_sets("In 2019, what office does Donald Tusk hold?") == []


def rendered(sample: Any) -> str:
    """What inspect's multiple-choice template shows after its instruction: the question, a blank line, and the
    options as "A) text" lines, each once."""
    options = "\n".join(f"{chr(ord('A') + i)}) {text}" for i, text in enumerate(sample.choices))
    return f"{sample.input}\n\n{options}"


def half_right(by_prompt: dict[str, Question]) -> Callable[[list[ChatMessage]], str]:
    """A model answering about half the questions right, in the format the family's extractor reads."""
    from chronokg.eval.profile import profile_for

    def answer(messages: list[ChatMessage]) -> str:
        q = by_prompt[messages[-1].text]
        assert [m.text for m in messages[:-1]] == ([q.system] if q.system else [])  # the exact system message
        wrong = next((c.label for c in q.choices if c.label != q.target), "none")
        label = q.target if int(hashlib.sha256(q.id.encode()).hexdigest(), 16) % 2 else wrong
        return profile_for(q.family).render(q, label)

    return answer


def per_variant(qs: list[Question], n: int) -> list[Question]:
    """The first `n` questions of each variant: every prompt shape a task renders, without running the whole
    family through inspect (its scores are compared sample by sample)."""
    taken: dict[str, int] = {}
    out = []
    for q in qs:
        taken[q.variant] = taken.get(q.variant, 0) + 1
        if taken[q.variant] <= n:
            out.append(q)
    return out


@pytest.mark.parametrize(("family", "protocol", "metric"), [
    ("tempomed", "seed", "tempomed.accuracy"), ("tempomed", "chronokg", "tempomed.accuracy"),
    ("micxr", "seed", "micxr.accuracy"), ("conflictmedqa", "chronokg", None)])
def test_shipped_task_scores_as_eval_metrics_and_its_log_scores_as_a_run(
        family: str, protocol: str, metric: str | None, questions: dict[tuple[str, str], list[Question]],
        tmp_path: Path) -> None:
    """`chronokg/<family>` found through inspect's entry point, run by inspect with the exact seed prompts and
    system messages; its per-sample scores and accuracy equal those of the run `eval score` makes from its log
    (`eval metrics`: the family's accuracy metric)."""
    qs = [q for q in questions[(family, protocol)] if not q.variant.startswith("probe/")]  # tempomed.accuracy: MCQs
    qs = per_variant(qs, 12)
    path = tmp_path / "questions.jsonl"
    write_jsonl(path, qs)
    log = run_inspect(f"chronokg/{family}", half_right({q.input: q for q in qs}), tmp_path / "logs",
                      questions=str(path), protocol=protocol)
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert 0.2 < accuracy < 0.8 and log.results.completed_samples == len(qs)
    folder = score_outputs(path, Path(log.location), "mockllm/model", protocol, tmp_path / "runs")
    _, samples = run_samples(folder)
    assert len(samples) == len(qs)
    by_inspect = {str(s.id): s.scores["chronokg_scorer"].value for s in log.samples}
    assert {s.question_id: float(bool(s.correct)) for s in samples} == by_inspect
    if metric is not None:
        (value,) = [m.value for m in metrics(samples) if m.metric == metric]
        assert value == pytest.approx(accuracy)
