"""``--benchmark-json``: a warpt run in pytest-benchmark's JSON shape, so
the tools that read that file (pytest-benchmark's ``compare``, CI
dashboards, ``warpt results import``) keep working."""

from __future__ import annotations

import datetime
import json
import platform
import statistics
from typing import Any, Dict, List, Optional

from warpt._results import Result, Run

#: The version of pytest-benchmark's format these files follow.
FORMAT_VERSION = "5.1.0"


def _quartiles(data: List[float]) -> tuple[float, float]:
    if len(data) < 2:
        return data[0], data[0]
    q = statistics.quantiles(data, n=4, method="inclusive")
    return q[0], q[2]


def _stats(result: Result) -> Optional[Dict[str, Any]]:
    try:
        metric = result.metric("latency_ms")
    except KeyError:
        return None
    s = metric.stats
    if s is None or not s.samples:
        return None
    # pytest-benchmark's figures are seconds per call.
    data = [v / 1e3 for v in s.samples]
    ordered = sorted(data)
    q1, q3 = _quartiles(ordered)
    iqr = q3 - q1
    mean = statistics.fmean(data)
    stddev = statistics.stdev(data) if len(data) > 1 else 0.0
    low = [v for v in ordered if v >= q1 - 1.5 * iqr]
    high = [v for v in ordered if v <= q3 + 1.5 * iqr]
    ld15iqr, hd15iqr = (low[0] if low else ordered[0]), (high[-1] if high else ordered[-1])
    iqr_out = sum(1 for v in data if v < q1 - 1.5 * iqr or v > q3 + 1.5 * iqr)
    sd_out = sum(1 for v in data if v < mean - stddev or v > mean + stddev)
    calls = result.details.get("calls_per_sample")
    return {
        "min": ordered[0],
        "max": ordered[-1],
        "mean": mean,
        "stddev": stddev,
        "rounds": len(data),
        "median": s.median / 1e3,
        "iqr": iqr,
        "q1": q1,
        "q3": q3,
        "iqr_outliers": iqr_out,
        "stddev_outliers": sd_out,
        "outliers": f"{sd_out};{iqr_out}",
        "ld15iqr": ld15iqr,
        "hd15iqr": hd15iqr,
        "ops": 1.0 / mean if mean > 0 else 0.0,
        "total": sum(data) * (calls if isinstance(calls, int) else 1),
        "data": data,
        "iterations": calls if isinstance(calls, int) else 1,
    }


def extra_info(result: Result) -> Dict[str, Any]:
    """The test's ``benchmark.extra_info``, kept by warpt as a JSON detail."""
    text = result.details.get("extra_info")
    if not isinstance(text, str) or not text:
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def _names(nodeid: str) -> Dict[str, Any]:
    name = nodeid.split("::")[-1]
    param = name[name.index("[") + 1 : -1] if name.endswith("]") and "[" in name else None
    return {"name": name, "fullname": nodeid, "param": param}


def benchmark_json(run: Run) -> Dict[str, Any]:
    """The document ``pytest --benchmark-json`` writes, from ``run``."""
    benchmarks = []
    for r in run.results:
        stats = _stats(r)
        if stats is None:
            # pytest-benchmark leaves out the benchmarks that errored.
            continue
        entry: Dict[str, Any] = {"group": r.details.get("group")}
        entry.update(_names(r.benchmark))
        entry["params"] = None
        entry["extra_info"] = extra_info(r)
        entry["options"] = {"warpt_run": run.id}
        entry["stats"] = stats
        benchmarks.append(entry)
    manifest = run.manifest
    return {
        "machine_info": {
            "node": platform.node(),
            "processor": platform.processor(),
            "machine": platform.machine(),
            "python_implementation": platform.python_implementation(),
            "python_version": platform.python_version(),
            "release": platform.release(),
            "system": platform.system(),
            "warpt_version": manifest.get("warpt_version"),
        },
        "commit_info": {},
        "benchmarks": benchmarks,
        "datetime": run.start_time or datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "version": FORMAT_VERSION,
    }
