"""Small argument helpers shared by every ``cluster-envs`` subcommand (no heavy imports)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cluster_envs.errors import ConfigError

#: Seconds between the "still running" lines of :func:`heartbeat`.
HEARTBEAT_S = 5.0
#: Seconds of silence before :func:`heartbeat`'s first line.
FIRST_BEAT_S = 2.0


def comma_list(text: str, flag: str) -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``; an empty list or entry is a ConfigError naming ``flag``."""
    items = [item.strip() for item in str(text).split(",")]
    if not any(items):
        raise ConfigError(f"{flag} {text!r} names nothing: give a comma-separated list")
    if not all(items):
        raise ConfigError(f"{flag} {text!r} has an empty entry (stray comma?)")
    return items


def comma_lists(values: Iterable[str], flag: str) -> list[str]:
    """A repeatable flag whose values may also be comma lists (``--runs a,b --runs c``)."""
    return [item for value in values for item in comma_list(value, flag)]


def check_out_folder(out: str | Path, flag: str = "--out") -> Path:
    """``out`` as a folder path: a ConfigError if it exists and is not a folder."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{flag} {str(path)!r} is an existing file, not a folder")
    return path


@contextmanager
def heartbeat(what: str, enabled: bool = True, every_s: float = HEARTBEAT_S) -> Iterator[None]:
    """While the block runs, print ``what`` and the elapsed time on stderr now and then.

    For work with no natural progress count (a search inside a library call). Quiet for
    the first :data:`FIRST_BEAT_S` seconds (fast commands print nothing), then one line
    every ``every_s`` seconds, and a closing line with the total time.
    """
    if not enabled:
        yield
        return
    stop = threading.Event()
    start = time.perf_counter()
    beats: list[float] = []

    def beat() -> None:
        wait = FIRST_BEAT_S
        while not stop.wait(wait):
            beats.append(time.perf_counter() - start)
            print(f"{what}: running, {beats[-1]:.0f} s", file=sys.stderr, flush=True)
            wait = every_s

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if beats:
            elapsed = time.perf_counter() - start
            print(f"{what}: done in {elapsed:.1f} s", file=sys.stderr, flush=True)
