"""An item's dates are defined once (`chronokg.eval.item_dates`): the Hugging Face dataset's columns, the inspect
tasks' sample metadata and lm-eval's exported docs give every item of every family the same four dates, read from
the same store, and a dated-gold family's `gold_valid_from` is the `gold_from` chronokg's cutoff split reads, so a
split by it puts the same items on each side as `chronokg.metrics.cutoff`."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.bench.family import FAMILIES
from chronokg.bench.hf import folder_rows
from chronokg.bench.question import Question, write_jsonl
from chronokg.cli.app import app
from chronokg.eval.item_dates import DATE_FIELDS
from chronokg.eval.profile import profile_for
from chronokg.graph.kglite_store import KgliteStore
from chronokg.metrics.cutoff import side_of
from tests.helpers import defined_at
from tests.test_bench_hf import every_family

pytestmark = pytest.mark.slow  # inspect_ai and pyarrow: seconds to import; every family generated and exported

if not os.environ.get("CI"):
    pytest.importorskip("inspect_ai", reason="the integrations extra (inspect_ai) is not installed")
    pytest.importorskip("pyarrow", reason="the integrations extra (datasets, with pyarrow) is not installed")

Dated = dict[str, dict[str, str | None]]  # question id -> its dates as ISO days
# Families whose items may have no gold valid time (their gold is a recommendation or an answer, not a dated fact)
UNDATED_GOLD = ("tempomed", "conflictmedqa", "benchage")


def routes(store: Path, path: Path, families: list[str], out: Path) -> tuple[Dated, Dated, Dated]:
    """The dates of every question of `path` as the HF dataset's rows, inspect's samples and lm-eval's docs hold
    them, each route reading `store`."""
    from chronokg.integrations.inspect_tasks import Split, family_task

    uri = f"kglite://{store}"
    done = CliRunner().invoke(app, ["--store", uri, "bench", "export", "--format", "hf", str(path),
                                    "--out", str(out / "hf")])
    assert done.exit_code == 0, done.output
    hf: Dated = {}
    for config in sorted(p.name for p in (out / "hf").iterdir() if p.is_dir()):
        for row in folder_rows(out / "hf", config):
            hf[row["id"]] = {d: row[d].isoformat() if row[d] else None for d in DATE_FIELDS}
    inspect: Dated = {}
    for family in families:
        for sample in family_task(family, str(path), split=Split(store=uri)).dataset:
            assert sample.metadata is not None
            inspect[str(sample.id)] = {d: sample.metadata[d] for d in DATE_FIELDS}
    done = CliRunner().invoke(app, ["--store", uri, "export", "lm-eval", str(path), "--out", str(out / "lm")])
    assert done.exit_code == 0, done.output
    assert f"{len(hf):,} questions dated from the store's facts, 0 from" in " ".join(done.output.split())
    lm: Dated = {}
    for data in sorted((out / "lm").glob("*/questions.jsonl")):
        for line in data.read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            lm[doc["id"]] = {d: doc[d] for d in DATE_FIELDS}
    return hf, inspect, lm


def test_every_route_gives_every_item_the_same_dates_and_the_cutoff_split_s_gold(demo_built: Path,
                                                                                  tmp_path: Path) -> None:
    exported: list[tuple[Question, dict[str, str | None]]] = []  # each question and its dates, per file
    with KgliteStore(demo_built, read_only=True) as store:
        qs = every_family(store)
    # TempoMed's two protocols ask the same questions (the same ids): a file each, as a run takes them
    files = {"seed": [q for q in qs if q.generator["options"]["protocol"] == "seed"],
             "chronokg": [q for q in qs if q.generator["options"]["protocol"] == "chronokg"]}
    assert sorted({q.family for q in files["seed"]}) == sorted(FAMILIES.names())
    assert {q.family for q in files["chronokg"]} == {"tempomed"}
    for name, chosen in files.items():
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(path, chosen)
        hf, inspect, lm = routes(demo_built, path, sorted({q.family for q in chosen}), tmp_path / name)
        assert set(hf) == set(inspect) == set(lm) == {q.id for q in chosen}
        for q in chosen:
            assert hf[q.id] == inspect[q.id] == lm[q.id], (q.family, q.variant, q.id)
        for q in chosen:  # the store was read: every item's evidence has a known-from date
            assert hf[q.id]["evidence_known_from"], q.id
            assert hf[q.id]["gold_valid_from"] or q.family in UNDATED_GOLD, (
                f"{q.family} item {q.id} has no gold valid time: if its family's gold has none, add the family to "
                f"UNDATED_GOLD at {defined_at(__file__, 'UNDATED_GOLD')}")
        exported += [(q, hf[q.id]) for q in chosen]

    dated = [(q, dates) for q, dates in exported if profile_for(q.family).dated_gold]
    assert {q.family for q, _ in dated} == {"tempomed"} and len(dated) > 100
    starts = sorted({d for _, dates in dated if (d := dates["gold_valid_from"])})
    cutoff = dt.date.fromisoformat(starts[len(starts) // 2])  # items on both sides
    for q, dates in dated:
        mine = dates["gold_valid_from"]
        for protocol in ("seed", "chronokg"):  # the split of a run under either protocol
            _, _, fields = profile_for(q.family).score(q, q.target, protocol)
            gold = str(fields["gold_from"])[:10] if fields.get("gold_from") else None
            assert mine == gold, (q.id, protocol)
            assert side_of(fields, cutoff) == side(mine, cutoff), q.id
    sides = [side(dates["gold_valid_from"], cutoff) for _, dates in dated]
    assert sides.count("pre") > 10 and sides.count("post") > 10


def side(gold_valid_from: str | None, cutoff: dt.date) -> str:
    """The side a reader of the exported dates puts an item on, splitting by `gold_valid_from`."""
    if gold_valid_from is None:
        return "undated"
    return "pre" if dt.date.fromisoformat(gold_valid_from) <= cutoff else "post"
