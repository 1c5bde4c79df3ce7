"""`eval metrics RUN --from-graph` for a run the store does not hold (deleted, or a model it never ran) says so
in one line and exits non-zero, instead of an empty table that reads as a run that scored nothing."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.demo.loop import write_releases

cli = CliRunner()


def test_metrics_from_graph_of_a_run_the_store_lost(tmp_path: Path) -> None:
    first, _ = write_releases(tmp_path)
    store = ["--store", f"kglite://{tmp_path / 's.kgl'}"]

    def run(*args: str, code: int = 0) -> str:
        result = cli.invoke(app, [*store, *args])
        assert result.exit_code == code, f"{' '.join(args)}: exit {result.exit_code}\n{result.output[-3000:]}"
        return result.output

    run("ingest", "tempomed", str(first), "--release-date", "2024-01-01")
    run("generate", "tempomed", "--out", str(tmp_path / "q.jsonl"))
    run("eval", "run", str(tmp_path / "q.jsonl"), "-m", "baseline/oracle", "--log-dir", str(tmp_path / "runs"))
    (folder,) = (tmp_path / "runs").glob("run-*")
    held = run("eval", "metrics", str(folder), "--from-graph", "--format", "json")
    assert '"tempomed.accuracy"' in held
    out = run("eval", "metrics", str(folder), "--from-graph", "-m", "baseline/latest-only", code=2)
    assert "--model baseline/latest-only: not a model of" in " ".join(out.split()) and "Traceback" not in out
    run("eval", "runs", "delete", folder.name)
    out = run("eval", "metrics", str(folder), "--from-graph", code=2)
    lines = [line for line in out.splitlines() if line.strip()]
    assert " ".join(out.split()).startswith(f"error: run {folder.name}: the store") and "Traceback" not in out
    assert "holds no predictions of it" in " ".join(out.split()) and len(lines) <= 3  # one message, wrapped
    assert '"tempomed.accuracy"' in run("eval", "metrics", str(folder), "--format", "json")  # its own samples
