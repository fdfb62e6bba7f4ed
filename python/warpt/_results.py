"""A run's results as typed objects: the export's fields (docs/store.md's
JSON contract), read from the JSON warpt writes."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

JsonObject = Dict[str, Any]


def _float(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Stats:
    """A metric's statistics over its samples: the median and its 95% CI
    (distribution-free), the spread, the percentiles, how many samples and
    how many of them Tukey's fences call outliers (counted, never dropped)."""

    n: int
    median: float
    mean: float
    std: float
    min: float
    max: float
    ci95_low: float
    ci95_high: float
    p25: float
    p75: float
    p90: float
    p95: float
    p99: float
    outliers: int
    stop_reason: Optional[str]
    samples: Tuple[float, ...]

    @classmethod
    def from_json(cls, s: Mapping[str, Any]) -> Stats:
        """The ``stats`` object of an exported metric."""

        def num(key: str) -> float:
            return _float(s.get(key)) or 0.0

        return cls(
            n=int(s.get("n", 0)),
            median=num("median"),
            mean=num("mean"),
            std=num("std"),
            min=num("min"),
            max=num("max"),
            ci95_low=num("ci95_low"),
            ci95_high=num("ci95_high"),
            p25=num("p25"),
            p75=num("p75"),
            p90=num("p90"),
            p95=num("p95"),
            p99=num("p99"),
            outliers=int(s.get("outliers", 0)),
            stop_reason=s.get("stop_reason"),
            samples=tuple(float(v) for v in s.get("samples", [])),
        )

    @property
    def rel_ci(self) -> float:
        """Half the CI's width over the median (0.01 = ±1%)."""
        return (self.ci95_high - self.ci95_low) / 2 / self.median if self.median else 0.0


@dataclass(frozen=True)
class Metric:
    """One figure of a result: ``value`` is the median, in ``unit``."""

    name: str
    value: float
    unit: str
    higher_is_better: bool
    tags: Mapping[str, str]
    stats: Optional[Stats]

    @classmethod
    def from_json(cls, m: Mapping[str, Any]) -> Metric:
        """An exported metric."""
        stats = m.get("stats")
        return cls(
            name=str(m["name"]),
            value=float(m["value"]),
            unit=str(m.get("unit", "")),
            higher_is_better=bool(m.get("higher_is_better", False)),
            tags=dict(m.get("tags") or {}),
            stats=Stats.from_json(stats) if isinstance(stats, dict) else None,
        )

    def label(self) -> str:
        """``name`` with its tags, as warpt's tables print it."""
        if not self.tags:
            return self.name
        return self.name + "[" + ",".join(f"{k}={v}" for k, v in sorted(self.tags.items())) + "]"


@dataclass(frozen=True)
class Validation:
    """Whether the benchmark's output was checked right."""

    passed: bool
    message: str


@dataclass(frozen=True)
class Result:
    """One benchmark's result in a run."""

    suite: str
    benchmark: str
    status: str
    error_message: Optional[str]
    params: Mapping[str, Any]
    metrics: Tuple[Metric, ...]
    validation: Optional[Validation]
    quality: Optional[str]
    quality_reasons: Tuple[str, ...]
    warnings: Tuple[str, ...]
    details: Mapping[str, Any]
    raw: JsonObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, r: JsonObject) -> Result:
        """An exported result."""
        spec = r.get("spec") or {}
        ident = spec.get("id") or {}
        v = r.get("validation")
        return cls(
            suite=str(ident.get("suite", "")),
            benchmark=str(ident.get("name", "")),
            status=str(r.get("status", "")),
            error_message=r.get("error_message"),
            params=dict(r.get("params") or {}),
            metrics=tuple(Metric.from_json(m) for m in r.get("metrics", [])),
            validation=Validation(bool(v.get("passed")), str(v.get("message", "")))
            if isinstance(v, dict)
            else None,
            quality=r.get("quality"),
            quality_reasons=tuple(r.get("quality_reasons", [])),
            warnings=tuple(r.get("warnings", [])),
            details=dict(r.get("details") or {}),
            raw=r,
        )

    @property
    def passed(self) -> bool:
        """Whether the benchmark ran and its validation passed."""
        return self.status == "passed"

    def metric(self, name: str, tags: Optional[Mapping[str, str]] = None) -> Metric:
        """The metric ``name`` (with exactly ``tags``, when given); KeyError
        naming what there is when there is none."""
        for m in self.metrics:
            if m.name == name and (tags is None or dict(m.tags) == dict(tags)):
                return m
        have = ", ".join(m.label() for m in self.metrics) or "none"
        raise KeyError(f"{self.suite}/{self.benchmark} has no metric {name!r} (it has: {have})")


@dataclass(frozen=True)
class Run:
    """A suite run: what ``benchmark run`` exports and the store keeps."""

    id: str
    suite: str
    start_time: Optional[str]
    end_time: Optional[str]
    interrupted: bool
    results: Tuple[Result, ...]
    manifest: Mapping[str, Any]
    raw: JsonObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JsonObject) -> Run:
        """A run from its export (``benchmark run --export-file``,
        ``results show --json``)."""
        return cls(
            id=str(doc.get("id", "")),
            suite=str(doc.get("suite", "")),
            start_time=doc.get("start_time"),
            end_time=doc.get("end_time"),
            interrupted=bool(doc.get("interrupted", False)),
            results=tuple(Result.from_json(r) for r in doc.get("benchmarks", [])),
            manifest=dict(doc.get("manifest") or {}),
            raw=doc,
        )

    @property
    def passed(self) -> bool:
        """Every result passed and the run was not interrupted."""
        return not self.interrupted and all(r.passed for r in self.results)

    def result(self, benchmark: str) -> Result:
        """The result of ``benchmark`` (its name, or ``suite/name``)."""
        for r in self.results:
            if benchmark in (r.benchmark, f"{r.suite}/{r.benchmark}"):
                return r
        have = ", ".join(r.benchmark for r in self.results) or "none"
        raise KeyError(f"run {self.id} has no benchmark {benchmark!r} (it has: {have})")

    def _repr_html_(self) -> str:
        rows = []
        for r in self.results:
            figures = r.metrics or ()
            first = True
            for m in figures or (None,):
                cells = [
                    html.escape(f"{r.suite}/{r.benchmark}") if first else "",
                    html.escape(r.status) if first else "",
                ]
                if m is None:
                    cells += [html.escape(r.error_message or ""), "", "", ""]
                else:
                    ci = (
                        f"{m.stats.ci95_low:.4g} – {m.stats.ci95_high:.4g}"
                        if m.stats is not None
                        else ""
                    )
                    cells += [
                        html.escape(m.label()),
                        f"{m.value:.4g} {html.escape(m.unit)}",
                        ci,
                        str(m.stats.n) if m.stats is not None else "",
                    ]
                rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
                first = False
        head = "".join(
            f"<th>{h}</th>" for h in ("benchmark", "status", "metric", "median", "95% CI", "n")
        )
        return (
            f"<div><b>warpt run {html.escape(self.id)}</b> ({html.escape(self.suite)}, "
            f"{html.escape(self.start_time or '')})"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )
