"""Reading a question file: every question as written, its repeated keys and short strings held once per file."""

from __future__ import annotations

from pathlib import Path

from chronokg.bench.question import AnswerKey, Choice, Question, read_jsonl, write_jsonl


def question(n: int) -> Question:
    return Question(id=f"q-{n}", family="tempomed", variant="mcq/original", input=f"Question {n}? " + "x" * 200,
                    choices=[Choice(label="A", text=f"option {n} a"), Choice(label="B", text="b")], target="A",
                    answer_key=AnswerKey(query="decision-at", params={"pair": f"p{n}", "year": 2020},
                                         evidence=[{"kind": "recommendation", "valid_from": "2020-01-01"}],
                                         evidence_hash="sha256:0"),
                    snapshot="snap-1", metadata={"shuffle_method": "original", "idx": n, "long": "y" * 100})


def test_questions_read_back_equal_and_share_their_repeated_strings(tmp_path: Path) -> None:
    written = [question(n) for n in range(3)]
    path = tmp_path / "q.jsonl"
    write_jsonl(path, written)
    read = list(read_jsonl(path))
    assert read == written
    first, second = read[0], read[1]
    assert first.metadata["shuffle_method"] is second.metadata["shuffle_method"]
    assert next(iter(first.metadata)) is next(iter(second.metadata))  # a key, once
    assert first.answer_key.evidence[0]["kind"] is second.answer_key.evidence[0]["kind"]
    assert first.metadata["long"] == second.metadata["long"]  # longer strings are compared, never merged
