"""Name look-ups with a suggestion: the one way every "unknown X" error is written.

Kept free of heavy imports (only ``difflib``) so the CLI can check a misspelt env or
policy name and answer "did you mean" before importing the simulator.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from cluster_envs.errors import ConfigError

#: How close a valid name must be to be suggested (``difflib`` ratio, 0-1).
SUGGEST_CUTOFF = 0.5
#: Most valid names listed in an error before it is cut short with "...".
MAX_LISTED = 40


def suggest(name: str, valid: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest valid name, or ``""``."""
    close = difflib.get_close_matches(
        str(name), [str(v) for v in valid], n=1, cutoff=SUGGEST_CUTOFF
    )
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_name(
    kind: str, name: object, choices: Iterable[str], *, listed: str | None = None
) -> ConfigError:
    """The error for an unknown ``kind`` (``"policy"``, ``"env"``, ...) called ``name``.

    Args:
        kind: What was looked up, as the user would say it ("policy", "cluster preset").
        name: The name that was given.
        choices: Every valid name (a mapping gives its keys).
        listed: What to call the list in the message (default: "valid").

    Returns:
        A ConfigError (to ``raise``) reading ``unknown policy 'sfj' (did you mean 'sjf'?);
        valid: fifo, sjf, ...``.
    """
    names = [str(c) for c in choices]
    shown = sorted(names)
    tail = ", ".join(shown[:MAX_LISTED]) + (", ..." if len(shown) > MAX_LISTED else "")
    close = suggest(str(name), names)
    return ConfigError(f"unknown {kind} {name!r}{close}; {listed or 'valid'}: {tail or 'none'}")
