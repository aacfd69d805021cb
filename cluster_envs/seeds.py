"""Seed lists from the command line: ``"0-9"``, ``"1,4,7"`` or a mix (``"0-4,10"``).

One parser for the CLI, the benchmark harness, the agents and the scripts. It runs in
time linear in the number of seeds (``"0-200000"`` is instant).
"""

from __future__ import annotations

from cluster_envs.errors import ConfigError

#: The most seeds one specification may expand to (a typo such as ``0-10000000000``
#: fails at once instead of filling memory).
MAX_SEEDS = 10_000_000

_FORMS = "use N, A-B, or a comma list such as '0-4,10'"


def _part(text: str, part: str) -> range:
    lo, sep, hi = part.partition("-")
    try:
        first, last = (int(lo), int(hi)) if sep else (int(part), int(part))
    except ValueError:
        raise ConfigError(f"bad seeds {text!r}: {part!r} is not N or A-B ({_FORMS})") from None
    if first < 0:
        raise ConfigError(f"bad seeds {text!r}: seeds must be >= 0, got {part!r}")
    if last < first:
        raise ConfigError(f"bad seeds {text!r}: range {part!r} runs backwards")
    return range(first, last + 1)


def parse_seeds(text: str | int) -> list[int]:
    """The seeds of ``text``, in the order given, duplicates dropped.

    Ranges are inclusive; seeds are non-negative integers.

    Raises:
        ConfigError: An empty list, a part that is not ``N`` or ``A-B``, a negative seed,
            a backwards range, or more than :data:`MAX_SEEDS` seeds.
    """
    text = str(text).strip()
    parts = [p.strip() for p in text.split(",")]
    if not text or any(not p for p in parts):
        raise ConfigError(f"bad seeds {text!r}: empty entry ({_FORMS})")
    ranges = [_part(text, p) for p in parts]
    if sum(len(r) for r in ranges) > MAX_SEEDS:
        raise ConfigError(f"bad seeds {text!r}: more than {MAX_SEEDS:,} seeds")
    seen: dict[int, None] = {}
    for r in ranges:
        seen.update(dict.fromkeys(r))
    return list(seen)
