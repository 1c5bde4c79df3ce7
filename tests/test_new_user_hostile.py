"""Hostile input from a new user: odd store URIs, stored text that looks like markup, bad cutoffs."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import StoreError
from chronokg.store_uri import StoreURI, redact

HOSTILE = ("Use **bold** [x]evil[/x] </script><script>alert(1)</script> /*DATA*/ \"dq\" 'sq' `tick` "
           "<img src=x onerror=alert(2)> | pipe | # hash [link](http://e.example)")


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A store holding one TempoMed chain (90000002 -> 90000001 -> 90000003) whose every text is hostile."""
    folder = tmp_path_factory.mktemp("hostile")
    records = []
    for i, (cur, year, prior, prior_year) in enumerate([("90000001", 2020, "90000002", 2012),
                                                        ("90000003", 2023, "90000001", 2020)]):
        records.append({"idx": i, "PMID_current": cur, "Year_current": year, "PMID_prior": prior,
                        "Year_prior": prior_year,
                        "Question": f"Q{i} {HOSTILE} According to the American Hostile Society guideline issued in "
                                    f"{year}, which is most appropriate?",
                        "Answer": {"Choice_A": f"A{i} current {HOSTILE}", "Choice_B": f"B{i} prior {HOSTILE} "
                                   + "L" * 10_000, "Choice_C": f"C{i} {HOSTILE}", "Choice_D": f"D{i} </script>",
                                   "Correct": "A", "Explanation": f"E{i} {HOSTILE}",
                                   "Choice_E": "I do not know the answer"}})
    source = folder / "hostile.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    uri = f"kglite://{folder / 's.kgl'}"
    result = CliRunner().invoke(app, ["--store", uri, "ingest", "tempomed", str(source)])
    assert result.exit_code == 0, result.output
    yield uri


@pytest.mark.parametrize("text", ["bolt://localhost:99999", "bolt://u:s3cret@localhost:notaport",
                                  "neo4j://u:s3cret@host:-1", "neo4j://u:s3cret@[::1", "bolt://u:s3cret@h:0"])
def test_a_bad_port_is_refused_when_parsed_without_the_password(text: str) -> None:
    with pytest.raises(StoreError, match="not a usable store URI") as caught:
        StoreURI.parse(text)
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize("text", ["bolt://u:pa/s3cret@127.0.0.1:7687", "bolt://u:pa?s3cret@127.0.0.1:7687",
                                  "bolt://u:pa#s3cret@127.0.0.1:7687", "bolt://u:pa@s3cret@127.0.0.1:7687"])
def test_a_password_typed_with_uri_characters_stays_a_password(text: str) -> None:
    uri = StoreURI.parse(text)
    assert uri.location == "127.0.0.1:7687" and uri.credentials()[1] is not None
    assert uri.credentials()[1].endswith("s3cret")  # type: ignore[union-attr]
    assert "s3cret" not in uri.redacted() and "s3cret" not in redact(text)
    assert "s3cret" not in redact(text.replace("://", ":/"))  # a mistyped scheme still hides the login


def test_an_embedded_uri_with_no_path_is_refused_and_a_tilde_is_home(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for text in ("kglite://", "kglite://?durable=off"):
        with pytest.raises(StoreError, match="names no file"):
            StoreURI.parse(text)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert StoreURI.parse("kglite://~/s.kgl").file == str(tmp_path / "s.kgl")
    assert StoreURI.parse("kglite://data/s@1.kgl").file == "data/s@1.kgl"


@pytest.mark.parametrize(("text", "says"), [("kglite:///s.kgl?=x", "an option with no name"),
                                            ("kglite:///s.kgl?durable=off&durable=full", "option durable given twice"),
                                            ("bolt://u:s3cret@h:7687?a=1&a=2", "option a given twice")])
def test_an_option_with_no_name_or_given_twice_is_refused(text: str, says: str) -> None:
    with pytest.raises(StoreError, match=says) as caught:
        StoreURI.parse(text)
    assert "s3cret" not in str(caught.value)


MARKUP = ["[x]evil[/x]", "</script><script>alert(1)</script>", "/*DATA*/", "**bold** _em_ `code`", "# heading",
          "- item", "1. first", "![i](http://e.example/i.png) [l](http://e.example)", "a | b", "&lt; &#60;",
          "$x$ ~~gone~~", "\"dq\" 'sq' \\ back", "L" * 10_000]


def test_report_markdown_shows_stored_text_as_itself() -> None:
    import html

    from markdown_it import MarkdownIt

    from chronokg.reports.document import Bullets, Heading, Para, TableBlock, markdown
    from chronokg.reports.tables import Table

    md = markdown([Heading(1, MARKUP[0]), *(Para(t) for t in MARKUP), Bullets(MARKUP),
                   TableBlock(Table(headers=["group", "n"], rows=[[t, "1."] for t in MARKUP], numeric=False))])
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    for tag in ("<script", "<img", "<a ", "<strong", "<em", "<code", "<h2", "<ol", "<del", "<li><ul"):
        assert tag not in rendered, tag
    for text in MARKUP:  # each text once as a paragraph, once as a list item, once as a cell
        assert rendered.count(html.escape(text, quote=False).replace('"', "&quot;")) >= 3, text[:40]


def test_a_model_given_twice_is_refused_before_a_folder_is_made(tmp_path: Path) -> None:
    from chronokg.errors import ChronoKGError
    from chronokg.eval import runner

    entries = [runner.ModelEntry(spec="baseline/random"), runner.ModelEntry(spec="baseline/random")]
    with pytest.raises(ChronoKGError, match="baseline/random: given twice"):
        runner.prepare(tmp_path / "runs", [tmp_path / "q.jsonl"], entries, runner.RunOptions())
    assert not (tmp_path / "runs").exists()


def test_two_cutoffs_for_one_model_are_refused() -> None:
    from chronokg.errors import ChronoKGError
    from chronokg.eval.cutoff import parse_declared

    with pytest.raises(ChronoKGError, match=r"baseline/oracle=2019.*2018-01-01 already"):
        parse_declared(["baseline/oracle=2018", "baseline/oracle=2019"])
    assert parse_declared(["baseline/oracle=2018", "baseline/oracle=2018-01-01"]) == {"baseline/oracle": "2018-01-01"}


def test_a_bad_models_file_entry_is_named_with_its_field(tmp_path: Path) -> None:
    from chronokg.models.client_errors import ModelConfigError
    from chronokg.models.spec import load_entries

    path = tmp_path / "models.toml"
    path.write_text('[models.good]\nspec = "baseline/oracle"\ncutoff = 2016\n\n'
                    '[models.bad]\nspec = "baseline/oracle"\ncutoff = "2016-13"\n', encoding="utf-8")
    with pytest.raises(ModelConfigError, match=r"models\.toml, \[models\.bad\] cutoff: month must be in 1\.\.12$"):
        load_entries(path)
    path.write_text('[models."a/b c"]\nconcurrency = 0\n', encoding="utf-8")
    with pytest.raises(ModelConfigError, match=r'\[models\."a/b c"\] concurrency: '):
        load_entries(path)


def test_the_known_grid_table_names_each_fact_s_object(hostile_store: str) -> None:
    result = CliRunner().invoke(app, ["--store", hostile_store, "query", "known-grid", "--subject", "90000001"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "superseded_by" in result.output and "90000003" in result.output  # the fact's object, not just its name


@pytest.mark.parametrize(("args", "says"), [
    (["--table3", "--protocol", "chronokg"], "--table3 builds the seed's Table 3 items (--protocol seed)"),
    (["--options", "3"], "--options 3: give 4 or 5"),
    (["--no-mcq"], "--no-mcq without --probes or --table3: no kind of item is asked for")])
def test_generate_tempomed_refuses_bad_options_in_one_line(hostile_store: str, tmp_path: Path, args: list[str],
                                                          says: str) -> None:
    out = tmp_path / "q.jsonl"
    result = CliRunner().invoke(app, ["--store", hostile_store, "generate", "tempomed", *args, "--out", str(out)])
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output, result.output
    assert not out.exists()


def test_a_models_file_cutoff_of_a_baseline_alias_is_the_run_s(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from chronokg.eval import cutoff, runner

    path = tmp_path / "models.toml"
    path.write_text('[models.old]\nspec = "baseline/frozen:2018"\ncutoff = 2016\n', encoding="utf-8")
    monkeypatch.setenv("CHRONOKG_MODELS_FILE", str(path))
    resolved = runner.check_models([runner.ModelEntry(spec="old")], runner.RunOptions())
    assert resolved == [{"spec": "baseline/frozen:2018", "cutoff": "2016-01-01"}]
    found = cutoff.resolve([{"spec": "old", "resolved": resolved[0]}], [])["old"]
    assert (found.date, found.estimated, found.source) == (dt.date(2016, 1, 1), False, "declared (the models file)")


def test_python_dash_m_chronokg_is_the_command() -> None:
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    done = subprocess.run([sys.executable, "-m", "chronokg", "--help"], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert done.returncode == 0 and "Usage: python -m chronokg" in done.stdout, done.stderr[-500:]


def test_a_changed_models_file_cutoff_is_another_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronokg.eval import runner

    questions = tmp_path / "q.jsonl"
    questions.write_text("", encoding="utf-8")
    path = tmp_path / "models.toml"
    monkeypatch.setenv("CHRONOKG_MODELS_FILE", str(path))
    folders = []
    for year in (2016, 2017, 2016):
        path.write_text(f'[models.old]\nspec = "baseline/frozen:2018"\ncutoff = {year}\n', encoding="utf-8")
        folder, info = runner.prepare(tmp_path / "runs", [questions], [runner.ModelEntry(spec="old")],
                                      runner.RunOptions())
        assert info.models[0]["resolved"]["cutoff"] == f"{year}-01-01"
        folders.append(folder)
    assert folders[0] != folders[1] and folders[0] == folders[2]
    declared, _ = runner.prepare(tmp_path / "runs", [questions], [runner.ModelEntry(spec="old")],
                                 runner.RunOptions(cutoffs={"old": "2017-01-01"}))
    assert declared == folders[1]  # the same declared cutoff, from the models file or --cutoff: the same run


def test_eval_score_refuses_two_outputs_for_one_sample_and_a_bad_sample(hostile_store: str, tmp_path: Path) -> None:
    cli = CliRunner()
    questions = tmp_path / "q.jsonl"
    made = cli.invoke(app, ["--store", hostile_store, "generate", "tempomed", "--out", str(questions)])
    assert made.exit_code == 0, made.output
    first = json.loads(questions.read_text(encoding="utf-8").splitlines()[0])["id"]
    for rows, says in ([{"id": first, "output": "A"}, {"id": first, "output": "B"}],
                       "record 2: question .* sample 0 is answered by record 1 already"), \
                      ([{"id": first, "output": "A", "sample": "x"}], "record 1: sample must be a whole number"):
        predictions = tmp_path / "p.jsonl"
        predictions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        result = cli.invoke(app, ["--store", hostile_store, "eval", "score", str(questions), str(predictions),
                                  "--model", "m", "--log-dir", str(tmp_path / "runs")])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert re.search(says, " ".join(result.output.split())), result.output
        assert not (tmp_path / "runs").exists()


def test_out_to_a_device_writes_to_it_and_never_replaces_it(hostile_store: str, tmp_path: Path) -> None:
    """`--out /dev/stdout` (here a link to /dev/null): the questions go there; a rename would have put a file in
    place of the link (as root, in place of /dev/stdout itself)."""
    out = tmp_path / "out.jsonl"
    out.symlink_to("/dev/null")
    result = CliRunner().invoke(app, ["--store", hostile_store, "generate", "tempomed", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_symlink() and not (tmp_path / "out.jsonl.part").exists()


def test_export_rdf_to_a_device_never_replaces_it(tmp_path: Path) -> None:
    from rdflib import Graph

    from chronokg.ingest.wikidata_rdf import write

    out = tmp_path / "wd.nt"
    out.symlink_to("/dev/null")
    assert write(Graph(), out) == 0
    assert out.is_symlink() and not (tmp_path / "wd.nt.part").exists()


def a_run(tmp_path: Path) -> Path:
    """A run folder of baseline/oracle with one scored sample."""
    from chronokg.eval.log import RunInfo, SampleRecord, write_info

    folder = tmp_path / "run-x"
    folder.mkdir()
    write_info(folder, RunInfo(run_id="run-x", models=[{"spec": "baseline/oracle"}], questions=[], protocol="seed",
                               samples=1, options={}, status="complete"))
    record = SampleRecord(question_id="q-1", model="baseline/oracle", family="tempomed", variant="v", output="A",
                          answer="A", correct=True, score=1.0)
    (folder / "samples.jsonl").write_text(record.model_dump_json() + "\n", encoding="utf-8")
    return folder


def test_eval_metrics_refuses_a_model_the_run_does_not_hold(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "metrics", str(a_run(tmp_path)), "-m", "baseline/orcale"])
    assert result.exit_code == 2, result.output
    assert "--model baseline/orcale: not a model of" in " ".join(result.output.split())


def test_eval_compare_refuses_a_model_a_run_does_not_hold(tmp_path: Path) -> None:
    folder = str(a_run(tmp_path))
    result = CliRunner().invoke(app, ["eval", "compare", folder, folder, "--model-a", "baseline/oracle",
                                      "--model-b", "baseline/orcale", "-f", "json"])
    assert result.exit_code == 2, result.output
    assert "--model-b baseline/orcale: no answers of it in" in " ".join(result.output.split())


@pytest.mark.parametrize(("models", "says"), [(["baseline/oracle", "baseline_oracle"], "would share the seed files"),
                                              ([".."], "cannot name a seed file")])
def test_eval_export_refuses_models_whose_seed_files_collide(tmp_path: Path, models: list[str], says: str) -> None:
    from chronokg.eval.log import RunInfo, SampleRecord, write_info

    folder = tmp_path / "run-x"
    folder.mkdir()
    write_info(folder, RunInfo(run_id="run-x", models=[{"spec": m} for m in models], questions=[], protocol="seed",
                               samples=1, options={}, status="complete"))
    (folder / "samples.jsonl").write_text("".join(SampleRecord(question_id="q-1", model=m, output="A").model_dump_json()
                                                  + "\n" for m in models), encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "export", str(folder), "--out", str(tmp_path / "out"), "--format",
                                      "seed"])
    assert result.exit_code == 2 and says in " ".join(result.output.split()), result.output
    assert not (tmp_path / "out").exists()


def test_eval_report_refuses_a_model_no_run_holds_and_writes_nothing(tmp_path: Path) -> None:
    folder = str(a_run(tmp_path))
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["eval", "report", folder, "--out", str(out), "-m", "baseline/orcale", "-m",
                                      "baseline/oracle"])
    assert result.exit_code == 2, result.output
    assert "--model baseline/orcale: no run holds answers of it" in " ".join(result.output.split())
    assert not out.exists() or not any(out.iterdir())
