"""`ingest <source>` is built from the parameters SOURCES declares: the command has exactly them, and every
value reaches a keyword the loader takes (a renamed loader argument fails here, not at a user's load)."""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
from typing import Any

import pytest
import typer

from chronokg.cli.ingest_command import keywords, register, resolve
from chronokg.ingest.options import OptionError, Param
from chronokg.ingest.sources import SOURCES, SourceSpec
from chronokg.ingest.umls import CHROKNOW_RELAS

SPECS = [spec for _, spec in SOURCES.items() if spec.ingest is not None]


def _command(spec: SourceSpec) -> Any:
    app = typer.Typer()
    register(app, spec)
    app.command("_")(lambda: None)  # keep it a group
    return typer.main.get_command(app).commands[spec.name]  # type: ignore[attr-defined]


def _loader_params(spec: SourceSpec) -> set[str]:
    module, _, name = spec.loader.partition(":")
    return set(inspect.signature(getattr(importlib.import_module(module), name)).parameters)


def test_every_file_source_declares_its_ingest_command() -> None:
    declared = {spec.name for spec in SPECS}
    assert declared == {"tempomed", "wikidata", "umls", "cfr", "chroknow", "driftmed", "qa", "cxr"}
    for spec in SPECS:
        assert f"ingest/{spec.name}" in spec.commands


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_the_built_command_has_the_declared_parameters(spec: SourceSpec) -> None:
    assert spec.ingest is not None
    command = _command(spec)
    built = {p.name: p for p in command.params}
    assert list(built) == [p.name for p in spec.ingest.params]
    for p in spec.ingest.params:
        param = built[p.name]
        assert param.required == p.required
        if not p.argument:
            assert param.opts[0] == (p.flags[0] if p.flags else "--" + p.name.replace("_", "-"))
            assert param.help == p.help
            assert param.multiple == p.multiple
    assert command.help == spec.ingest.help


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_value_reaches_a_loader_keyword(spec: SourceSpec) -> None:
    assert spec.ingest is not None
    takes = _loader_params(spec)
    def sample(p: Param) -> Any:
        one = p.default if p.default is not None else (
            next(iter(resolve(p.enum))) if p.enum else {"path": "x", "str": "x", "date": dt.date(2020, 1, 1)}[p.kind])
        return [one] if p.multiple else one

    values = {p.name: sample(p) for p in spec.ingest.params}
    if spec.name == "umls":
        values.update(rela=None, release_date=["2020AA=2020-05-04"])
    if spec.name == "wikidata":
        values["properties"] = "P39,P108"
    out = keywords(spec.ingest, values)
    assert set(out) <= takes - {"store", "progress"}, f"{spec.loader} takes no {sorted(set(out) - takes)}"
    assert len(out) >= len(spec.ingest.params) - (2 if spec.name == "umls" else 0)  # nothing dropped on the way


def test_none_and_empty_lists_are_left_to_the_loader_default() -> None:
    spec = SOURCES.get("cfr")
    assert spec.ingest is not None
    assert keywords(spec.ingest, {"paths": ["a.xml"], "edition_date": []}) == {"paths": ["a.xml"]}


def test_umls_options_become_loader_keywords() -> None:
    prepare = resolve("chronokg.ingest.umls.cli_values:prepare")
    out = prepare({"folders": ["2020AA"], "all_relations": True, "release_date": ["2020aa=2020-05-04"]})
    assert out == {"folders": ["2020AA"], "relas": None, "release_dates": {"2020AA": "2020-05-04"}}
    assert prepare({"folders": [], "all_relations": False})["relas"] == list(CHROKNOW_RELAS)
    assert prepare({"folders": [], "rela": ["isa"], "all_relations": False})["relas"] == ["isa"]
    with pytest.raises(OptionError) as conflict:
        prepare({"folders": [], "rela": ["isa"], "all_relations": True})
    assert conflict.value.option == "--all-relations"
    with pytest.raises(OptionError) as bad:
        prepare({"folders": [], "all_relations": False, "release_date": ["2020AA"]})
    assert bad.value.option == "--release-date" and "RELEASE=DATE" in str(bad.value)


def test_a_bad_property_list_is_a_bad_parameter_of_properties() -> None:
    spec = SOURCES.get("wikidata")
    assert spec.ingest is not None
    with pytest.raises(typer.BadParameter) as exc:
        keywords(spec.ingest, {"paths": ["q.json"], "properties": "Pxx"})
    assert exc.value.param_hint == "--properties"
