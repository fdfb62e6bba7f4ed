"""``warpt.compare(a, b)``: the verdicts ``warpt benchmark compare`` gives."""

from __future__ import annotations

import html
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from warpt import _binary
from warpt._history import StoreArg, store_args
from warpt._results import Run
from warpt._rows import Rows

#: What a side of a comparison may be: a :class:`Run`, a stored run's id
#: (or ``latest``), or an export file.
Side = Union[Run, str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Verdict:
    """One matched metric: both medians, the change, and the judgement
    (``improved``, ``regressed``, ``~`` or ``inconclusive``)."""

    suite: str
    benchmark: str
    metric: str
    tags: Mapping[str, str]
    unit: str
    base: float
    current: float
    change_pct: float
    speedup: float
    verdict: str
    band_pct: float
    p_value: Optional[float]
    ratio_ci95: Optional[Tuple[float, float]]
    reason: Optional[str]

    @classmethod
    def from_json(cls, m: Mapping[str, Any]) -> Verdict:
        """One entry of the comparison's ``metrics``."""
        ci = m.get("ratio_ci95")
        return cls(
            suite=str(m.get("suite", "")),
            benchmark=str(m.get("benchmark", "")),
            metric=str(m.get("metric", "")),
            tags=dict(m.get("tags") or {}),
            unit=str(m.get("unit", "")),
            base=float(m["base"]["median"]),
            current=float(m["current"]["median"]),
            change_pct=float(m.get("change_pct", 0.0)),
            speedup=float(m.get("speedup", 1.0)),
            verdict=str(m.get("verdict", "")),
            band_pct=float(m.get("band_pct", 0.0)),
            p_value=m.get("p_value"),
            ratio_ci95=(float(ci[0]), float(ci[1])) if isinstance(ci, list) else None,
            reason=m.get("reason"),
        )


@dataclass(frozen=True)
class Comparison:
    """A whole comparison: the verdict per metric, the counts, warnings."""

    base: str
    current: str
    threshold_pct: float
    verdicts: Tuple[Verdict, ...]
    only_base: Tuple[str, ...]
    only_current: Tuple[str, ...]
    warnings: Tuple[str, ...]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> Comparison:
        """``benchmark compare --format json``'s document."""
        return cls(
            base=str(doc.get("base", "")),
            current=str(doc.get("current", "")),
            threshold_pct=float(doc.get("threshold_pct", 0.0)),
            verdicts=tuple(Verdict.from_json(m) for m in doc.get("metrics", [])),
            only_base=tuple(doc.get("only_base", [])),
            only_current=tuple(doc.get("only_current", [])),
            warnings=tuple(doc.get("warnings", [])),
            raw=doc,
        )

    @property
    def regressions(self) -> List[Verdict]:
        """The metrics that regressed."""
        return [v for v in self.verdicts if v.verdict == "regressed"]

    @property
    def regressed(self) -> bool:
        """Whether any metric regressed (``benchmark compare`` exits 1)."""
        return bool(self.regressions)

    def rows(self) -> Rows:
        """One row per verdict (for ``to_pandas()`` / ``to_polars()``)."""
        return Rows(
            [
                {
                    "suite": v.suite,
                    "benchmark": v.benchmark,
                    "metric": v.metric,
                    "tags": dict(v.tags),
                    "unit": v.unit,
                    "base": v.base,
                    "current": v.current,
                    "change_pct": v.change_pct,
                    "speedup": v.speedup,
                    "verdict": v.verdict,
                    "band_pct": v.band_pct,
                }
                for v in self.verdicts
            ]
        )

    def _repr_html_(self) -> str:
        colour = {"regressed": "#c0392b", "improved": "#1e8449"}
        body = "".join(
            "<tr>"
            + "".join(
                f"<td>{c}</td>"
                for c in (
                    html.escape(f"{v.suite}/{v.benchmark}"),
                    html.escape(v.metric + ("".join(f" {k}={t}" for k, t in sorted(v.tags.items())))),
                    f"{v.base:.4g} {html.escape(v.unit)}",
                    f"{v.current:.4g} {html.escape(v.unit)}",
                    f"{v.change_pct:+.1f}%",
                    f'<span style="color:{colour.get(v.verdict, "inherit")}">'
                    f"{html.escape(v.verdict)}</span>",
                )
            )
            + "</tr>"
            for v in self.verdicts
        )
        head = "".join(
            f"<th>{h}</th>"
            for h in ("benchmark", "metric", "base", "current", "change", "verdict")
        )
        return (
            f"<div><b>{html.escape(self.base)} → {html.escape(self.current)}</b> "
            f"(threshold {self.threshold_pct:g}%)"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )


def compare(
    base: Side,
    current: Side,
    *,
    threshold: Optional[float] = None,
    assume_noise: Optional[float] = None,
    store: StoreArg = None,
) -> Comparison:
    """Compares two runs as ``warpt benchmark compare`` does (its noise
    rules, its threshold in percent): each side a :class:`Run`, a stored
    run's id (``latest`` too) or an export file. Where this machine's
    run-to-run noise is unknown (no ``warpt noise`` profile, fewer than
    five stored runs), single runs are ``inconclusive`` unless
    ``assume_noise`` states it (percent)."""
    with tempfile.TemporaryDirectory(prefix="warpt-compare-") as tmp:
        sides: List[str] = []
        for i, side in enumerate((base, current)):
            if isinstance(side, Run):
                path = os.path.join(tmp, f"side{i}.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(side.raw, f)
                sides.append(path)
            else:
                sides.append(os.fspath(side))
        args = ["benchmark", "compare", *sides, "--format", "json", *store_args(store)]
        if threshold is not None:
            args += ["--threshold", str(threshold)]
        if assume_noise is not None:
            args += ["--assume-noise", str(assume_noise)]
        # Exit status 1 is a regression: the comparison says so itself.
        out = _binary.call(args, ok=(0, 1))
    doc: Dict[str, Any] = json.loads(out)
    return Comparison.from_json(doc)
