"""``warpt.history()``: the stored runs, as rows and as runs."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from warpt import _binary
from warpt._results import Run
from warpt._rows import Rows

StoreArg = Union[str, "os.PathLike[str]", None]


def store_args(store: StoreArg) -> List[str]:
    """``--store STORE`` when one is named; warpt's own choice
    (``WARPT_STORE``, warpt.toml, the default file) otherwise."""
    return [] if store is None else ["--store", os.fspath(store)]


def _sql_text(value: str) -> str:
    """``value`` as an SQL string literal (the query is read-only anyway)."""
    return "'" + value.replace("'", "''") + "'"


class History:
    """The result history of one store (``None``: the one warpt uses by
    default, ``WARPT_STORE`` first)."""

    def __init__(self, store: StoreArg = None) -> None:
        self.store = store

    def runs(
        self,
        *,
        suite: Optional[str] = None,
        benchmark: Optional[str] = None,
        machine: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        limit: Optional[int] = None,
        labels: Optional[Mapping[str, str]] = None,
    ) -> Rows:
        """One row per stored run, newest first (``warpt results list``);
        ``labels``: only the runs carrying every one of them."""
        args = ["results", "list", "--json", *store_args(self.store)]
        for key, label in (labels or {}).items():
            args += ["--label", f"{key}={label}"]
        for flag, value in (
            ("--suite", suite),
            ("--benchmark", benchmark),
            ("--machine", machine),
            ("--since", since),
            ("--until", until),
            ("--limit", None if limit is None else str(limit)),
        ):
            if value is not None:
                args += [flag, value]
        rows: List[Dict[str, Any]] = json.loads(_binary.call(args))
        return Rows(rows)

    def run(self, run: str) -> Run:
        """One stored run in full: its id, a unique prefix, or ``latest``."""
        return Run.from_json(
            json.loads(_binary.call(["results", "show", run, "--json", *store_args(self.store)]))
        )

    def metric(
        self,
        benchmark: str,
        name: str,
        tags: Optional[Mapping[str, str]] = None,
        *,
        suite: Optional[str] = None,
    ) -> Rows:
        """One metric of one benchmark over every stored run, oldest first:
        ``run_id``, ``start_time``, ``machine``, ``suite``, ``benchmark``,
        ``metric``, ``tags``, ``value`` (the median), ``unit``, ``n``,
        ``ci95_low``, ``ci95_high``, ``stop_reason``. ``tags`` keeps the rows
        whose tags include these (``{"precision": "fp64"}``)."""
        where = [
            "x.trial IS NULL",
            f"x.benchmark = {_sql_text(benchmark)}",
            f"m.name = {_sql_text(name)}",
        ]
        if suite is not None:
            where.append(f"x.suite = {_sql_text(suite)}")
        sql = (
            "SELECT r.id AS run_id, r.start_time AS start_time, mc.hostname AS machine, "
            "x.suite AS suite, x.benchmark AS benchmark, m.name AS metric, "
            "m.tags_json AS tags, m.value AS value, m.unit AS unit, m.n AS n, "
            "m.ci95_low AS ci95_low, m.ci95_high AS ci95_high, m.stop_reason AS stop_reason "
            "FROM metrics m JOIN results x ON x.id = m.result_id "
            "JOIN suite_runs r ON r.id = x.run_id "
            "LEFT JOIN machines mc ON mc.id = r.machine_id "
            f"WHERE {' AND '.join(where)} ORDER BY r.start_time, m.position"
        )
        out = _binary.call(["results", "query", sql, "--json", *store_args(self.store)])
        rows: List[Dict[str, Any]] = []
        for row in json.loads(out):
            row_tags = json.loads(row["tags"]) if isinstance(row.get("tags"), str) else {}
            if tags is not None and any(row_tags.get(k) != v for k, v in tags.items()):
                continue
            row["tags"] = row_tags
            rows.append(row)
        return Rows(rows)


def history(store: StoreArg = None) -> History:
    """The result history: ``store`` is a path or ``postgres://`` URL, or
    ``None`` for the store warpt uses by default."""
    return History(store)
