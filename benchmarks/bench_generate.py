"""Benchmark generation: how long building each family's questions from the graph takes, with no LLM.

The targets, on this machine: "all TempoMed items and probes for 721 records in <= 10 s" and "MI-CXR over
10,000 synthetic patients in <= 60 s". Each section prints its stages with their wall time, then the counts per
question type and the answer-letter shares.

    python benchmarks/bench_generate.py --family micxr                    # 10,000 synthetic patients
    python benchmarks/bench_generate.py --family micxr --patients 1000 --compare
    python benchmarks/bench_generate.py --family all --out results.json

MI-CXR stages: `synth` writes a synthetic cohort (`chronokg.ingest.cxr_synth`: scene graphs and metadata files,
five visits, `--findings` findings per patient, the double-event patterns included so second-event questions
exist); `load` loads it into a file-backed embedded store (`chronokg.ingest.cxr.load`, the `chronokg ingest cxr`
path); `open` reopens the store read-only, as `chronokg generate` does; `generate` builds every question
(`chronokg.bench.family.generate("micxr")`: one `cxr-windows` and one `cxr-timelines` query, selection, answer
keys); `verify` re-runs every distinct answer key against the store (`chronokg bench verify`), which must report
0 changed; `write` writes the canonical JSONL. `--compare` also times `generate` with one `cxr-window` query per
window (`--no-bulk`). The target is compared with `generate`, the family's own work; `synth` and `load` are
printed beside it because they are what a user waits for first.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MICXR_TARGET_S = 60.0
TEMPOMED_TARGET_S = 10.0


@dataclass
class Stage:
    name: str
    seconds: float
    note: str = ""


@dataclass
class Section:
    family: str
    stages: list[Stage] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    letters: dict[str, float] = field(default_factory=dict)
    target: tuple[str, float] | None = None  # (stage, seconds)

    def timed(self, name: str, fn: Callable[[], Any], note: Callable[[Any], str] | None = None) -> Any:
        start, cpu = time.perf_counter(), time.process_time()
        value = fn()
        used = time.process_time() - cpu
        self.stages.append(Stage(name, time.perf_counter() - start, note(value) if note else ""))
        print(f"  {name:<22} {self.stages[-1].seconds:9.2f} s  (CPU {used:.2f} s)  {self.stages[-1].note}", flush=True)
        return value

    def seconds(self, name: str) -> float:
        return next(s.seconds for s in self.stages if s.name == name)


def counted(section: Section, questions: list[Any]) -> None:
    """Counts per question type and answer-letter shares (percent)."""
    section.counts = dict(sorted(Counter(q.metadata.get("qtype", q.variant) for q in questions).items()))
    letters = Counter(q.target for q in questions)
    section.letters = {k: round(100 * v / len(questions), 2) for k, v in sorted(letters.items())} if questions else {}


# --- TempoMed ------------------------------------------------------------------------------------------------


def run_tempomed(args: argparse.Namespace) -> Section:
    """All TempoMed items and year-sweep probes for `--records` MCQ records (721, the released set).

    The shared sample holds 559 of the 721 released records; the rest are copies of real records with new
    PMIDs and idx (said in the output), so the store holds 721 change pairs of realistic size.
    """
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.verify import verify_questions
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.ingest import tempomed
    from chronokg.ingest.common import read_json_blocks

    section = Section("tempomed", target=("generate", TEMPOMED_TARGET_S))
    data = Path(args.tempomed)
    source = next(data.glob("*.jsonl"))
    records = [obj for _, _, obj in read_json_blocks(source)]
    real = len(records)
    k = 0
    while len(records) < args.records:
        copy = dict(records[k % real])
        copy.update(idx=100_000 + k, PMID_current=str(90_000_000 + 2 * k), PMID_prior=str(90_000_001 + 2 * k))
        records.append(copy)
        k += 1
    root = Path(tempfile.mkdtemp(prefix="bench-generate-tempomed-"))
    try:
        path = root / "records.jsonl"
        path.write_text("\n\n".join(json.dumps(r, indent=2) for r in records) + "\n", encoding="utf-8")
        print(f"TempoMed: {len(records)} MCQ records ({real} real, {len(records) - real} copies with new PMIDs)")
        store = KgliteStore(":memory:")
        section.timed("load", lambda: tempomed.load(store, [path]), lambda s: f"{s.records} records")
        snap = snapshot.current(store)
        questions, _ = section.timed("generate", lambda: generate("tempomed", store, snap, {"probes": True}),
                                     lambda r: f"{len(r[0]):,} items and probes")
        report = section.timed("verify", lambda: verify_questions(store, questions),
                               lambda r: f"{r.keys:,} keys re-run, {len(r.changed)} changed")
        if report.changed:
            raise SystemExit(f"{len(report.changed)} answer keys changed right after generation")
        counted(section, questions)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return section


# --- MI-CXR --------------------------------------------------------------------------------------------------


def run_micxr(args: argparse.Namespace) -> Section:
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.question import write_jsonl
    from chronokg.bench.verify import verify_questions
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.ingest import cxr, cxr_synth
    from chronokg.ingest.cxr import SOURCE_FILE

    section = Section("micxr", target=("generate", MICXR_TARGET_S))
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-generate-"))
    cohort_dir, store_path = root / "cohort", root / "store.kgl"
    print(f"MI-CXR: {args.patients:,} synthetic patients, 5 visits, {args.findings} findings each, in {root}")
    try:
        if args.reuse:
            print("  (reusing the cohort and store in --dir)")
        else:
            shutil.rmtree(cohort_dir, ignore_errors=True)
            store_path.unlink(missing_ok=True)
            patterns = cxr_synth.PATTERNS + cxr_synth.DOUBLE_EVENT_PATTERNS
            section.timed("synth", lambda: cxr_synth.generate(
                cohort_dir, patients=args.patients, visits=5, seed=args.seed, findings=args.findings,
                patterns=patterns), lambda c: f"{len(c.patients):,} patients, {5 * len(c.patients):,} studies")

            def load() -> Any:
                with KgliteStore(store_path) as store:
                    return cxr.load(store, [cohort_dir / "scene_data", cohort_dir / SOURCE_FILE])
            section.timed("load", load, lambda s: f"{s.studies:,} studies, {s.observations:,} observations")
        store = section.timed("open", lambda: KgliteStore(store_path, read_only=True))
        with store:
            snap = snapshot.current(store)
            options = {"seed": args.seed}
            questions, ctx = section.timed("generate", lambda: generate("micxr", store, snap, options),
                                           lambda r: f"{len(r[0]):,} questions (bulk: cxr-timelines)")
            if args.compare:
                again, _ = section.timed("generate --no-bulk", lambda: generate("micxr", store, snap,
                                                                               {**options, "bulk": False}),
                                         lambda r: f"{len(r[0]):,} questions (one cxr-window query per window)")
                if [q.id for q in again] != [q.id for q in questions]:
                    raise SystemExit("bulk and per-window generation disagree")
            report = section.timed("verify", lambda: verify_questions(store, questions),
                                   lambda r: f"{r.keys:,} keys re-run, {len(r.changed)} changed")
            if report.changed:
                raise SystemExit(f"{len(report.changed)} answer keys changed right after generation")
        section.timed("write", lambda: write_jsonl(root / "micxr.jsonl", questions),
                      lambda n: f"{n:,} lines, {(root / 'micxr.jsonl').stat().st_size / 2**20:.1f} MiB")
        counted(section, questions)
        for note in ctx.notes:
            print(f"  note: {note}")
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    return section


# --- report --------------------------------------------------------------------------------------------------


def show(section: Section) -> None:
    print(f"\n{section.family}: questions per type")
    for name, n in section.counts.items():
        print(f"  {name:<34} {n:>7,}")
    print(f"  {'total':<34} {sum(section.counts.values()):>7,}")
    print("  answer letters (%): " + ", ".join(f"{k} {v:.2f}" for k, v in section.letters.items()))
    if section.target is not None:
        stage, limit = section.target
        took = section.seconds(stage)
        print(f"  target: {stage} <= {limit:g} s: {took:.2f} s -> {'met' if took <= limit else 'NOT met'}")
    total = sum(s.seconds for s in section.stages)
    print(f"  all stages: {total:.2f} s ({', '.join(f'{s.name} {s.seconds:.1f}' for s in section.stages)})")


SECTIONS: dict[str, Callable[[argparse.Namespace], Section]] = {"tempomed": run_tempomed, "micxr": run_micxr}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--family", choices=["tempomed", "micxr", "all"], default="all")
    ap.add_argument("--tempomed", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" /
                                              "tempomed-bench"), help="the TempoMed-Bench sample folder")
    ap.add_argument("--records", type=int, default=721, help="TempoMed MCQ records (the released set has 721)")
    ap.add_argument("--patients", type=int, default=10_000, help="MI-CXR: synthetic patients (default 10,000)")
    ap.add_argument("--findings", type=int, default=5, help="MI-CXR: findings per patient (4+ for multi-entity GTS)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", action="store_true", help="MI-CXR: also time one cxr-window query per window")
    ap.add_argument("--dir", type=Path, help="work folder (kept); default a temporary one, removed")
    ap.add_argument("--reuse", action="store_true", help="MI-CXR: reuse the cohort and store already in --dir")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--out", type=Path, help="write the results as JSON")
    args = ap.parse_args()
    if args.reuse and not args.dir:
        ap.error("--reuse needs --dir")
    names = list(SECTIONS) if args.family == "all" else [args.family]
    results = []
    for name in names:
        try:
            section = SECTIONS[name](args)
        except NotImplementedError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        show(section)
        results.append(section)
    if args.out:
        args.out.write_text(json.dumps([asdict(s) for s in results], indent=2) + "\n")


if __name__ == "__main__":
    main()
