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
from tests.helpers import defined_at

SPECS = [spec for _, spec in SOURCES.items() if spec.ingest is not None]
# A value of each parameter kind that every loader takes; a source whose `prepare` checks a value more closely
# names a value it accepts in VALUES.
SAMPLE: dict[str, Any] = {"path": "x", "str": "x", "int": 1, "float": 1.0, "bool": True,
                          "date": dt.date(2020, 1, 1)}
VALUES: dict[str, dict[str, Any]] = {
    "umls": {"rela": None, "release_date": ["2020AA=2020-05-04"]},
    "wikidata": {"properties": "P39,P108"},
}
DROPPED = {"umls": 2}  # values a source's `prepare` folds into others (umls: --rela and --all-relations)


def _command(spec: SourceSpec) -> Any:
    app = typer.Typer()
    register(app, spec)
    app.command("_")(lambda: None)  # keep it a group
    return typer.main.get_command(app).commands[spec.name]  # type: ignore[attr-defined]


def _loader_params(spec: SourceSpec) -> set[str]:
    module, _, name = spec.loader.partition(":")
    return set(inspect.signature(getattr(importlib.import_module(module), name)).parameters)


def test_every_file_source_declares_its_ingest_command() -> None:
    """A source of SOURCES has `ingest <name>` among its commands exactly when it declares its parameters."""
    for _, spec in SOURCES.items():
        listed = f"ingest/{spec.name}" in spec.commands
        assert listed == (spec.ingest is not None), (
            f"source {spec.name}: " + ("'ingest/{0}' is in its commands but it declares no `ingest` parameters "
                                       "(SourceSpec(ingest=IngestOptions(...)))" if listed else
                                       "it declares `ingest` parameters but not the command 'ingest/{0}' in its "
                                       "commands").format(spec.name))


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
        assert p.kind in SAMPLE or p.enum, (f"no sample value of kind {p.kind!r}: add one to SAMPLE at "
                                            f"{defined_at(__file__, 'SAMPLE')}")
        one = p.default if p.default is not None else (next(iter(resolve(p.enum))) if p.enum else SAMPLE[p.kind])
        return [one] if p.multiple else one

    values = {p.name: sample(p) for p in spec.ingest.params} | VALUES.get(spec.name, {})
    try:
        out = keywords(spec.ingest, values)
    except typer.BadParameter as exc:
        pytest.fail(f"source {spec.name} refuses the sample values {values} ({exc}): name values it takes in "
                    f"VALUES at {defined_at(__file__, 'VALUES')}")
    assert set(out) <= takes - {"store", "progress"}, f"{spec.loader} takes no {sorted(set(out) - takes)}"
    assert len(out) >= len(spec.ingest.params) - DROPPED.get(spec.name, 0), (  # nothing dropped on the way
        f"source {spec.name}: {sorted(p.name for p in spec.ingest.params)} gave only {sorted(out)}; a value its "
        f"`prepare` folds into another is counted in DROPPED at {defined_at(__file__, 'DROPPED')}")



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
