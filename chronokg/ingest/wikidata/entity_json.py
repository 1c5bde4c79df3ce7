"""Entity JSON (Special:EntityData, dump lines) read into neutral entity records."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chronokg.errors import InputError
from chronokg.ingest.wikidata.records import (
    ENTITY_URI,
    GREGORIAN,
    JULIAN,
    QID_PATTERN,
    TIME_QUALIFIERS,
    Claim,
    EntityRecord,
    Selection,
    Value,
    WdTime,
)
from chronokg.ingest.wikidata.times import normalize_amount

# --- entity JSON ------------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


def _empty_list_is_empty_dict(value: Any) -> Any:
    # PHP serializes an empty map as [] in Wikidata dumps.
    return {} if value == [] else value


class JDataValue(_Model):
    type: str
    value: Any


class JSnak(_Model):
    snaktype: Literal["value", "somevalue", "novalue"]
    property: str
    datatype: str | None = None
    datavalue: JDataValue | None = None


class JStatement(_Model):
    id: str | None = None
    rank: Literal["preferred", "normal", "deprecated"] = "normal"
    mainsnak: JSnak
    qualifiers: dict[str, list[JSnak]] = Field(default_factory=dict)

    _fix = field_validator("qualifiers", mode="before")(_empty_list_is_empty_dict)


class JLabel(_Model):
    language: str
    value: str


class JEntity(_Model):
    id: str
    type: str
    lastrevid: int
    modified: dt.datetime
    labels: dict[str, JLabel] = Field(default_factory=dict)
    claims: dict[str, list[JStatement]] = Field(default_factory=dict)

    _fix = field_validator("labels", "claims", mode="before")(_empty_list_is_empty_dict)


class JTimeValue(_Model):
    """A Wikibase time. Its precision (0 = billion years .. 14 = second) and calendar (Gregorian or Julian, the
    two Wikibase allows) are checked: an unknown calendar would be read as Gregorian, shifting Julian dates."""

    time: str
    precision: int = Field(ge=0, le=14)
    calendarmodel: str = GREGORIAN

    @field_validator("calendarmodel")
    @classmethod
    def _known_calendar(cls, value: str) -> str:
        if value not in (GREGORIAN, JULIAN):
            raise ValueError(f"unknown calendarmodel {value!r} (expected {GREGORIAN} or {JULIAN})")
        return value


class JQuantity(_Model):
    amount: str
    unit: str = "1"


class JMonolingual(_Model):
    text: str
    language: str


class JEntityId(_Model):
    id: str | None = None
    numeric_id: int | None = Field(default=None, alias="numeric-id")
    entity_type: str = Field(default="item", alias="entity-type")

    def qid(self) -> str:
        if self.id:
            return self.id
        prefix = {"item": "Q", "property": "P", "lexeme": "L"}.get(self.entity_type)
        if prefix is None or self.numeric_id is None:
            raise ValueError(f"entity id without id or numeric-id ({self.entity_type})")
        return f"{prefix}{self.numeric_id}"


class JGlobe(_Model):
    latitude: float
    longitude: float
    globe: str | None = None


EARTH = ENTITY_URI + "Q2"


def wkt_point(latitude: float, longitude: float, globe: str | None) -> str:
    """Wikidata's RDF form of a coordinate (other globes are prefixed with their IRI)."""
    point = f"Point({longitude!r} {latitude!r})"
    return point if globe in (None, EARTH) else f"<{globe}> {point}"


def _json_value(snak: JSnak) -> Value | None:
    dv = snak.datavalue
    if dv is None:
        raise ValueError("a value snak without datavalue")
    datatype = snak.datatype or dv.type
    if dv.type == "wikibase-entityid":
        return Value(datatype, entity=JEntityId.model_validate(dv.value).qid())
    if dv.type == "string":
        if not isinstance(dv.value, str):
            raise ValueError(f"string value is {type(dv.value).__name__}")
        return Value(datatype, text=dv.value)
    if dv.type == "monolingualtext":
        mono = JMonolingual.model_validate(dv.value)
        return Value(datatype, text=mono.text, language=mono.language)
    if dv.type == "quantity":
        q = JQuantity.model_validate(dv.value)
        return Value(datatype, amount=normalize_amount(q.amount), unit=q.unit)
    if dv.type == "time":
        t = JTimeValue.model_validate(dv.value)
        return Value(datatype, time=WdTime.parse(t.time, t.precision, t.calendarmodel))
    if dv.type == "globecoordinate":
        g = JGlobe.model_validate(dv.value)
        return Value(datatype, text=wkt_point(g.latitude, g.longitude, g.globe))
    return None


def _json_time(snak: JSnak) -> WdTime | None:
    if snak.snaktype != "value":
        return None
    if snak.datavalue is None or snak.datavalue.type != "time":
        raise ValueError(f"qualifier {snak.property} is not a time value")
    t = JTimeValue.model_validate(snak.datavalue.value)
    return WdTime.parse(t.time, t.precision, t.calendarmodel)


def record_from_json(obj: Any, path: Path | str, where: str | int | None,
                     selection: Selection | None = None) -> EntityRecord | None:
    """Validate one entity object (the selected properties); None for kinds without statements we load."""
    properties: frozenset[str] = frozenset()
    checksum = None
    if isinstance(obj, dict):
        if obj.get("type") not in (None, "item", "property"):
            return None
        canonical = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        checksum = "sha1:" + hashlib.sha1(canonical.encode()).hexdigest()
        raw_labels, raw_claims = obj.get("labels"), obj.get("claims")
        trimmed = dict(obj)
        if isinstance(raw_labels, dict):
            trimmed["labels"] = {k: v for k, v in raw_labels.items() if k == "en"}
        if isinstance(raw_claims, dict):
            properties = frozenset(raw_claims)
            if selection is not None:
                trimmed["claims"] = selection.prefilter(raw_claims)
        obj = trimmed
    try:
        ent = JEntity.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InputError(path, where, f"not a Wikidata entity: {loc}: {first['msg']}") from None
    if not QID_PATTERN.match(ent.id):
        raise InputError(path, where, f"not an entity id: {ent.id!r}")
    label = ent.labels["en"].value if "en" in ent.labels else None
    claims: list[Claim] = []
    by_id: dict[str, Claim] = {}  # a statement id twice: the same statement again, or an error naming both
    for pid, statements in ent.claims.items():
        for st in statements:
            here = f"{ent.id} statement {st.id or pid}"
            if st.mainsnak.property != pid:
                raise InputError(path, where, f"{here}: main snak property {st.mainsnak.property} under {pid}")
            try:
                value = _json_value(st.mainsnak) if st.mainsnak.snaktype == "value" else None
                times = {q: tuple(_json_time(s) for s in st.qualifiers[q]) for q in TIME_QUALIFIERS
                         if q in st.qualifiers}
            except (ValueError, ValidationError) as exc:
                raise InputError(path, where, f"{here}: {_one_line(exc)}") from None
            claim = Claim(pid, st.id, st.rank, st.mainsnak.snaktype, value, times)
            if st.id:
                earlier = by_id.setdefault(st.id, claim)
                if earlier is not claim:
                    if earlier == claim:
                        continue
                    raise InputError(path, where, f"{here} is given twice in {ent.id} revision {ent.lastrevid} "
                                                  "with other content")
            claims.append(claim)
    return EntityRecord(ent.id, ent.type, ent.lastrevid, ent.modified, label, tuple(claims), properties, checksum)


def _one_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
    return str(exc)
