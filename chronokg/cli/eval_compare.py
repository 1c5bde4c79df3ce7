"""`chronokg eval compare`: two runs (or two models, or one config before and after a newer release) side by side
on the questions both answered, every metric with a paired test; progress on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import console, err, guarded


def register_compare(eval_app: typer.Typer) -> None:
    @eval_app.command("compare")
    def compare_command(
        run_a: Annotated[Path, typer.Argument(help="First run folder")],
        run_b: Annotated[Path, typer.Argument(help="Second run folder (may be the same)")],
        model_a: Annotated[str | None, typer.Option(help="Model of the first run [default: each model the two runs "
                                                         "share, or the first run's only model]")] = None,
        model_b: Annotated[str | None, typer.Option(help="Model of the second run [default: as --model-a]")] = None,
        iterations: Annotated[int, typer.Option(min=0, max=100_000, help="Draws of the paired permutation test and "
                                                "bootstrap per family (0: point values only)")] = 200,
        fmt: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
    ) -> None:
        """Paired comparison on the questions both runs answered (runs, models or releases side by side), per
        family: accuracy with McNemar's test, then every metric of the family with a paired permutation test and a
        paired bootstrap 95 % interval of the difference; each row counts the questions behind each value."""
        from chronokg.cli.progress import progress_bar
        from chronokg.cli.render import Format, emit
        from chronokg.errors import ChronoKGError
        from chronokg.eval.cutoff import of_run
        from chronokg.metrics.compare import compare_runs
        from chronokg.metrics.runs import run_samples

        def body() -> None:
            info_a, a = run_samples(run_a)
            info_b, b = run_samples(run_b)
            in_a, in_b = sorted({r.model for r in a}), sorted({r.model for r in b})
            if model_a or model_b:
                pairs = [(model_a or model_b or "", model_b or model_a or "")]
            else:
                shared = [m for m in in_a if m in in_b]
                pairs = [(m, m) for m in shared] or ([(in_a[0], in_b[0])] if len(in_a) == len(in_b) == 1 else [])
            if not pairs:
                raise ChronoKGError(f"the runs share no model ({', '.join(in_a)} / {', '.join(in_b)}): give --model-a "
                                    "and --model-b")
            for (m, held, run, flag) in ((pairs[0][0], in_a, run_a, "--model-a"),
                                         (pairs[0][1], in_b, run_b, "--model-b")):
                if m not in held:  # an empty comparison would read as two models with no question in common
                    raise ChronoKGError(f"{flag} {m}: no answers of it in {run} (its models: {', '.join(held)})")
            cut_a, cut_b = of_run(info_a, a), of_run(info_b, b)
            rows = []
            with progress_bar(err, lines=err) as progress:  # on stderr: stdout keeps the comparison alone
                for ma, mb in pairs:
                    rows.append((ma, mb, compare_runs(a, b, ma, mb, iterations, (cut_a[ma], cut_b[mb])
                                                      if ma in cut_a and mb in cut_b else None, progress)))
            if fmt == "json":
                emit(console, [row for _, _, found in rows for row in found], Format.json)
                return
            for ma, mb, found in rows:  # one table per pair of models: a and b said once, in its title
                at = [f" (cutoff {c[m].date or 'none'}{', estimated' if c[m].estimated else ''})" if m in c else ""
                      for c, m in ((cut_a, ma), (cut_b, mb))]
                paired = sum(r.n or 0 for r in found if r.metric == "accuracy")
                title = (f"paired comparison on {paired:,} questions both runs answered: a {ma}{at[0]}, "
                         f"b {mb}{at[1]} (n_a, n_b: the questions behind each value)")
                emit(console, found, Format.table, title=title,
                     columns=["family", "metric", "n_a", "n_b", "value_a", "value_b", "difference", "test", "p",
                              "ci95"],
                     priority=["metric", "value_a", "value_b", "difference", "p", "n_a", "n_b", "ci95"])
        guarded(body)
