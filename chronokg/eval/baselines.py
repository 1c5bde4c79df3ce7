"""Reference baselines: model clients (`baseline/<name>`) whose answers the metrics can predict.

They implement the same `ModelClient` protocol as a real model and answer through the family's
profile (`Profile.render`), so their outputs are extracted and scored by the same path:

- `baseline/random` (seeded, `baseline/random:SEED`): a uniformly random option;
- `baseline/constant:X`: always option X; `baseline/always-yes`: always the Yes option (or "YES");
- `baseline/oracle`: the answer its answer-key query gives now;
- `baseline/latest-only`: knows only what holds now (the answer key re-run as of today);
- `baseline/frozen:YYYY[-MM-DD]`: a simulated model with knowledge cutoff D, answering every question as
  of min(its target date, D);
- `baseline/embedding`: all-MiniLM-L6-v2 picks the option most similar to the question (a real model, the
  process's shared encoder; needs the `rag` extra).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from typing import Any

from chronokg.bench.family import FAMILIES
from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval.profile import profile_for
from chronokg.graph.dates import parse_date
from chronokg.models import Choice, Completion, ModelConfigError, ModelRequest
from chronokg.models.spec import ClientOptions
from chronokg.queries.spec import all_queries

NAMES = ("random", "constant", "always-yes", "oracle", "latest-only", "frozen", "embedding")


class Baseline:
    """A reference baseline (see the module docstring); `bind` gives it the questions and a store."""

    def __init__(self, spec: str, name: str, arg: str | None, today: dt.date | None = None) -> None:
        if name not in NAMES:
            raise ModelConfigError(f"unknown baseline {name!r} (known: {', '.join(NAMES)})")
        self._spec = spec
        self.name = name
        self.arg = arg
        self.today = today or dt.date.today()
        self.questions: dict[str, Question] = {}
        self.store: Any = None
        self._evidence: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._embedder: Any = None
        self.declared_cutoff: dt.date | None = None  # the knowledge cutoff a models-file entry declares
        if name == "frozen":
            if not arg:
                raise ModelConfigError("baseline/frozen needs a cutoff date: baseline/frozen:2018")
            self.cutoff = parse_date(arg)[0]
        if name == "constant" and not arg:
            raise ModelConfigError("baseline/constant needs a label: baseline/constant:A")

    @property
    def spec(self) -> str:
        return self._spec

    def bind(self, questions: Sequence[Question], store: Any = None, protocol: str = "seed") -> None:
        self.questions = {q.id: q for q in questions}
        self.store = store
        if self.name in {"oracle", "latest-only", "frozen"}:
            if store is None:
                raise ChronoKGError(f"baseline/{self.name} answers from the store: run it with a store")
            if not store.run("MATCH (f:Fact) RETURN f.id AS id LIMIT 1"):
                raise ChronoKGError(f"baseline/{self.name} answers from the store, and {store.uri} holds no facts: "
                                    "run it on the store the questions were generated from (--store URI)")

    async def aclose(self) -> None:
        return None

    async def generate(self, request: ModelRequest) -> Completion:
        qid = (request.metadata or {}).get("question_id")
        question = self.questions.get(str(qid))
        if question is None:
            raise ChronoKGError(f"baseline/{self.name} only answers questions of the run it is bound to")
        profile = profile_for(question.family)
        choices = [Choice(index=i, text=profile.render(question, self.choose(question, request.epoch + i)),
                          finish_reason="stop") for i in range(request.config.n)]
        return Completion(spec=self._spec, choices=choices, model=self._spec)

    # --- choosing -------------------------------------------------------------------------------------

    def choose(self, question: Question, sample: int) -> str:
        labels = [c.label for c in question.choices]
        if self.name == "random":
            rng = random.Random(f"{self.arg or 0}|{question.id}|{sample}")
            return rng.choice(labels) if labels else ""
        if self.name == "constant":
            return str(self.arg)
        if self.name == "always-yes":
            yes = [c.label for c in question.choices if c.role == "yes" or c.text.strip().lower() == "yes"]
            return yes[0] if yes else ("YES" if not labels else labels[0])
        if self.name == "embedding":
            return self._most_similar(question)
        date = None
        if self.name == "latest-only":
            date = self.today
        elif self.name == "frozen":
            target = question.target_date or self.today
            date = min(target, self.cutoff)
        answer = self._answer_at(question, date)
        if answer is None:  # nothing known then: abstain where the question offers it
            unknown = [c.label for c in question.choices if c.role == "unknown"]
            return unknown[0] if unknown else ""
        return answer

    def _answer_at(self, question: Question, date: dt.date | None) -> str | None:
        """The family's answer from the question's answer key re-run now (with its date moved to `date`)."""
        key = question.answer_key
        params = dict(key.params)
        if date is not None and "date" in params:
            params["date"] = date.isoformat()
        elif date is not None and "from" in params and "to" in params:  # a window key (ChroKnow's facts-during)
            start, end = (parse_date(str(params[k]))[0] for k in ("from", "to"))
            if not start <= date < end:  # answer as of the day `date` instead
                params["from"], params["to"] = date.isoformat(), (date + dt.timedelta(days=1)).isoformat()
        memo = (key.query, repr(sorted(params.items())))
        if memo not in self._evidence:
            rows = all_queries().get(key.query).run(self.store, params)
            self._evidence[memo] = [r.model_dump(mode="json") for r in rows]
        family = FAMILIES.get(question.family)
        if family.answer is None:
            return question.target
        return family.answer(question, self._evidence[memo])

    def _most_similar(self, question: Question) -> str:
        if not question.choices:
            return ""
        if self._embedder is None:
            from chronokg.retrieval.embed import shared_embedder

            self._embedder = shared_embedder()
        vectors = self._embedder.encode([question.input, *(c.text for c in question.choices)])
        scores = [float(vectors[0] @ v) for v in vectors[1:]]
        return question.choices[max(range(len(scores)), key=scores.__getitem__)].label


def baseline_client(options: ClientOptions) -> Baseline:
    """The factory `CLIENTS` knows as `baseline` (`baseline/oracle`, `baseline/frozen:2018`, ...)."""
    name, _, arg = options.model.partition(":")
    client = Baseline(options.spec, name, arg or None)
    client.declared_cutoff = options.cutoff  # an alias's models-file `cutoff`, which the run records
    return client
