"""Reading RRF files (MRREL, MRCONSO): columns, CUIs and flags checked, row counts against MRFILES."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from chronokg.errors import InputError
from chronokg.ingest.limits import too_long
from chronokg.ingest.umls.models import MAX_TEXT, MRCONSO_COLUMNS, MRREL_COLUMNS

# --- reading RRF -------------------------------------------------------------------


def read_rrf(path: Path, columns: tuple[str, ...],
             advance: Callable[[int], None] | None = None) -> Iterator[tuple[int, list[str]]]:
    """Rows of a pipe-delimited RRF file as (line number, fields), each checked for its width.

    Every row must end with `|` and a line end, so a file cut mid-row fails on
    its last line. `advance` is told the bytes read, now and then.
    """
    width = len(columns)
    n = read = 0
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            read += len(raw)
            if advance is not None and read >= 1 << 22:
                advance(read)
                read = 0
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(path, f"line {n}", f"not UTF-8 text: {exc.reason}") from exc
            if not line.endswith("\n"):
                raise InputError(path, f"line {n}", "truncated file: the last line has no line end (cut mid-row?)")
            fields = line.rstrip("\r\n").split("|")
            if len(fields) != width + 1 or fields[-1]:
                found = len(fields) - 1 if not fields[-1] else f"{len(fields)} (no trailing '|')"
                raise InputError(path, f"line {n}", f"expected {width} '|'-terminated fields "
                                                    f"({','.join(columns)}), found {found}")
            if len(line) > MAX_TEXT:  # no field of a shorter line can be longer
                for column, value in zip(columns, fields, strict=False):
                    if len(value) > MAX_TEXT:
                        raise InputError(path, f"line {n}", too_long(column, len(value), MAX_TEXT))
            yield n, fields
    if n == 0:
        raise InputError(path, None, "empty file")


# MRCONSO's term status, string type and preferred-atom flag (UMLS Reference Manual, "Abbreviations used in
# data elements"): the preferred-name filter reads them, so a value outside these would silently drop a name.
_TS = frozenset({"P", "S", "p", "s"})  # lower case: older releases' suppressible preferred / non-preferred
_STT = frozenset({"PF", "VC", "VCW", "VO", "VW"})
_ISPREF = frozenset({"Y", "N"})


def check_conso_flags(path: Path, n: int, f: list[str]) -> None:
    for column, value, allowed in (("TS", f[2], _TS), ("STT", f[4], _STT), ("ISPREF", f[6], _ISPREF)):
        if value not in allowed:
            raise InputError(path, f"line {n}", f"{column}: {value!r} is not one of {', '.join(sorted(allowed))}")


def cui_number(path: Path, n: int, column: str, value: str) -> int:
    if len(value) != 8 or value[0] != "C" or not value[1:].isdigit():
        what = "empty" if not value else f"{value!r} is not a CUI (C + 7 digits)"
        raise InputError(path, f"line {n}", f"{column}: {what}")
    return int(value[1:])


def cui_code(number: int) -> str:
    return f"C{number:07d}"


def check_rows(path: Path, expected: int | None, found: int) -> None:
    if expected is not None and expected != found:
        raise InputError(path, f"line {found}", f"truncated or altered file: MRFILES.RRF lists {expected} rows, "
                                                f"found {found}")


def mrfiles(meta: Path) -> dict[str, int]:
    """Row counts from MRFILES.RRF (if present), after checking the column lists we rely on."""
    path = meta / "MRFILES.RRF"
    if not path.is_file():
        return {}
    rows: dict[str, int] = {}
    expected = {"MRREL.RRF": MRREL_COLUMNS, "MRCONSO.RRF": MRCONSO_COLUMNS}
    for n, f in read_rrf(path, ("FIL", "DES", "FMT", "CLS", "RWS", "BTS")):
        name, fmt, count = f[0], f[2], f[4]
        if name not in expected:
            continue
        if tuple(fmt.split(",")) != expected[name]:
            raise InputError(path, f"line {n}", f"{name} has columns {fmt}, expected {','.join(expected[name])}")
        if not count.isdigit():
            raise InputError(path, f"line {n}", f"RWS must be a row count, got {count!r}")
        rows[name] = int(count)
    return rows
