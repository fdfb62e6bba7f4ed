"""Rows of the history, convertible to the data-frame libraries users have."""

from __future__ import annotations

import importlib
from typing import Any, Dict, Iterator, List, Sequence


class Rows(Sequence[Dict[str, Any]]):
    """A list of rows (dicts of one shape), with ``to_pandas()`` and
    ``to_polars()``; those import the library only when called, so neither
    is a dependency of warpt."""

    def __init__(self, rows: List[Dict[str, Any]]) -> None:
        self._rows = rows

    def __getitem__(self, index: Any) -> Any:
        return self._rows[index]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self._rows)

    def __repr__(self) -> str:
        return f"Rows({self._rows!r})"

    def columns(self) -> List[str]:
        """Every key, in first-seen order."""
        seen: Dict[str, None] = {}
        for row in self._rows:
            for key in row:
                seen.setdefault(key, None)
        return list(seen)

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` (pandas must be installed)."""
        pandas = importlib.import_module("pandas")
        return pandas.DataFrame(self._rows, columns=self.columns())

    def to_polars(self) -> Any:
        """A ``polars.DataFrame`` (polars must be installed)."""
        polars = importlib.import_module("polars")
        columns = self.columns()
        return polars.DataFrame(
            {c: [row.get(c) for row in self._rows] for c in columns}, strict=False
        )
