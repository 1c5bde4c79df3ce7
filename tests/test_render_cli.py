"""What a person sees: stored text printed as it is (never as markup), tables that fit the width, in a terminal
and in a pipe, through every command that prints stored text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.cli.common import fresh_consoles

FIXTURES = Path(__file__).parent / "fixtures" / "tempomed"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BOX = re.compile("[\u2500-\u257f]")

# Text a recommendation, a guideline's title, an organisation or a model name may hold: markup-like brackets, a
# lone backslash, HTML and JS fragments, quotes; and one string of 10,000 characters (distinct numbered words, so
# that their order can be checked after the table wrapped them).
NASTY = ['Treat [x] then [/x] and [bold]not bold[/bold]', 'a \\ backslash, </script> and /*DATA*/ here',
         'quotes "double" and \'single\' [strong recommendation, moderate-quality evidence] [/max 100 mg]']
LONG = " ".join(f"w{n:05d}[/i]" for n in range(1, 10_000 // 11 + 1))
TITLE = "Fever [/x] guideline [bold]\\ </script>"
ORG = "Society [x] of [/y] /*DATA*/"
# bidirectional controls (an override, an embedding, the isolates, their ends): raw, they reverse the rest of a line
BIDI = "Reverse \u202eSIHT\u202c then \u202bembed\u202c and \u2067isolate\u2069 \u2066x\u2069 \u2068y\u2069 end"
MODEL = 'nasty[x][/x][bold]"q"\u202edne'
RAW_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _inputs(folder: Path) -> Path:
    """The TempoMed fixture with its texts replaced by NASTY, LONG, TITLE and ORG, in a folder whose own name is
    markup-like (a release's path is printed by `releases list`)."""
    where = folder / "in [x] [bold]"
    where.mkdir()
    trajectory = json.loads((FIXTURES / "trajectory_90000003.json").read_text())
    trajectory["Title"] = TITLE
    trajectory["Organization"] = [ORG]
    (where / "trajectory_90000003.json").write_text(json.dumps(trajectory))
    diffs = json.loads((FIXTURES / "90000003_90000002_extracted_diffs.json").read_text())
    texts = [*NASTY, BIDI, LONG]
    for n, diff in enumerate(diffs):
        diff["current_recommendation"] = texts[n % len(texts)]
        diff["prior_recommendation"] = texts[(n + 1) % len(texts)]
    extra = [dict(diffs[0], clinical_focus=f"focus {n}", current_recommendation=texts[n],
                  prior_recommendation=texts[-1 - n]) for n in range(2, len(texts))]
    (where / "90000003_90000002_extracted_diffs.json").write_text(json.dumps(diffs + extra))
    return where


def invoke(store: Path, args: list[str], columns: int, terminal: bool) -> str:
    """`chronokg ARGS` at `columns`, on a terminal (rich's FORCE_COLOR) or in a pipe; its stdout, ANSI removed."""
    env = {"COLUMNS": str(columns), "FORCE_COLOR": "1" if terminal else None, "NO_COLOR": None, "TERM": "xterm"}
    fresh_consoles()
    try:
        result = CliRunner().invoke(app, ["--store", f"kglite://{store}", *args], env=env)
    finally:
        fresh_consoles()
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, (args, result.output)
    assert "Traceback" not in result.output
    return ANSI.sub("", result.stdout)


def shown_in_order(needle: str, out: str) -> bool:
    """Every word of `needle`, in order, among the words of `out` (a table wraps a cell and puts other columns
    between its lines, but never splits a word that fits)."""
    words = iter(out.split())
    return all(any(word == seen or seen.endswith(word) or seen.startswith(word) for seen in words)
               for word in needle.split())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A store holding the nasty texts, questions generated from it, and a scored run by a nasty model name."""
    tmp = tmp_path_factory.mktemp("render")
    store = tmp / "s.kgl"
    source = _inputs(tmp)
    ingest = invoke(store, ["ingest", "tempomed", str(source), "--release-date", "2024-01-01"], 200, False)
    questions = tmp / "q.jsonl"
    generated = invoke(store, ["generate", "tempomed", "--out", str(questions)], 200, False)
    rows = [json.loads(line) for line in questions.read_text().splitlines()]
    predictions = tmp / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": q["id"], "output": "A"}) + "\n" for q in rows))
    invoke(store, ["eval", "score", str(questions), str(predictions), "--model", MODEL, "--log-dir", str(tmp / "runs"),
                   "--write"], 200, False)
    run = next((tmp / "runs").glob("run-*"))
    decision = json.loads(invoke(store, ["query", "recommended-on", "--date", "2022-06-01", "--guideline", "90000003",
                                         "-f", "json"], 80, False))[0]["decision_id"]
    return {"store": store, "questions": questions, "run": run, "decision": decision, "ingest": ingest,
            "source": source, "generated": generated}


def commands(w: dict[str, object]) -> list[tuple[list[str], list[str]]]:
    """(arguments, the stored texts the output must show) for every command that prints stored text."""
    run, q = str(w["run"]), str(w["questions"])
    return [
        (["query", "recommended-on", "--date", "2022-06-01", "--guideline", "90000003"], [*NASTY, LONG, ORG]),
        (["query", "recommended-on", "--date", "2018-06-01", "--guideline", "90000002"], [*NASTY]),
        (["query", "trajectory", "--guideline", "90000003"], [TITLE]),
        (["query", "timeline", "--subject", str(w["decision"])], []),
        (["query", "changed-between", "--from", "2010", "--to", "2024"], [*NASTY, LONG, shown(BIDI)]),
        (["stats"], []),
        (["releases", "list"], [str(w["source"])]),
        (["bench", "list"], []),
        (["bench", "verify", q], []),
        (["bench", "export", "--format", "hf", q, "--out", str(Path(q).parent / "hf [x] [bold]")],
         [str(Path(q).parent / "hf [x] [bold]")]),
        (["eval", "runs", "list"], [shown(MODEL)]),
        (["eval", "metrics", run], [shown(MODEL)]),
        (["eval", "compare", run, run, "--iterations", "5"], [shown(MODEL)]),
    ]


def shown(value: str) -> str:
    """How a terminal shows `value`: its bidirectional controls written out (`\\u202e`), never sent."""
    return RAW_BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_stored_text_is_shown_verbatim_and_fits(world: dict[str, object], columns: int, terminal: bool) -> None:
    store = world["store"]
    assert isinstance(store, Path)
    for args, needles in commands(world):
        out = invoke(store, args, columns, terminal)
        for needle in needles:
            assert shown_in_order(needle, out), (args, needle, out[:3000])
        for piece in ("[x]", "[/x]", "[bold]", "</script>", "/*DATA*/", '"double"', "\\"):
            if any(piece in n for n in needles):
                assert piece in out, (args, piece)
        wide = [line for line in out.splitlines() if cell_len(line) > columns]
        assert not wide, (args, columns, wide[:3])
        assert not RAW_BIDI.search(out), (args, out[:2000])
        if not terminal:
            assert not BOX.search(out), (args, out[:2000])


def test_the_load_summary_counts_its_files_and_starts_with_its_title(world: dict[str, object]) -> None:
    out = str(world["ingest"])
    files = len(list(Path(str(world["source"])).iterdir()))
    assert out.splitlines()[0].startswith("tempomed: ") and f"from {files} files" in out
    assert str(world["generated"]).splitlines()[0].startswith("wrote ")  # no blank line first (a progress bar's)


def test_the_demo_corpus_load_names_its_file() -> None:
    from chronokg.demo.corpus import corpus_file, load_demo
    from chronokg.graph.open import open_store

    with open_store("kglite://:memory:") as store:
        summary = load_demo(store)
    assert summary.paths == [str(corpus_file())] and corpus_file().is_file()


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_reader_that_stops_early_ends_the_command_quietly(world: dict[str, object], fmt: str) -> None:
    """`chronokg query ... | head`: the reader is gone before the first write; no error line, no traceback."""
    import os
    import subprocess
    import sys

    command = [sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{world['store']}", "query",
               "changed-between", "--from", "2010", "--to", "2024", "-f", fmt]
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(Path(__file__).parents[1])}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `head` that has read what it wanted
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


def first_column(out: str) -> list[str]:
    """The first column of a plain table, one entry per row: a row's wrapped lines joined, its folded
    `name: value` lines (indented) left out."""
    lines = out.splitlines()
    rule = next(n for n, line in enumerate(lines) if line.startswith("-"))
    width = len(lines[rule].split()[0])
    body = [line for line in lines[rule + 1:] if not line.startswith("(")]
    blocks = "\n".join(body).split("\n\n") if "" in body else body
    return [" ".join(line[:width].strip() for line in block.splitlines()
                     if not line.startswith(" ") and line[:width].strip()) for block in blocks]


def test_eval_compare_keeps_bracketed_metric_names_distinct(world: dict[str, object]) -> None:
    store, run = world["store"], str(world["run"])
    assert isinstance(store, Path)
    rows = json.loads(invoke(store, ["eval", "compare", run, run, "--iterations", "5", "-f", "json"], 80, False))
    bracketed = [r["metric"] for r in rows if "[" in r["metric"]]
    assert len(bracketed) >= 4 and len(set(bracketed)) == len(bracketed)
    assert any("[historical]" in m for m in bracketed) and any("[up_to_date]" in m for m in bracketed)
    out = invoke(store, ["eval", "compare", run, run, "--iterations", "5"], 80, False)
    assert first_column(out) == [r["metric"] for r in rows]
    wide = invoke(store, ["eval", "compare", run, run, "--iterations", "5"], 200, False).splitlines()
    for name in bracketed:  # whole on one line each at 200 columns
        assert sum(name in line for line in wide) == 1, name


def test_listings_answer_in_json_as_the_store_holds(world: dict[str, object]) -> None:
    store = world["store"]
    assert isinstance(store, Path)
    releases = json.loads(invoke(store, ["releases", "list", "-f", "json"], 80, False))
    files = sorted(str(f) for f in Path(str(world["source"])).iterdir())
    assert sorted(r["path"] for r in releases) == files and sum(r["facts"] for r in releases) > 0
    benches = json.loads(invoke(store, ["bench", "list", "-f", "json"], 80, False))
    questions = Path(str(world["questions"])).read_text().splitlines()
    assert [b["family"] for b in benches] == ["tempomed"] and benches[0]["questions"] == len(questions)
    runs = json.loads(invoke(store, ["eval", "runs", "list", "-f", "json"], 80, False))
    run = Path(str(world["run"])).name
    assert [(r["id"], r["models"], r["predictions"]) for r in runs] == [(run, [MODEL], len(questions))]


def test_a_pipe_at_80_columns_splits_no_number_or_word(world: dict[str, object]) -> None:
    """The comparison of every metric and the store's counts at 80 columns: every number and name whole, no box
    drawing."""
    store, run = world["store"], str(world["run"])
    assert isinstance(store, Path)
    rows = json.loads(invoke(store, ["eval", "compare", run, run, "--iterations", "5", "-f", "json"], 80, False))
    out = invoke(store, ["eval", "compare", run, run, "--iterations", "5"], 80, False)
    assert not BOX.search(out)
    words = set(out.split())
    for row in rows:
        for key in ("value_a", "value_b", "n"):
            value = row[key]
            if isinstance(value, int | float) and not isinstance(value, bool):
                assert (f"{value:.4g}" if isinstance(value, float) else str(value)) in words, (key, row)
    counts = json.loads(invoke(store, ["stats", "-f", "json"], 80, False))
    out = invoke(store, ["stats"], 80, False)
    assert not BOX.search(out)
    lines = [line.split() for line in out.splitlines()]
    for row in counts:
        assert [row["kind"], row["name"], str(row["count"])] in lines or row["kind"] == "source", row


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_a_control_sequence_or_one_unbroken_word_stays_text_within_the_width(terminal: bool) -> None:
    """An escape sequence in stored text is shown as `\\x1b`, never sent; a 10,000-character word is cut into lines
    of the width (the one case a word is cut), every character kept."""
    import io

    from rich.console import Console

    from chronokg.cli.render import table

    word = "".join(chr(ord("a") + n % 26) for n in range(10_000))
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=terminal, color_system=None)
    table(console, ["id", "text", "n"], [["a-1", "\x1b[31mred [bold]", 1234567], ["a-2", "x", 7]], title="t")
    table(console, ["text"], [[word]])
    out = buffer.getvalue()
    assert "\x1b" not in out and "\\x1b[31mred [bold]" in out and "1234567" in out.split()
    assert max(cell_len(line) for line in out.splitlines()) <= 80
    assert word in re.sub(r"[\s\u2500-\u257f]", "", out)


JSON_COMMANDS = [["query", "changed-between", "--from", "2010", "--to", "2024", "-f", "json"],
                 ["query", "recommended-on", "--date", "2022-06-01", "--guideline", "90000003", "-f", "json"],
                 ["eval", "runs", "list", "-f", "json"], ["bench", "verify", "{q}", "-f", "json"],
                 ["eval", "compare", "{run}", "{run}", "--iterations", "5", "-f", "json"]]


def test_json_output_escapes_bidirectional_controls_and_reads_back_the_same(world: dict[str, object]) -> None:
    """JSON for scripts holds every stored character, but a bidirectional control as its `\\uXXXX` escape:
    the same value read back, never a raw control in a terminal that shows it."""
    store = world["store"]
    assert isinstance(store, Path)
    outs = []
    for args in JSON_COMMANDS:
        out = invoke(store, [a.format(q=world["questions"], run=world["run"]) for a in args], 80, False)
        assert not RAW_BIDI.search(out), (args, out[:2000])
        outs.append(out)
    assert "\\u202eSIHT\\u202c" in outs[0] and BIDI in json.dumps(json.loads(outs[0]), ensure_ascii=False)
    assert [r["models"] for r in json.loads(outs[2])] == [[MODEL]]


def test_a_bidi_control_is_shown_escaped_in_a_table() -> None:
    import io

    from rich.console import Console

    from chronokg.cli.render import say, table

    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=True, color_system=None)
    table(console, ["text"], [[BIDI]], title="t \u202e")
    say(console, "line ", BIDI)
    out = buffer.getvalue()
    assert not RAW_BIDI.search(out) and "\\u202eSIHT\\u202c" in out and "\\u2067isolate\\u2069" in out


def test_an_error_naming_a_path_with_a_line_break_or_bidi_control_is_one_line(tmp_path: Path) -> None:
    """A file name may hold a line break or a bidi override (U+202E, which makes a terminal show the rest of the
    line backwards): an error naming it stays one line, read in order, the characters shown as their codes."""
    name = tmp_path / "a\nb\u202eld.jsonl\u2066"
    done = CliRunner().invoke(app, ["--store", f"kglite://{tmp_path}/s.kgl", "ingest", "tempomed", str(name)])
    assert done.exit_code == 2, done.output
    lines = done.output.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "\u202e" not in done.output and "\u2066" not in done.output
    assert "a\\nb\\u202eld.jsonl\\u2066" in lines[0]
