"""Every registered metric gives the same value as a pure function over a run's samples (`MetricSpec.compute`) and
as Cypher over the run's `Prediction` nodes (`MetricSpec.from_graph`), on small runs of the reference baselines
over the demo corpus in an in-memory store (Table 3's items: over the real TempoMed sample): seconds, so a new
metric is checked in the fast tier. (The families' `tests/test_eval_<family>.py` compare both forms again on the
real samples, in the slow tier.)

The runs are derived from the registries: one default run per family of `FAMILIES`, plus the runs of `RUNS`
below for metrics that count samples a default run does not make (probes, the stage-wise protocol, a second
pass). A metric that counts no rows on any run of its family fails, naming the line of `RUNS` to add."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.family import FAMILIES, generate
from chronokg.bench.question import Question, write_jsonl
from chronokg.eval import runner
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import RunInfo, SampleRecord, latest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.store import GraphStore
from chronokg.metrics.spec import MetricSpec, all_metrics
from tests.helpers import defined_at

MODELS = ["baseline/oracle", "baseline/latest-only", "baseline/frozen:2018", "baseline/random:3"]
QUESTIONS = 60  # at most this many questions of each run, in the order the family generates them


@dataclass(frozen=True)
class Answered:
    """One run's samples, as written into `store`."""

    store: GraphStore
    run_id: str
    samples: list[SampleRecord]


@dataclass(frozen=True, eq=False)  # a key of the fixture's tables, by identity
class Run:
    """A run of the baselines over one family's questions generated from the demo corpus."""

    family: str
    generate: dict[str, Any] = field(default_factory=dict)  # the family's `generate` options
    family_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # `eval run -O family.key=value`
    protocol: str = "chronokg"
    then: Callable[[Path, RunInfo, list[Question], Any], Answered] | None = None  # a pass over the run's folder
    # Data other than the demo corpus: loads an in-memory store of the run's own from ../shared/data.
    data: Callable[[GraphStore, Path], Any] | None = None

    @property
    def label(self) -> str:
        return f"{self.family} {self.generate or ''} {self.family_options or ''} {self.protocol}".strip()


def chroknow_prompt_pass(folder: Path, info: RunInfo, questions: list[Question], store: Any) -> Answered:
    """`eval chroknow-prompt` over the run: the samples `chroknow.prompt_gain` counts."""
    from chronokg.eval import chroknow_prompt as ckp

    pass_folder, pass_info = ckp.prepare(folder, folder.parent, ckp.PromptOptions(fraction=1.0, cache=False))
    samples = list(latest(folder / "samples.jsonl").values())
    pass_info, _ = ckp.run_pass(pass_folder, pass_info, samples, questions, store)
    return Answered(store, pass_info.run_id, list(latest(pass_folder / "samples.jsonl").values()))


def tempomed_sample(store: GraphStore, shared_data: Path) -> None:
    """The real TempoMed-Bench sample: its released MCQs, which Table 3's items ask (the demo holds none)."""
    from chronokg.ingest import tempomed

    tempomed.load(store, [shared_data / "tempomed-bench"])


# Runs beyond each family's default one (`Run(family)`): add one here when a metric counts samples that a default
# run of its family does not make.
RUNS: list[Run] = [
    Run("tempomed", {"mcq": False, "probes": True}),
    Run("tempomed", {"mcq": False, "table3": True, "protocol": "seed", "limit": 10}, protocol="seed",
        data=tempomed_sample),
    Run("micxr", family_options={"micxr": {"stagewise": True}}),
    Run("chroknow", then=chroknow_prompt_pass),
]


def runs() -> list[Run]:
    return [Run(family) for family in FAMILIES.names()] + RUNS



@dataclass
class Fixture:
    answered: dict[Run, list[Answered]]
    questions: dict[Run, int]
    missing: dict[Run, str]  # runs whose data are not here (../shared/data outside CI): why


@pytest.fixture(scope="module")
def fast_runs(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Fixture]:
    from chronokg.demo.corpus import load_demo
    from chronokg.demo.sources import load_sources

    tmp = tmp_path_factory.mktemp("metric-runs")
    demo = KgliteStore(":memory:")
    load_demo(demo)
    load_sources(demo)
    stores = [demo]
    out = Fixture({}, {}, {})
    for n, run in enumerate(runs()):
        store = demo
        if run.data is not None:
            store = KgliteStore(":memory:")
            stores.append(store)
            try:
                run.data(store, request.getfixturevalue("shared_data"))
            except pytest.skip.Exception as exc:  # under CI the fixture fails instead
                out.missing[run] = str(exc)
                continue
        questions = generate(run.family, store, snapshot.current(store), run.generate)[0][:QUESTIONS]
        out.questions[run] = len(questions)
        if not questions:
            continue
        qfile = tmp / f"{n}.jsonl"
        write_jsonl(qfile, questions)
        options = runner.RunOptions(protocol=run.protocol, cache=False, concurrency=8,  # type: ignore[arg-type]
                                    family_options=run.family_options)
        folder, info = runner.prepare(tmp / f"runs-{n}", [qfile], [runner.ModelEntry(spec=m) for m in MODELS],
                                      options)
        info, _ = runner.run(folder, info, runner.load_questions([qfile], None), store)
        samples = list(latest(folder / "samples.jsonl").values())
        write_predictions(store, info, questions, samples)
        done = [Answered(store, info.run_id, samples)]
        if run.then is not None:
            follow = run.then(folder, info, questions, store)
            write_predictions(store, info.model_copy(update={"run_id": follow.run_id}), questions, follow.samples)
            done.append(follow)
        out.answered[run] = done
    yield out
    for store in stores:
        store.close()


@pytest.mark.parametrize("family", FAMILIES.names())
def test_every_family_generates_questions_from_the_demo_corpus(fast_runs: Fixture, family: str) -> None:
    empty = [run.label for run in fast_runs.questions if run.family == family and not fast_runs.questions[run]]
    assert not empty, (f"family {family!r} generates no question from the demo corpus for run(s) {empty}: add its "
                       "source's slice to the demo (chronokg/demo/sources.py) or give the run generate options in "
                       f"RUNS at {defined_at(__file__, 'RUNS')}")


@pytest.mark.parametrize("name", all_metrics().names())
def test_pure_and_cypher_forms_of_every_metric_agree(fast_runs: Fixture, name: str) -> None:
    spec: MetricSpec = all_metrics().get(name)
    mine = [(run, a) for run, done in fast_runs.answered.items() for a in done
            if spec.family is None or run.family == spec.family]
    assert mine, f"metric {name}: its family {spec.family!r} is not in FAMILIES (chronokg.bench.family)"
    counted = 0
    for run, answered in mine:
        for model in MODELS:
            counted += len(spec.count([s for s in answered.samples if s.model == model and s.ok
                                       and (spec.family is None or s.family == spec.family)]))
            pure = spec.compute(answered.samples, model)
            if spec.cypher is None:
                continue
            graph = spec.from_graph(answered.store, answered.run_id, model)
            assert pure.model_dump() == graph.model_dump(), (f"metric {name}, run {run.label}, {model}: the pure "
                                                             "and the Cypher forms differ")
    missing = [why for run, why in fast_runs.missing.items() if spec.family in (None, run.family)]
    if not counted and missing:
        pytest.skip(f"metric {name}: {missing[0]}")
    assert counted, (f"metric {name} counts no rows on the fast runs of {spec.family} "
                     f"({', '.join(run.label for run, _ in mine)}): add the run whose samples it counts to RUNS at "
                     f"{defined_at(__file__, 'RUNS')}")
