"""A small library to benchmark: word statistics of a text."""

from __future__ import annotations

import collections
import re
from typing import Dict, List, Tuple

WORD = re.compile(r"[a-z']+")


def words(text: str) -> List[str]:
    """The lower-cased words of ``text``."""
    return WORD.findall(text.lower())


def counts_loop(text: str) -> Dict[str, int]:
    """Word counts with a plain dict (the slow way)."""
    out: Dict[str, int] = {}
    for w in words(text):
        out[w] = out.get(w, 0) + 1
    return out


def counts_counter(text: str) -> Dict[str, int]:
    """Word counts with collections.Counter (its counting loop is C)."""
    return dict(collections.Counter(words(text)))


def top(counts: Dict[str, int], n: int) -> List[Tuple[str, int]]:
    """The ``n`` most frequent words, ties by word."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
