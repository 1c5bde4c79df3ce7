"""A new trajectory from two guideline texts, end to end, with a model on loopback.

No model can run on these machines: a real OpenAI-compatible HTTP server on loopback answers the
extraction and verification calls (scripted), so the test checks what chronokg sends (the seed's prompts,
byte for byte), what it keeps (only differences the verifier scores 1), what it loads, and that
`--since` yields questions only for the new change pair.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench.families.tempomed_prompts import render, template
from chronokg.bench.question import read_jsonl
from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore
from chronokg.testing.openai_server import OpenAIServer
from chronokg.testing.replies import Reply, ScriptedRequest

TEXTS = Path(__file__).parent / "fixtures" / "tempomed_texts"
KEPT = {"clinical_focus": "Duration of adjuvant imatinib after resection in high-risk tumours",
        "current_recommendation": "Give adjuvant imatinib for at least 36 months to high-risk patients.",
        "current_recommendation_raw_text": "give adjuvant imatinib for at least 36 months",
        "prior_recommendation": "Give adjuvant imatinib for at least one year.",
        "prior_recommendation_raw_text": "give adjuvant imatinib for at least one year",
        "change_summary": "From at least one year to at least three years."}
DROPPED = dict(KEPT, clinical_focus="Follow-up imaging interval", current_recommendation="Imaging every 6 months.",
               prior_recommendation="Imaging when needed.")


def script(request: ScriptedRequest) -> Reply:
    system = request.body["messages"][0]["content"]
    if system == template("DIFF_SYSTEM"):
        return Reply(text=json.dumps({"items": [KEPT, DROPPED]}))
    if system == template("VERIFY_SYSTEM"):
        focus = KEPT["clinical_focus"]
        score = 1.0 if focus in request.last_user_text else 0.5  # the seed keeps only GOOD (1)
        return Reply(text=json.dumps({"score": score, "rationale": "#reason test"}))
    return Reply(text="unexpected")


def test_from_two_texts_to_stored_questions(tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    monkeypatch.setenv("CHRONOKG_RESPONSE_CACHE", str(tmp_path / "cache.sqlite"))
    store = tmp_path / "store.kgl"
    runner = CliRunner()
    base = ["--store", f"kglite://{store}"]
    assert runner.invoke(app, [*base, "ingest", "tempomed", str(shared_data / "tempomed-bench")]).exit_code == 0
    with OpenAIServer(script=script) as server:
        result = runner.invoke(app, [*base, "bench", "trajectory", str(TEXTS / "manifest.json"), "--model",
                                     "openai-compat/loopback", "--base-url", server.url, "--out",
                                     str(tmp_path / "out")])
        bodies: list[dict[str, Any]] = list(server.bodies)
    assert result.exit_code == 0, result.output
    assert "2 differences extracted, 1 verified" in result.output
    # What was sent: the seed's extraction prompt with both texts, then one verifier call per difference.
    extract = bodies[0]
    assert extract["temperature"] == 0.0
    assert extract["messages"][1]["content"] == render(
        "DIFF_USER", topic="Adjuvant therapy for gastric stromal tumours",
        organization="['Example Oncology Study Group']", current_xml=(TEXTS / "v2012.xml").read_text(),
        prior_xml=(TEXTS / "v2010.md").read_text())
    assert [b["messages"][0]["content"] for b in bodies[1:]] == [template("VERIFY_SYSTEM")] * 2
    assert all(b["temperature"] == 1.0 for b in bodies[1:])
    # What was written: the loader's formats, only the verified difference.
    diffs = json.loads((tmp_path / "out" / "99990012_99990010_extracted_diffs.json").read_text())
    assert [d["clinical_focus"] for d in diffs] == [KEPT["clinical_focus"]] and diffs[0]["score"] == 1.0
    # What was asked: questions only for the new change pair, also stored in the graph.
    questions = list(read_jsonl(tmp_path / "out" / "questions.jsonl"))
    assert len(questions) == 6
    assert {(q.metadata["PMID_current"], q.metadata["PMID_prior"]) for q in questions} == {("99990012", "99990010")}
    up = next(q for q in questions if q.metadata["target"] == "up_to_date")
    assert next(c.text for c in up.choices if c.label == up.target) == KEPT["current_recommendation"]
    with KgliteStore(store, read_only=True) as s:
        stored = s.run("MATCH (q:Question) RETURN count(q) AS n")[0]["n"]
        assert stored == 6
        versions = s.run("MATCH (g:Guideline {id: '99990012'})-[:SUPERSEDES]->(p:Guideline) RETURN p.id AS id")
        assert versions == [{"id": "99990010"}]
