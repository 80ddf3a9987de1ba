"""The Activity page's export: the decisions of a period as CSV, streamed in
keyset chunks (for a synchronous server and for ASGI)."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import fields
from typing import Any

from asgiref.sync import sync_to_async

from curfew_core.selectors.ledger_page import DecisionLine, Period, export_chunk
from curfew_core.web.activity.query import LedgerQuery

#: The export's columns: a decision line's fields (the API's field names: data,
#: not prose), which are the ``Decision`` model's columns in its order, read
#: off the line's declaration rather than listed again.
CSV_COLUMNS = tuple(field.name for field in fields(DecisionLine) if field.name != "id")


#: A spreadsheet reads a cell starting with one of these as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """Text that a spreadsheet would run as a formula, made plain text by a
    leading apostrophe (OWASP's advice); numbers and flags as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _cell(line: DecisionLine, column: str) -> Any:
    """One export cell: the line's field of that name, an instant in ISO 8601
    and a flag as ``yes``/``no``."""
    value = getattr(line, column)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


def csv_row(line: DecisionLine) -> list[Any]:
    """The line's cells in ``CSV_COLUMNS`` order, each named once there."""
    return [safe_cell(_cell(line, column)) for column in CSV_COLUMNS]


def _csv_text(rows: list[list[Any]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


Chunk = Callable[[tuple[dt.datetime, int] | None], list[DecisionLine]]


def export_chunker(*, user_id: int, period: Period, query: LedgerQuery) -> Chunk:
    """Reads the export's chunks: ``chunk(None)`` the first, then
    ``chunk((at, id))`` of the last line sent for the next."""

    def chunk(after: tuple[dt.datetime, int] | None) -> list[DecisionLine]:
        return export_chunk(
            user_id=user_id,
            period=period,
            session=query.session or None,
            action=query.action or None,
            after=after,
        )

    return chunk


def _key(lines: list[DecisionLine]) -> tuple[dt.datetime, int]:
    return (lines[-1].at, lines[-1].id)


def csv_lines(chunk: Chunk, first: list[DecisionLine]) -> Iterator[bytes]:
    """The export for a synchronous server: the header, the ``first`` chunk
    (read by the view, so an outage then is the page's 503), then the rest
    chunk by chunk."""
    yield _csv_text([list(CSV_COLUMNS)])
    lines = first
    while lines:
        yield _csv_text([csv_row(line) for line in lines])
        lines = chunk(_key(lines))


async def csv_lines_async(chunk: Chunk, first: list[DecisionLine]) -> AsyncIterator[bytes]:
    """The same export for the ASGI server: each further chunk read on the
    database thread, so a long export neither blocks the event loop nor is
    read whole first."""
    read = sync_to_async(chunk)
    yield _csv_text([list(CSV_COLUMNS)])
    lines = first
    while lines:
        yield _csv_text([csv_row(line) for line in lines])
        lines = await read(_key(lines))
