"""Columnar CSV reading for large traces: pandas' C parser in chunks, no per-line Python.

:func:`read_csv_columns` returns a *fast* :class:`~cluster_envs.workload.table.Table`
(numeric columns parsed, text columns as object arrays, the file line of each row) or
``None`` when the file has anything whose exact handling belongs to the line-by-line
reader (:func:`~cluster_envs.workload.table.read_csv_table`): quotes, spaces-only lines, line
breaks other than ``\\n``, non-ASCII bytes, a header-only or empty file, duplicate or
missing columns, rows with the wrong number of fields. The values are the same as that
reader's by construction: the same ``str.strip`` of each field and the same
``pd.to_numeric`` on the same strings, only a chunk at a time.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd

from cluster_envs.workload.table import Table

#: Rows parsed per pandas chunk (bounds the transient strings held at once).
CHUNK_ROWS = 200_000
#: Bytes the fast path leaves to the line-by-line reader (quotes; the line breaks of
#: ``str.splitlines`` other than ``\n``; NUL).
_SLOW_BYTES = re.compile(rb'[\x00\r\x0b\x0c\x1c-\x1f"]')
_SPACES = re.compile(rb"[ \t]")


def _data_lines(data: bytes) -> np.ndarray:
    """1-based numbers of the non-empty lines after the first (the data rows)."""
    total = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if b"\n\n" not in data:
        return np.arange(2, total + 1, dtype=np.int64)
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
    starts = np.concatenate(([0], breaks + 1))[:total]
    ends = np.concatenate((breaks, [len(data)]))[:total]
    return np.flatnonzero(ends > starts)[1:] + 1


@contextmanager
def arrow_on_malloc() -> Iterator[None]:
    """Let pandas' Arrow-backed strings use malloc while parsing, then trim the heap.

    Arrow's default pool (mimalloc) keeps the chunks' freed string buffers: about 100
    MiB more peak RSS at a million rows. The pool is set back afterwards (buffers
    remember theirs), so only this parse uses the system allocator.
    """
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
    except ImportError:  # pandas then keeps strings as Python objects
        yield
        return
    previous = pa.default_memory_pool()
    system = pa.system_memory_pool()
    pa.set_memory_pool(system)
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
        system.release_unused()  # malloc_trim: hand the freed heap back


def read_csv_columns(path: str | os.PathLike[str], numeric: Iterable[str]) -> Table | None:
    """A fast table of the CSV at ``path`` with ``numeric`` columns parsed, or ``None``.

    ``None`` means: use the line-by-line reader (it reports or handles what this
    function declined). Unreadable files also give ``None`` so the error is that reader's.
    Call it (and the checks of its columns) under :func:`arrow_on_malloc`.
    """
    path = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.isascii() or _SLOW_BYTES.search(data) or data.startswith(b"\n"):
        return None
    end = data.find(b"\n")
    header = [field.strip() for field in data[: end if end >= 0 else len(data)].decode().split(",")]
    lines = _data_lines(data)
    num_lines = len(lines) + 1
    if end < 0 or num_lines < 2 or len(header) < 2 or len(set(header)) != len(header):
        return None
    if data.count(b",") != (len(header) - 1) * num_lines:
        return None  # some row has a different number of fields
    strip = bool(_SPACES.search(data))
    wanted = set(numeric)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in header}
    try:
        reader = pd.read_csv(
            io.BytesIO(data),
            names=header,
            header=0,
            dtype={name: str if name in wanted else object for name in header},
            na_filter=False,
            keep_default_na=False,
            skip_blank_lines=True,
            quoting=3,  # csv.QUOTE_NONE: fields never contain quotes here
            engine="c",
            chunksize=CHUNK_ROWS,
        )
        del data
        for chunk in reader:
            for name in header:
                column = chunk[name]
                if strip:
                    raw = [value.strip() for value in column.to_numpy(dtype=object).tolist()]
                    column = pd.Series(np.asarray(raw, dtype=object))
                if name in wanted:  # the same str-dtype Series the line reader converts
                    values = pd.to_numeric(column, errors="coerce")
                    parts[name].append(values.to_numpy(dtype=np.float64))
                else:
                    parts[name].append(column.to_numpy(dtype=object))
    except (ValueError, pd.errors.ParserError):
        return None
    columns = {name: np.concatenate(arrays) for name, arrays in parts.items()}
    rows = len(columns[header[0]])
    if rows != num_lines - 1:
        return None
    parsed = {name: columns[name] for name in header if name in wanted}
    return Table(path, columns, lines, parsed=parsed, fast=True)
