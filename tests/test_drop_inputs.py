"""A drop replays the other releases of its source from the files they were loaded from: each release records
them by absolute path with a digest of each (`chronokg.ingest.inputs`). An edited, moved or added input is
refused before anything is replayed, naming the release and the file, for every source; `--force` then undoes
the release in place and says so. Paths given relative to the working folder of the load are replayed from
the same files wherever the drop runs."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from chronokg.errors import ChronoKGError, InputError
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import inputs, replay
from tests.test_drop_exact import SOURCE_NAMES, Group, content, groups, release_of


def copied(group: Group, folder: Path) -> Group:
    """The group's files and folders copied into `folder` (so they can be edited), names kept."""
    folder.mkdir(parents=True)
    out = []
    for p in group:
        target = folder / p.name
        if p.is_dir():
            shutil.copytree(p, target)
        else:
            shutil.copy2(p, target)
        out.append(target)
    return tuple(out)


def key(name: str) -> str:
    return "folders" if name == "umls" else "paths"


def two_releases(name: str, shared_data: Path, tmp: Path) -> tuple[KgliteStore, dict[str, Any], Group, Group]:
    """A store that loaded the source's first release, then its last, one call each, from copies."""
    (tmp / "given").mkdir()
    values, releases = groups(name, shared_data, tmp / "given")
    kept, dropped = copied(releases[0], tmp / "kept"), copied(releases[-1], tmp / "dropped")
    store = KgliteStore(tmp / "s.kgl")
    for group in (kept, dropped):
        replay.load(store, name, {**values, key(name): list(group)})
    return store, values, kept, dropped


def first_file(group: Group) -> Path:
    return next(f for p in group for f in inputs.files_under(p))


def edit(path: Path) -> None:
    """Change the file's content and keep it valid input: a UMLS table loses its last row, any other file gets
    a line break at its end (JSON, CSV and XML read the same)."""
    data = path.read_bytes()
    path.write_bytes(data[:data.rstrip(b"\n").rfind(b"\n") + 1] if path.suffix == ".RRF" else data + b"\n")


@pytest.mark.slow
@pytest.mark.parametrize("name", SOURCE_NAMES)
def test_an_edited_input_of_a_kept_release_is_refused_naming_it(name: str, shared_data: Path, tmp_path: Path) -> None:
    store, _, kept, dropped = two_releases(name, shared_data, tmp_path)
    try:
        keep, drop = release_of(store, kept), release_of(store, dropped)
        edited = first_file(kept)
        edit(edited)
        before = content(store)
        with pytest.raises(ChronoKGError) as refused:
            replay.drop_release(store, drop)
        said = str(refused.value)
        assert f"release {keep}" in said and str(edited.resolve()) in said and "changed since it was loaded" in said
        assert "--force" in said and len(said.splitlines()) == 1
        assert content(store) == before  # nothing was changed
        removal = replay.drop_release(store, drop, force=True)
        assert removal.note is not None and "undone in place" in removal.note and str(edited.resolve()) in removal.note
        assert removal.lines()[-1] == f"  {removal.note}"
        assert drop not in {r["id"] for r in store.run("MATCH (s:Source) RETURN s.id AS id")}
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tempomed", "umls", "cxr"])
def test_a_moved_or_added_input_is_refused_naming_it(name: str, shared_data: Path, tmp_path: Path) -> None:
    store, _, kept, dropped = two_releases(name, shared_data, tmp_path)
    try:
        drop = release_of(store, dropped)
        if kept[0].is_dir():
            added = kept[0] / "extra.txt"
            added.write_text("a file the release did not hold\n")
            with pytest.raises(ChronoKGError, match=f"holds a file it did not hold when it was loaded: {added}"):
                replay.drop_release(store, drop)
            added.unlink()
        gone = first_file(kept)
        gone.rename(gone.with_name(gone.name + ".moved"))
        with pytest.raises(ChronoKGError, match=f"its input {gone.resolve()} is gone"):
            replay.drop_release(store, drop)
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["umls", "tempomed"])
def test_relative_paths_are_replayed_from_the_load_s_folder(name: str, shared_data: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Three releases loaded in one call by paths relative to the load's folder, one dropped from another folder
    whose files have the same names: the store equals one that loaded the other two from the load's folder."""
    (tmp_path / "given").mkdir()
    values, releases = groups(name, shared_data, tmp_path / "given")
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    local = [copied(g, here / str(i)) for i, g in enumerate(releases)]
    for i, g in enumerate(releases):
        copied(g, elsewhere / str(i))  # the same names, other bytes once edited below
    for i, g in enumerate(releases):
        edit(first_file(tuple(elsewhere / str(i) / p.name for p in g)))
    relative = [[p.relative_to(here) for p in g] for g in local]
    monkeypatch.chdir(here)
    full = KgliteStore(tmp_path / "full.kgl")
    fresh = KgliteStore(tmp_path / "fresh.kgl")
    try:
        replay.load(full, name, {**values, key(name): [p for g in relative for p in g]})
        replay.load(fresh, name, {**values, key(name): [p for g in relative[:-1] for p in g]})
        drop = release_of(full, local[-1])
        monkeypatch.chdir(elsewhere)
        removal = replay.drop_release(full, drop)
        assert removal.note is None
        got, want = content(full), content(fresh)
        assert got == want, sorted(set(got) ^ set(want))[:6]
    finally:
        full.close()
        fresh.close()


def test_a_call_s_paths_keep_their_order_without_the_dropped_release(tmp_path: Path) -> None:
    """The paths a replay gives the loader: the call's, in the order given, the dropped release's left out; a
    folder holding it becomes the kept releases' roots in it, sorted as the folder is read."""
    folder = tmp_path / "f"
    folder.mkdir()
    z, m, a = (folder / n for n in ("z.jsonl", "m.jsonl", "a.jsonl"))
    for f in (z, m, a):
        f.write_text("{}\n")
    of = {p: inputs.Inputs(roots=[str(p)]) for p in (z, m, a)}
    given = [str(z), str(m), str(a)]
    assert inputs.without(given, of[m], [of[z], of[a]]) == [str(z), str(a)]
    assert inputs.without([str(folder)], of[z], [of[m], of[a]]) == [str(a), str(m)]
    assert inputs.without([str(a), str(folder / "elsewhere")], of[z], [of[m]]) == [str(a), str(folder / "elsewhere")]
    assert inputs.without([str(z), str(m)], of[z], [of[z], of[m]]) == [str(z), str(m)]  # z again, another date


def test_a_release_records_its_files_and_their_digests(tmp_path: Path) -> None:
    """Each release's roots and every file under them with its SHA-256; a release that names no file of its
    own gets what its load read that no other release names."""
    folder = tmp_path / "scene"
    folder.mkdir()
    (folder / "a.json").write_text("1")
    (folder / "b.json").write_text("2")
    questions = tmp_path / "q.jsonl"
    questions.write_text("3")
    read = [str(folder / "a.json"), str(folder / "b.json"), str(questions)]
    found = inputs.of_load({"scene": None, "q": str(questions)}, [str(folder), str(questions)], read)
    assert found["q"].roots == [str(questions)] and list(found["q"].files) == [str(questions)]
    assert found["scene"].roots == [str(folder)] and len(found["scene"].files) == 2
    together = inputs.of_load({"scene": None, "q": str(questions)}, [str(tmp_path)], read)  # one folder holds both
    assert together["scene"].roots == [str(folder / "a.json"), str(folder / "b.json")]
    assert json.loads(found["scene"].text())["files"][str(folder / "b.json")] == (
        "sha256:d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35")
    assert inputs.changed(found["scene"]) is None
    (folder / "b.json").write_text("22")
    assert inputs.changed(found["scene"]) == f"its input {folder / 'b.json'} changed since it was loaded"


@pytest.mark.slow
def test_the_questions_of_a_generated_cohort_drop_by_replay(tmp_path: Path) -> None:
    """A generated chest-X-ray cohort loaded as one folder (its scene graphs and its MI-CXR questions, two
    releases): dropping the questions replays the scene graphs from the files of that folder, without --force,
    and leaves what a load of the scene graphs alone gives."""
    from chronokg.ingest import cxr_synth

    data = tmp_path / "cohort"
    cxr_synth.generate(data, patients=4, visits=5, seed=2, findings=5)
    assert (data / cxr_synth.QUESTIONS_FILE).is_file()
    full, fresh = KgliteStore(tmp_path / "full.kgl"), KgliteStore(tmp_path / "fresh.kgl")
    try:
        replay.load(full, "cxr", {"paths": [data]})
        questions = next(str(r["id"]) for r in full.run("MATCH (s:Source) WHERE s.path IS NOT NULL RETURN s.id AS id"))
        scene = [p for p in sorted(data.rglob("*")) if p.is_file() and p.name != cxr_synth.QUESTIONS_FILE]
        removal = replay.drop_release(full, questions)
        assert removal.note is None
        recorded = json.loads(full.run("MATCH (s:Source) RETURN s.load_call AS c")[0]["c"])["values"]["paths"]
        replay.load(fresh, "cxr", {"paths": [Path(p) for p in recorded]})
        assert {Path(p) for p in recorded} <= {p.resolve() for p in scene}
        assert content(full) == content(fresh)
        assert not full.run("MATCH (q:SourceQuestion) RETURN q.id AS id LIMIT 1")
    finally:
        full.close()
        fresh.close()


def test_a_writer_removes_the_scratch_folders_of_killed_drops(tmp_path: Path) -> None:
    """A drop killed during its replay leaves its scratch store in the temporary folder; the next writer of any
    store removes it once its process is gone, and leaves a live process's."""
    import os
    import subprocess
    import tempfile

    from chronokg.graph.kglite_files import REPLAY_PREFIX

    done = subprocess.Popen(["true"])
    done.wait()
    dead = Path(tempfile.mkdtemp(prefix=f"{REPLAY_PREFIX}{done.pid}-"))
    (dead / "replay.kgl").write_bytes(b"left by a killed drop")
    live = Path(tempfile.mkdtemp(prefix=f"{REPLAY_PREFIX}{os.getppid()}-"))
    try:
        with KgliteStore(tmp_path / "s.kgl"):
            pass
        assert not dead.exists() and live.is_dir()
    finally:
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(dead, ignore_errors=True)


def test_a_failed_open_leaves_no_lock_files(tmp_path: Path) -> None:
    store = tmp_path / "s.kgl"
    store.write_bytes(b"this is not a store")
    with pytest.raises(ChronoKGError):
        KgliteStore(store)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.kgl"]


def test_a_release_recorded_before_inputs_were_is_checked_by_its_id_only(tmp_path: Path) -> None:
    folder = tmp_path / "2020AA"
    folder.mkdir()
    (folder / "MRREL.RRF").write_text("x\n")
    assert inputs.changed(inputs.Inputs(roots=[str(folder)], recorded=False)) is None
    assert inputs.changed(inputs.Inputs(roots=[str(folder)])) is not None  # recorded with no file: one was added


QA = Path(__file__).parent / "fixtures" / "qasets"


def qa_store(path: Path, calls: list[list[Path]]) -> KgliteStore:
    store = KgliteStore(path)
    for call in calls:
        replay.load(store, "qa", {"release_date": dt.date(2020, 1, 1), "paths": call})
    return store


def test_a_release_given_again_in_a_later_call_is_left_out_of_that_call_s_replay(tmp_path: Path) -> None:
    """A file loaded once, then given again beside a new one (the later call creates only the new release): the
    drop of the first replays the later call without it, as a store that never loaded that file makes the call."""
    trivia, boolq = QA / "triviaqa.json", QA / "boolq.jsonl"
    full = qa_store(tmp_path / "full.kgl", [[trivia], [trivia, boolq]])
    fresh = qa_store(tmp_path / "fresh.kgl", [[boolq]])
    try:
        removal = replay.drop_release(full, release_of(full, (trivia,)))
        assert removal.note is None
        assert content(full) == content(fresh)
    finally:
        full.close()
        fresh.close()


def test_a_file_whose_name_holds_the_path_separator_is_recorded_whole(tmp_path: Path) -> None:
    """A Source path naming several files is split at '; ' (a CFR edition); a file whose own name holds '; ' is
    one file: its digest is recorded, and an edit of it refuses the drop of another release, naming it."""
    odd = tmp_path / "trivia; 1.json"
    shutil.copy2(QA / "triviaqa.json", odd)
    store = qa_store(tmp_path / "s.kgl", [[odd, QA / "boolq.jsonl"]])
    try:
        keep = release_of(store, (odd,))
        recorded = inputs.Inputs.parse(store.run("MATCH (s:Source {id: $i}) RETURN s.inputs AS i", {"i": keep})[0]["i"])
        assert recorded is not None and list(recorded.files) == [str(odd)]
        edit(odd)
        with pytest.raises(ChronoKGError, match=f"release {keep}: its input {odd} changed since it was loaded"):
            replay.drop_release(store, release_of(store, (QA / "boolq.jsonl",)))
    finally:
        store.close()


def test_a_release_undone_in_place_is_left_out_of_the_others_calls(tmp_path: Path) -> None:
    """Three releases loaded in one call; one is undone in place (--force, a kept input was edited meanwhile):
    the others' recorded call no longer names its file, so a later drop replays them without it and gives what
    a store that loaded the last one alone holds."""
    trivia, boolq, nq = copied((QA / "triviaqa.json", QA / "boolq.jsonl", QA / "nq-open.jsonl"), tmp_path / "in")
    full = qa_store(tmp_path / "full.kgl", [[nq, trivia, boolq]])
    fresh = qa_store(tmp_path / "fresh.kgl", [[nq]])
    try:
        saved = boolq.read_bytes()
        edit(boolq)
        assert replay.drop_release(full, release_of(full, (trivia,)), force=True).note is not None
        boolq.write_bytes(saved)
        removal = replay.drop_release(full, release_of(full, (boolq,)))
        assert removal.note is None
        assert content(full) == content(fresh)
    finally:
        full.close()
        fresh.close()


@pytest.mark.parametrize("where", ["file", "folder"])
def test_an_input_whose_name_is_not_utf8_is_refused_before_anything_is_loaded(where: str, tmp_path: Path) -> None:
    """A release records its files' names as text: a name that is no UTF-8 (a given file, or any file under a
    given folder, read or not) is refused in one line naming it, before the load writes anything."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy2(QA / "boolq.jsonl", folder / "boolq.jsonl")
    odd = folder / os.fsdecode(b"notes-\xff.jsonl" if where == "file" else b"notes-\xff.txt")
    shutil.copy2(QA / "nq-open.jsonl", odd)
    store = KgliteStore(tmp_path / "s.kgl")
    try:
        with pytest.raises(InputError, match="its name is not valid UTF-8") as refused:
            replay.load(store, "qa", {"release_date": dt.date(2020, 1, 1),
                                      "paths": [odd] if where == "file" else [folder]})
        assert len(str(refused.value).splitlines()) == 1
        assert not store.run("MATCH (n) RETURN n.id AS id LIMIT 1")
    finally:
        store.close()


@pytest.mark.slow
def test_a_store_kept_in_a_loaded_folder_is_no_input_of_it(tmp_path: Path) -> None:
    """A store (and the files beside it: log, binding, lock, sidecar) written inside a folder a release was loaded
    from is not recorded as that release's input: its writes do not make a later drop refuse the folder as
    changed, and the drop replays it exactly."""
    from chronokg.ingest import cxr_synth

    one, two = tmp_path / "one", tmp_path / "two"
    for seed, data in ((3, one), (4, two)):
        cxr_synth.generate(data, patients=2, visits=5, seed=seed, findings=3)
        (data / cxr_synth.QUESTIONS_FILE).unlink()
    full, fresh = KgliteStore(one / "store.kgl"), KgliteStore(tmp_path / "fresh.kgl")
    try:
        replay.load(full, "cxr", {"paths": [one]})
        replay.load(full, "cxr", {"paths": [two]})
        replay.load(fresh, "cxr", {"paths": [one]})
        recorded = full.run("MATCH (s:Source) RETURN s.inputs AS i")
        assert not any(".kgl" in f for r in recorded for f in json.loads(r["i"])["files"])
        removal = replay.drop_release(full, release_of(full, (two,)))
        assert removal.note is None
        assert content(full) == content(fresh)
    finally:
        full.close()
        fresh.close()
