"""Read text traces into string columns that remember their file line numbers.

Every loader parses a whole file into a :class:`Table` first and validates each column
with vectorised numpy/pandas checks; only then are jobs built. A bad value raises
:class:`~cluster_envs.errors.TraceFormatError` naming ``file:line``, the column and the
value, and nothing is half-loaded.

A *fast* table (:func:`cluster_envs.workload.columnar.read_csv_columns`) holds numeric
columns already parsed; any check it fails raises :class:`Retry`, and the caller parses
the file again through the line-by-line reader below, whose error is the one reported:
the fast path never has to reproduce an error message.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cluster_envs.errors import TraceFormatError


class Retry(TraceFormatError):
    """A fast (columnar) table met something only the line-by-line reader can report."""


@dataclass(frozen=True)
class Table:
    """Data rows of a trace file as string columns.

    Attributes:
        path: The file, for error messages.
        columns: Column name -> array of the raw strings (``""`` where a field is absent).
        lines: 1-based file line number of each data row.
        parsed: Numeric columns already parsed (float64, NaN where not a number).
        fast: Raise :class:`Retry` instead of any error (see the module docstring).
    """

    path: str
    columns: dict[str, np.ndarray]
    lines: np.ndarray
    parsed: dict[str, np.ndarray] | None = None
    fast: bool = False

    def __len__(self) -> int:
        return len(self.lines)

    def fail(self, row: int, reason: str) -> TraceFormatError:
        """Error for data row ``row`` (0-based)."""
        if self.fast:
            return Retry(self.path, None, reason)
        return TraceFormatError(self.path, int(self.lines[row]), reason)

    def require(self, names: Sequence[str], why: str = "") -> None:
        """Raise naming the first of ``names`` that is not a column (on the header line)."""
        for name in names:
            if name not in self.columns:
                self._slow()
                header = ",".join(self.columns)
                raise TraceFormatError(
                    self.path, 1, f"missing column {name!r}{why} (header has: {header})"
                )

    def text(self, name: str) -> np.ndarray:
        """Column ``name`` as an object array of stripped strings."""
        return self.columns[name]

    def numbers(self, name: str, *, integer: bool = False) -> np.ndarray:
        """Column ``name`` as float64 (or int64) values; a non-number names line and value."""
        if self.parsed is not None and name in self.parsed:
            values = self.parsed[name]
        else:
            raw = self.text(name)
            values = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            self._slow()
            row = int(np.argmax(bad))
            value = raw[row]
            what = "an empty value" if value == "" else f"the value {value!r}"
            kind = "an integer" if integer else "a number"
            raise self.fail(row, f"column {name!r} has {what}, expected {kind}")
        if integer:
            fractional = values != np.round(values)
            if fractional.any():
                self._slow()
                row = int(np.argmax(fractional))
                raise self.fail(row, f"column {name!r} has {raw[row]!r}, expected an integer")
            return values.astype(np.int64)
        return values

    def check_ids(self, name: str) -> np.ndarray:
        """Column ``name`` as job ids: none empty, none repeated (both lines named)."""
        ids = self.text(name)
        empty = ids == ""
        if self.fast:
            if empty.any() or pd.Series(ids).duplicated().any():
                self._slow()
            return ids
        if empty.any():
            raise self.fail(int(np.argmax(empty)), f"empty job id in column {name!r}")
        first_row: dict[str, int] = {}
        for row, value in enumerate(ids.tolist()):
            seen = first_row.setdefault(value, row)
            if seen != row:
                raise self.fail(
                    row,
                    f"duplicate job id {value!r} in column {name!r} "
                    f"(also on line {int(self.lines[seen])})",
                )
        return ids

    def check(self, ok: np.ndarray, name: str, expected: str, problem: str = "") -> None:
        """Raise on the first row where ``ok`` is False.

        The reason reads ``[<problem>: ]column 'x' = <value>, must be <expected>``.
        """
        if not ok.all():
            self._slow()
            row = int(np.argmin(ok))
            lead = f"{problem}: " if problem else ""
            value = self.text(name)[row]
            raise self.fail(row, f"{lead}column {name!r} = {value}, must be {expected}")

    def _slow(self) -> None:
        """In a fast table: give up, the line-by-line reader must report this."""
        if self.fast:
            raise Retry(self.path, None, "parse again line by line")


def read_text(path: str | os.PathLike[str]) -> list[str]:
    """The lines of ``path`` (``TraceFormatError`` if it cannot be read as UTF-8 text)."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return handle.read().splitlines()
    except UnicodeDecodeError as err:
        raise TraceFormatError(str(path), None, f"not a UTF-8 text file ({err.reason})") from None


def read_csv_table(path: str | os.PathLike[str]) -> Table:
    """Parse a simple comma-separated file with a header line; blank lines are skipped.

    Fields may not contain commas or line breaks (none of the supported formats quote);
    surrounding double quotes and spaces are removed.

    Raises:
        TraceFormatError: Empty or header-only file, duplicate column names, or a row
            whose number of fields differs from the header's.
    """
    path = str(path)
    rows: list[list[str]] = []
    numbers: list[int] = []
    header: list[str] | None = None
    for number, line in enumerate(read_text(path), start=1):
        if not line.strip():
            continue
        fields = [field.strip().strip('"') for field in line.split(",")]
        if header is None:
            if number != 1:
                raise TraceFormatError(path, 1, "blank first line: expected a header line")
            header = fields
            continue
        if len(fields) != len(header):
            raise TraceFormatError(
                path, number, f"expected {len(header)} comma-separated fields, got {len(fields)}"
            )
        rows.append(fields)
        numbers.append(number)
    if header is None:
        raise TraceFormatError(path, 1, "empty file: expected a header line")
    if not rows:
        raise TraceFormatError(path, 1, "header only: the file has no job lines")
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise TraceFormatError(path, 1, f"duplicate column {duplicates[0]!r} in the header")
    return _table(path, header, rows, numbers)


def read_whitespace_table(
    path: str | os.PathLike[str], names: Sequence[str], comment: str = ";"
) -> Table:
    """Parse a headerless file of whitespace-separated fields (e.g. SWF).

    Lines starting with ``comment`` and blank lines are skipped. Every data line must
    have exactly ``len(names)`` fields.
    """
    path = str(path)
    rows: list[list[str]] = []
    numbers: list[int] = []
    for number, line in enumerate(read_text(path), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(comment):
            continue
        fields = stripped.split()
        if len(fields) != len(names):
            raise TraceFormatError(
                path,
                number,
                f"expected {len(names)} whitespace-separated fields, got {len(fields)}",
            )
        rows.append(fields)
        numbers.append(number)
    if not rows:
        raise TraceFormatError(path, None, "no job lines (only comments or blank lines)")
    return _table(path, list(names), rows, numbers)


def _table(path: str, names: list[str], rows: list[list[str]], numbers: list[int]) -> Table:
    matrix = np.empty((len(rows), len(names)), dtype=object)
    if rows:
        matrix[:, :] = rows
    columns = {name: matrix[:, i] for i, name in enumerate(names)}
    return Table(path, columns, np.asarray(numbers, dtype=np.int64))
