"""``warpt.run(...)``: one benchmark run through warpt's run path."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from warpt import _binary
from warpt._errors import WarptError
from warpt._history import StoreArg
from warpt._results import Run

ParamValue = Union[str, int, float, bool]


def run(
    *,
    suite: Optional[str] = None,
    benchmarks: Iterable[str] = (),
    components: Iterable[str] = (),
    params: Optional[Mapping[str, ParamValue]] = None,
    duration: Optional[float] = None,
    seed: Optional[int] = None,
    precision: Optional[float] = None,
    repeat: Optional[int] = None,
    labels: Optional[Mapping[str, str]] = None,
    description: Optional[str] = None,
    store: Union[StoreArg, bool] = None,
    progress: bool = True,
    check: bool = False,
) -> Run:
    """Runs benchmarks as ``warpt benchmark run`` does and returns the run.

    ``suite``/``benchmarks``/``components``/``params`` select what runs
    (``params`` values as ``--param`` takes them); ``duration`` is the
    measurement seconds per benchmark. ``labels`` and ``description`` are
    recorded with the run (``--label``, ``--description``). ``store``: a path or URL, ``None``
    for warpt's default, ``False`` to record nothing. ``progress`` shows
    warpt's progress on stderr. A refused request raises
    :class:`warpt.UsageError`; a run whose benchmarks failed is returned
    (its results say why) unless ``check``, which raises
    :class:`warpt.WarptError` for it."""
    # The run request as warpt reads it (`benchmark run --request`, the
    # server's POST /api/v1/runs): only what was given.
    body: Dict[str, Any] = {
        key: value
        for key, value in (
            ("suite", suite),
            ("benchmarks", list(benchmarks)),
            ("components", list(components)),
            ("params", dict(params or {})),
            ("duration", duration),
            ("seed", seed),
            ("precision", precision),
            ("repeat", repeat),
            ("labels", dict(labels or {})),
            ("description", description),
        )
        if value is not None and value != [] and value != {}
    }
    with tempfile.TemporaryDirectory(prefix="warpt-run-") as tmp:
        request_file = os.path.join(tmp, "request.json")
        export = os.path.join(tmp, "run.json")
        with open(request_file, "w", encoding="utf-8") as f:
            json.dump(body, f)
        args = ["benchmark", "run", "--request", request_file, "--export-file", export]
        if store is False:
            args.append("--no-store")
        elif store is not None and store is not True:
            args += ["--store", os.fspath(store)]
        # 1: some benchmark failed; the export says which and why.
        ok = (0, 1)
        status = (
            _binary.call_streaming(args, ok=ok) if progress else _binary.invoke(args, ok=ok)[0]
        )
        if not os.path.exists(export):
            raise WarptError("warpt wrote no results", status)
        with open(export, encoding="utf-8") as f:
            result = Run.from_json(json.load(f))
    if check and not result.passed:
        failed = [
            f"{r.benchmark}: {r.status} ({r.error_message or ''})"
            for r in result.results
            if not r.passed
        ]
        raise WarptError("; ".join(failed) or "the run was interrupted", status or 1)
    return result
