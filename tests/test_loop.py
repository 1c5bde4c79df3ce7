"""The research loop, run twice from the CLI on the real TempoMed sample (../shared/data) split into two releases
by `Year_current`: load, generate, evaluate; load the newer release, `generate --since`, `bench verify` the old
file, re-run the first config into another log folder, evaluate the new questions, compare."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench.question import read_jsonl
from chronokg.cli.app import app
from tests.demo_stores import DemoRun

cli = CliRunner()


def split_tempomed(shared_data: Path, out: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """r1: the items whose current guideline is from 2019 or before; r2: all of them (the newer release)."""
    text = (shared_data / "tempomed-bench" / "questions_2026_relaxed_4_option_augmented_verified.subset.jsonl"
            ).read_text()
    decoder, rows, i = json.JSONDecoder(), [], 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text):
            row, i = decoder.raw_decode(text, i)
            rows.append(row)
    r1, r2 = out / "r1.jsonl", out / "r2.jsonl"
    r1.write_text("".join(json.dumps(r) + "\n" for r in rows if int(r["Year_current"]) <= 2019))
    r2.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return r1, r2, rows


def step(store: Path, *args: str) -> str:
    """One CLI step; every step of the loop exits 0."""
    result = cli.invoke(app, ["--store", f"kglite://{store}", *args])
    assert result.exit_code == 0, f"{' '.join(args)}: exit {result.exit_code}\n{result.output[-3000:]}"
    return " ".join(result.output.split())


def pairs(path: Path) -> set[str]:
    return {ref for q in read_jsonl(path) for ref in q.derived_from if ref.startswith("ChangePair:")}


@pytest.fixture(scope="module")
def loop(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("loop")
    r1, r2, rows = split_tempomed(shared_data, tmp)
    store = tmp / "store.kgl"
    out: dict[str, Any] = {"tmp": tmp, "store": store, "rows": rows, "log": []}
    eval_args = ["eval", "run", str(tmp / "q1.jsonl"), "-m", "baseline/oracle", "-m", "baseline/frozen:2018"]
    # turn one
    step(store, "ingest", "tempomed", str(r1), "--release-date", "2024-01-01")
    step(store, "generate", "tempomed", "--out", str(tmp / "q1.jsonl"))
    out["run1"] = step(store, *eval_args, "--log-dir", str(tmp / "runs1"))
    # turn two: the newer release
    step(store, "ingest", "tempomed", str(r2), "--release-date", "2025-06-01")
    step(store, "generate", "tempomed", "--out", str(tmp / "all2.jsonl"))  # the whole set at the new snapshot
    out["since"] = step(store, "generate", "tempomed", "--since", str(tmp / "q1.jsonl"), "--out", str(tmp / "q2.jsonl"))
    verify = cli.invoke(app, ["--store", f"kglite://{store}", "bench", "verify", str(tmp / "q1.jsonl"),
                              "--format", "json"])
    assert verify.exit_code == 0, verify.output
    out["verify"] = json.loads(verify.output)
    out["verify_table"] = step(store, "bench", "verify", str(tmp / "q1.jsonl"))
    out["rerun"] = step(store, *eval_args, "--log-dir", str(tmp / "runs2"))  # the first config, another folder
    out["rerun_again"] = step(store, *eval_args, "--log-dir", str(tmp / "runs3"))  # and again: the same run
    out["new_run"] = step(store, "eval", "run", str(tmp / "q2.jsonl"), "-m", "baseline/oracle", "--log-dir",
                          str(tmp / "runs2"))
    run1 = next((tmp / "runs1").glob("run-*"))
    run2 = next((tmp / "runs3").glob("run-*"))  # the first config at the newer snapshot: old vs new release
    compared = cli.invoke(app, ["eval", "compare", str(run1), str(run2), "--iterations", "10", "--format", "json"])
    assert compared.exit_code == 0, compared.output
    out["compare"] = json.loads(compared.stdout)  # stderr holds the progress lines
    # the loop once more over the same releases: every step again, nothing new
    step(store, "ingest", "tempomed", str(r2), "--release-date", "2025-06-01")
    out["since_again"] = step(store, "generate", "tempomed", "--since", str(tmp / "q1.jsonl"), "--out",
                              str(tmp / "q2b.jsonl"))
    out["rerun_third"] = step(store, *eval_args, "--log-dir", str(tmp / "runs4"))
    return out


def test_generate_since_gives_exactly_the_new_change_pairs_and_the_changed_keys(loop: dict[str, Any]) -> None:
    tmp, rows = loop["tmp"], loop["rows"]
    old, new, whole = (list(read_jsonl(tmp / n)) for n in ("q1.jsonl", "q2.jsonl", "all2.jsonl"))
    changed = {c["id"] for c in loop["verify"]["changed"]}
    new_pairs = pairs(tmp / "all2.jsonl") - pairs(tmp / "q1.jsonl")
    assert len(new_pairs) == sum(1 for r in rows if int(r["Year_current"]) > 2019) > 0
    expected = {q.id for q in whole if set(q.derived_from) & new_pairs} | changed
    assert {q.id for q in new} == expected
    assert {q.id for q in whole} - {q.id for q in old} <= {q.id for q in new}  # every question not asked before
    assert pairs(tmp / "q2.jsonl") - pairs(tmp / "q1.jsonl") == new_pairs
    assert (tmp / "q2b.jsonl").read_bytes() == (tmp / "q2.jsonl").read_bytes()  # the loop again: the same set


def test_verify_names_each_changed_key_with_old_and_new_evidence(loop: dict[str, Any]) -> None:
    report = loop["verify"]
    assert report["checked"] == len(list(read_jsonl(loop["tmp"] / "q1.jsonl")))
    assert report["changed"], "the newer release should change some answer keys of the old file"
    for c in report["changed"]:
        assert c["old_hash"] != c["new_hash"] and c["old_evidence"] != c["new_evidence"]
    first = report["changed"][0]
    assert f"{first['query']} " in loop["verify_table"] and "evidence row(s) then" in loop["verify_table"]


def test_the_first_config_re_run_elsewhere_exits_0_and_is_one_run(loop: dict[str, Any]) -> None:
    assert "predictions in the graph: 0 new" not in loop["run1"]
    # after the newer release the same config is a new run (it read a newer store): written, no conflict
    assert "error" not in loop["rerun"]
    assert "predictions in the graph: 0 new" in loop["rerun_again"]
    assert "predictions in the graph: 0 new" in loop["rerun_third"]
    runs2 = {p.name for p in (loop["tmp"] / "runs2").glob("run-*")}
    assert {p.name for p in (loop["tmp"] / "runs3").glob("run-*")} <= runs2
    rows = [r for r in loop["compare"] if r["metric"] == "accuracy"]  # each model both runs share, on the
    assert sorted(r["a"] for r in rows) == ["baseline/frozen:2018", "baseline/oracle"]  # questions both answered
    n = len(list(read_jsonl(loop["tmp"] / "q1.jsonl")))
    for row in rows:
        assert row["family"] == "tempomed" and row["a"] == row["b"] and row["n"] == n and row["test"] == "mcnemar"
        assert 0 <= row["p"] <= 1 and len(row["ci95"]) == 2


def test_compare_gives_every_metric_its_paired_test_and_interval(loop: dict[str, Any]) -> None:
    """Two models of the first run on the same questions: every metric `eval metrics` reports, with the
    difference, a paired permutation p and a paired bootstrap interval (accuracy: McNemar)."""
    from chronokg.metrics.runs import metrics, run_samples

    run1 = next((loop["tmp"] / "runs1").glob("run-*"))
    result = cli.invoke(app, ["eval", "compare", str(run1), str(run1), "--model-a", "baseline/oracle",
                              "--model-b", "baseline/frozen:2018", "--iterations", "25", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["metric"]: r for r in json.loads(result.stdout)}
    _, samples = run_samples(run1)
    own = {m.metric: m.value for m in metrics(samples, ["baseline/oracle", "baseline/frozen:2018"])
           if m.value is not None and m.model == "baseline/oracle"}
    assert set(own) <= set(rows) and len(rows) > len(own) > 1  # scalar metrics, and groups as metric[group]
    for name, value in own.items():
        assert rows[name]["value_a"] == pytest.approx(value)
    accuracy, tempomed = rows["accuracy"], rows["tempomed.accuracy"]
    assert accuracy["test"] == "mcnemar" and accuracy["value_a"] == 1.0 > accuracy["value_b"]
    assert tempomed["test"] == "paired permutation" and tempomed["difference"] > 0
    assert tempomed["p"] < 0.05 and 0 < tempomed["ci95"][0] <= tempomed["difference"] <= tempomed["ci95"][1]
    for row in rows.values():
        if row["test"] == "paired permutation":
            assert 0 < row["p"] <= 1 and row["ci95"][0] <= row["difference"] + 1e-9 <= row["ci95"][1] + 2e-9
    assert rows["tempomed.accuracy_bootstrap[up_to_date]"]["test"] == "none"  # resamples itself: point values


def test_regenerating_keeps_both_snapshots_verifiable(loop: dict[str, Any]) -> None:
    from chronokg.graph.kglite_store import KgliteStore

    with KgliteStore(loop["store"], read_only=True) as store:
        snaps = store.run("MATCH (q:Question)-[:GENERATED_AT]->(s:Snapshot) RETURN s.id AS s, count(q) AS n "
                          "ORDER BY s")
    old = {q.snapshot for q in read_jsonl(loop["tmp"] / "q1.jsonl")}
    new = {q.snapshot for q in read_jsonl(loop["tmp"] / "all2.jsonl")}
    assert len(snaps) == 2 and {r["s"] for r in snaps} == old | new
    assert {r["s"]: r["n"] for r in snaps}[next(iter(old))] == len(list(read_jsonl(loop["tmp"] / "q1.jsonl")))


CHROKNOW = Path(__file__).parent / "fixtures" / "chroknow" / "bench"


def newer_revision(src: Path, dst: Path) -> None:
    """The next ChroKnowBench snapshot (rows built from yearly Wikidata dumps): one more year per row of the
    General/Dynamic file, a new holder for every other subject."""
    shutil.copytree(src, dst)
    path = dst / "TimeVariant_General_Dynamic.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for n, row in enumerate(rows):
        last = max(int(k.removeprefix("objects_")) for k in row if k.startswith("objects_"))
        row[f"objects_{last + 1}"] = row[f"objects_{last}"] if n % 2 else [["Someone New"]]
        row[f"release_date_{last + 1}"] = f"{last + 1}-12-30"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_loop_on_chroknow_with_a_newer_snapshot(tmp_path: Path) -> None:
    store = tmp_path / "store.kgl"
    newer_revision(CHROKNOW, tmp_path / "r2")
    q1, q2, all2 = tmp_path / "c1.jsonl", tmp_path / "c2.jsonl", tmp_path / "all2.jsonl"
    run = ["eval", "run", str(q1), "-m", "baseline/oracle"]
    step(store, "ingest", "chroknow", str(CHROKNOW))
    step(store, "generate", "chroknow", "--out", str(q1))
    step(store, *run, "--log-dir", str(tmp_path / "runs1"))
    step(store, "ingest", "chroknow", str(tmp_path / "r2"))
    step(store, "generate", "chroknow", "--out", str(all2), "--no-write")
    step(store, "generate", "chroknow", "--since", str(q1), "--out", str(q2))
    verify = cli.invoke(app, ["--store", f"kglite://{store}", "bench", "verify", str(q1), "--format", "json"])
    assert verify.exit_code == 0, verify.output
    changed = {c["id"] for c in json.loads(verify.output)["changed"]}
    assert changed
    old, whole, new = ({q.id for q in read_jsonl(p)} for p in (q1, all2, q2))
    assert whole - old and new == (whole - old) | (changed & whole)
    assert "error" not in step(store, *run, "--log-dir", str(tmp_path / "runs2"))
    assert "predictions in the graph: 0 new" in step(store, *run, "--log-dir", str(tmp_path / "runs3"))


def test_the_demo_shows_the_loop(demo_command: DemoRun) -> None:
    out = " ".join(demo_command.output.split())
    for text in ("--since", "new or changed since", "bench verify", "paired comparison", "releases list"):
        assert text in out, text
    steps = re.findall(r"step (\d+): ", out)
    assert steps == [str(n) for n in range(1, 12)]
    verdicts = re.findall(r"answer keys re-run: (\d+) answers changed, (\d+) evidence only", out)
    assert verdicts[0] == ("0", "0")  # the showcase verifies questions just generated: nothing changed
    # the loop's: the newer guideline is new evidence for the old keys; their answers, asked at dates before it,
    # stand
    assert len(verdicts) == 2 and verdicts[1][0] == "0" and int(verdicts[1][1]) > 0
    assert (demo_command.folder / "demo-loop" / "q2.jsonl").stat().st_size > 0
    # the loop's re-scoring says what it wrote: as many flips as its flips.json holds (verify found no answer
    # changed: TempoMed's releases never rewrite a decision; the corpus's later release, before the loop, does)
    said = re.search(r"(\d+) samples re-scored, (\d+) verdicts flipped", out[out.index("the research loop"):])
    assert said is not None
    rescored = next((demo_command.folder / "demo-loop" / "rescored").glob("run-*"))
    flips = json.loads((rescored / "flips.json").read_text(encoding="utf-8"))
    assert int(said.group(2)) == len(flips) == 0
    assert int(said.group(1)) == sum(1 for line in (rescored / "samples.jsonl").read_text().splitlines() if line)
    assert "accuracy-by-valid-year run=" in out and "baseline/frozen:2018 2026" in out


def test_a_resume_keeps_every_option_and_refuses_a_changed_one(tmp_path: Path) -> None:
    from chronokg.demo.loop import write_releases
    from chronokg.graph.kglite_store import KgliteStore

    first, _ = write_releases(tmp_path)
    store = tmp_path / "store.kgl"
    step(store, "ingest", "tempomed", str(first), "--release-date", "2024-01-01")
    step(store, "generate", "tempomed", "--out", str(tmp_path / "q.jsonl"), "--no-write")
    step(store, "eval", "run", str(tmp_path / "q.jsonl"), "-m", "baseline/oracle", "--no-write", "--log-dir",
         str(tmp_path / "runs"))
    (folder,) = (tmp_path / "runs").glob("run-*")
    out = step(store, "eval", "run", "--resume", str(folder))  # resumed: still --no-write
    assert "predictions in the graph" not in out
    with KgliteStore(store, read_only=True) as reader:
        assert not reader.run("MATCH (n) WHERE n:Prediction OR n:Run OR n:Question RETURN n.id AS id LIMIT 1")
    for flag, words in ((["--protocol", "chronokg"], "--protocol was 'seed'"), (["--write"], "--write was False"),
                        (["--samples", "2"], "--samples was 1"), (["-m", "baseline/frozen:2018"], "--model was")):
        result = cli.invoke(app, ["--store", f"kglite://{store}", "eval", "run", "--resume", str(folder), *flag])
        assert result.exit_code == 2 and words in " ".join(result.output.split()), result.output
    step(store, "eval", "run", "--resume", str(folder), "--concurrency", "3")  # how fast, not what: allowed


def newer_wikidata_revision(src: Path, dst: Path) -> None:
    """The next revision of Henning Christophersen (Q646148): the start of his dated "position held" statement
    corrected (1978-08-30 -> 1978-05-01), and a new one starting in 2020; a later revision id and date."""
    entity = json.loads(src.read_text())
    body = entity["entities"]["Q646148"] if "entities" in entity else entity
    body["lastrevid"] = int(body["lastrevid"]) + 1
    body["modified"] = "2024-05-01T00:00:00Z"
    first, second = body["claims"]["P39"]

    def when(pid: str, day: str) -> dict[str, Any]:
        return {"snaktype": "value", "property": pid, "datatype": "time", "datavalue": {"type": "time", "value": {
            "time": f"+{day}T00:00:00Z", "timezone": 0, "before": 0, "after": 0, "precision": 11,
            "calendarmodel": "http://www.wikidata.org/entity/Q1985727"}}}

    second["qualifiers"]["P580"] = [when("P580", "1978-05-01")]
    added = json.loads(json.dumps(second))
    added["id"] = "Q646148$00000000-0000-4000-8000-000000000001"
    added["mainsnak"]["datavalue"]["value"] = {"entity-type": "item", "numeric-id": 1469535, "id": "Q1469535"}
    added["qualifiers"] = {"P580": [when("P580", "2020-03-01")]}
    added["qualifiers-order"] = ["P580"]
    body["claims"]["P39"] = [first, second, added]
    dst.write_text(json.dumps(entity))


def test_the_loop_on_chroknow_from_wikidata_entities_and_a_newer_revision(shared_data: Path, tmp_path: Path) -> None:
    """ChroKnow General items built from Wikidata statements (the paper's source): the real entity files, then a
    newer revision of one of them; `--since` gives exactly the questions of the changed statements."""
    entities = sorted((shared_data / "wikidata-entities").glob("Q*.json"))
    assert len(entities) >= 3
    revision = tmp_path / "Q646148.json"
    newer_wikidata_revision(shared_data / "wikidata-entities" / "Q646148.json", revision)
    store = tmp_path / "store.kgl"
    q1, q2, all2 = tmp_path / "w1.jsonl", tmp_path / "w2.jsonl", tmp_path / "all2.jsonl"
    run = ["eval", "run", str(q1), "-m", "baseline/oracle"]
    step(store, "ingest", "wikidata", *map(str, entities), "--properties", "timed")
    step(store, "generate", "chroknow", "--out", str(q1))
    first = list(read_jsonl(q1))
    assert {q.metadata["origin"] for q in first} == {"wikidata"}
    mine = {q.id for q in first if q.metadata["fact_key"] == "wd-Q646148-P39"}
    assert {q.metadata["year"] for q in first if q.id in mine} == {1978, 1979}
    step(store, *run, "--log-dir", str(tmp_path / "runs1"))
    step(store, "ingest", "wikidata", str(revision), "--properties", "timed")  # the newer revision
    step(store, "generate", "chroknow", "--out", str(all2), "--no-write")
    step(store, "generate", "chroknow", "--since", str(q1), "--out", str(q2))
    new = list(read_jsonl(q2))
    assert {q.metadata["fact_key"] for q in new} == {"wd-Q646148-P39"}  # only the changed statements' item
    assert {q.metadata["year"] for q in new} == {1978, 1979, 2020}  # the changed years and the new one
    whole = {q.id: q for q in read_jsonl(all2)}
    assert {q.id for q in new} == {i for i, q in whole.items() if q.metadata["fact_key"] == "wd-Q646148-P39"}
    assert {q.id for q in whole.values() if q.metadata["fact_key"] != "wd-Q646148-P39"} <= {q.id for q in first}
    verify = cli.invoke(app, ["--store", f"kglite://{store}", "bench", "verify", str(q1), "--format", "json"])
    assert verify.exit_code == 0, verify.output
    changed = json.loads(verify.output)["changed"]
    assert {c["id"] for c in changed} == mine  # every old key of the changed statements, and only those
    assert all(c["old_evidence"] != c["new_evidence"] for c in changed)
    assert "error" not in step(store, *run, "--log-dir", str(tmp_path / "runs2"))
    assert "predictions in the graph: 0 new" in step(store, *run, "--log-dir", str(tmp_path / "runs3"))
