"""warpt's pytest plugin: pytest-benchmark's ``benchmark`` fixture,
measured by warpt (``pytest --warpt`` or ``pytest -p warpt``).

Registered through the ``pytest11`` entry point, it only adds options
until asked: without ``--warpt`` (or ``-p warpt``) nothing about a test run
changes, and pytest-benchmark, when installed, keeps its fixture.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from typing import Any, Callable, Dict, Generator, Iterable, Iterator, List, Optional

import pytest

from warpt import _binary, _gitref
from warpt._adapter import Target
from warpt._compare import Comparison, Verdict, compare
from warpt._errors import WarptError
from warpt._pytest_json import benchmark_json
from warpt._results import Result, Run
from warpt._session import SUITE, WarptRun

#: Keyword arguments the ``benchmark`` marker takes (pytest-benchmark's
#: that have a meaning under warpt).
MARKER_KEYS = ("group", "min_rounds", "max_time", "warmup")
#: pytest-benchmark's other marker keys: accepted, with no effect.
IGNORED_MARKER_KEYS = (
    "min_time",
    "precision",
    "confidence",
    "timer",
    "disable_gc",
    "warmup_iterations",
    "calibration_precision",
    "cprofile",
)


def _pytest_benchmark_present(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-benchmark takes part in this pytest run: loaded, or
    installed and about to load (not blocked by ``-p no:benchmark``, plugin
    autoloading not turned off)."""
    if pluginmanager.has_plugin("benchmark"):
        return True
    if pluginmanager.is_blocked("benchmark") or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    try:
        importlib.metadata.distribution("pytest-benchmark")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("warpt", "warpt: benchmarks measured and stored by warpt")
    group.addoption(
        "--warpt",
        action="store_true",
        default=False,
        help="measure the tests that use the `benchmark` fixture with warpt (also: -p warpt)",
    )
    group.addoption(
        "--warpt-compare",
        metavar="REF",
        default=None,
        help="compare with an earlier run and fail on a regression: a stored run's id, `latest` "
        "(the last stored pytest run), or a git ref (measured first in a temporary worktree)",
    )
    group.addoption(
        "--warpt-threshold",
        metavar="PCT",
        type=float,
        default=None,
        help="a change smaller than this percentage is never a regression (warpt's default: 5)",
    )
    group.addoption(
        "--warpt-assume-noise",
        metavar="PCT",
        type=float,
        default=None,
        help="the run-to-run noise to assume where warpt knows none for this machine "
        "(no `warpt noise` profile, fewer than five stored runs): without it such verdicts "
        "are inconclusive, never a failure",
    )
    group.addoption(
        "--warpt-store",
        metavar="PATH|URL",
        default=None,
        help="the store the run is recorded in (default: WARPT_STORE, then warpt's own)",
    )
    group.addoption(
        "--warpt-label",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a label recorded with the run (repeatable); `warpt results list --label` finds it",
    )
    group.addoption(
        "--warpt-description",
        metavar="TEXT",
        default=None,
        help="a sentence recorded with the run",
    )
    group.addoption(
        "--warpt-seed",
        metavar="N",
        type=int,
        default=None,
        help="the run's seed (recorded in its manifest)",
    )
    if _pytest_benchmark_present(pluginmanager):
        # pytest-benchmark declares these (same names, same meanings):
        # declaring them twice would break every pytest run.
        return
    bench = parser.getgroup("benchmark", "benchmark (pytest-benchmark's options, under warpt)")
    bench.addoption(
        "--benchmark-skip",
        action="store_true",
        default=False,
        help="skip the tests that use the benchmark fixture",
    )
    bench.addoption(
        "--benchmark-only",
        action="store_true",
        default=False,
        help="run only the tests that use the benchmark fixture (overrides --benchmark-skip)",
    )
    bench.addoption(
        "--benchmark-disable",
        action="store_true",
        default=False,
        help="call each benchmarked function once, unmeasured",
    )
    bench.addoption(
        "--benchmark-json",
        metavar="PATH",
        default=None,
        help="write the results in pytest-benchmark's JSON shape to PATH",
    )
    bench.addoption(
        "--benchmark-max-time",
        metavar="SECONDS",
        type=float,
        default=None,
        help="measurement seconds per test (warpt's duration; the stopping rule may stop "
        "sooner once the median is known, and go on to 3x)",
    )
    bench.addoption(
        "--benchmark-min-rounds",
        metavar="NUM",
        type=int,
        default=None,
        help="fewest samples per test",
    )


def _enabled(config: pytest.Config) -> bool:
    if config.getoption("warpt", default=False):
        return True
    plugins = getattr(config.option, "plugins", None) or []
    return "warpt" in plugins or "warpt.pytest_plugin" in plugins


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "benchmark(group=None, min_rounds=None, max_time=None, warmup=None): "
        "settings of a benchmark test",
    )
    if not _enabled(config):
        return
    if getattr(config, "workerinput", None) is not None or _option(config, "numprocesses"):
        raise pytest.UsageError(
            "--warpt: run without pytest-xdist's -n: warpt measures one test at a time "
            "(benchmarks in parallel disturb each other's figures)"
        )
    other = None
    if _pytest_benchmark_present(config.pluginmanager):
        # Both plugins define `benchmark`: warpt was asked for, so
        # pytest-benchmark is turned off for this run, and the header says so.
        config.pluginmanager.set_blocked("benchmark")
        config.pluginmanager.set_blocked("pytest-benchmark")
        other = (
            "pytest-benchmark is installed too: warpt owns the `benchmark` fixture in this run "
            "(--warpt); run without --warpt to measure with pytest-benchmark"
        )
    config.pluginmanager.register(WarptPlugin(config, other), "warpt-session")


def _option(config: pytest.Config, name: str) -> Any:
    return config.getoption(name, default=None)


class BenchmarkFixture:
    """pytest-benchmark's fixture API over warpt's measurement."""

    def __init__(self, plugin: WarptPlugin, node: pytest.Item) -> None:
        self._plugin = plugin
        self._node = node
        marker = node.get_closest_marker("benchmark")
        self._marker: Dict[str, Any] = dict(marker.kwargs) if marker else {}
        for key in self._marker:
            if key not in MARKER_KEYS + IGNORED_MARKER_KEYS:
                raise ValueError(f"benchmark mark can't have {key!r} keyword argument.")
        #: The group the test is reported in (the marker's by default).
        self.group: Optional[str] = self._marker.get("group")
        #: Extra information stored with the result (its ``extra_info`` detail).
        self.extra_info: Dict[str, Any] = {}
        self._used = False
        self.disabled = bool(_option(plugin.config, "benchmark_disable"))

    def _settings(self) -> Dict[str, Any]:
        s: Dict[str, Any] = {}
        rounds = _option(self._plugin.config, "benchmark_min_rounds")
        if rounds is not None:
            s["min_rounds"] = int(rounds)
        for key in ("min_rounds", "max_time", "warmup"):
            if self._marker.get(key) is not None:
                s[key] = self._marker[key]
        return s

    def _measure(self, target: Target, settings: Dict[str, Any]) -> Any:
        if self._used:
            raise RuntimeError(
                "the benchmark fixture can only be used once per test (as in pytest-benchmark)"
            )
        self._used = True
        if self.disabled:
            args, kwargs = target._arguments()
            return target.fn(*args, **kwargs)
        self._plugin.measure(self._node, settings, target, self)
        if target.error is not None:
            raise target.error
        if not target.called:
            # warpt stopped before any timed call (it says why in its
            # result): the test still gets the function's result.
            args, kwargs = target._arguments()
            return target.fn(*args, **kwargs)
        return target.result

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Measures ``fn(*args, **kwargs)`` and returns its result."""
        return self._measure(Target(fn, args, kwargs), self._settings())

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Optional[Dict[str, Any]] = None,
        setup: Optional[Callable[[], Any]] = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        """pytest-benchmark's explicit mode: exactly ``rounds`` samples of
        ``iterations`` calls each after ``warmup_rounds`` unrecorded ones
        (warpt times at least one); ``setup()`` before every round may
        return ``(args, kwargs)``."""
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, not {rounds}")
        if iterations < 1:
            raise ValueError(f"iterations must be at least 1, not {iterations}")
        if warmup_rounds < 0:
            raise ValueError(f"warmup_rounds must be 0 or more, not {warmup_rounds}")
        if setup is not None and iterations > 1:
            raise ValueError("can't use more than 1 `iterations` with a `setup` function")
        if setup is not None and (args or kwargs):
            raise TypeError("can't use `args` or `kwargs` if a `setup` function is passed")
        settings = self._settings()
        settings["pedantic"] = {
            "rounds": rounds,
            "iterations": iterations,
            "warmup_rounds": warmup_rounds,
        }
        return self._measure(Target(target, tuple(args), dict(kwargs or {}), setup), settings)


class WarptPlugin:
    """The plugin's state for one pytest session (registered only with
    ``--warpt`` / ``-p warpt``)."""

    def __init__(self, config: pytest.Config, other: Optional[str]) -> None:
        self.config = config
        self.other = other
        self.run: Optional[WarptRun] = None
        self.result: Optional[Run] = None
        self.comparison: Optional[Comparison] = None
        self.error: Optional[str] = None
        self.measured: Dict[str, BenchmarkFixture] = {}
        self.reports: Dict[str, pytest.TestReport] = {}
        self.base: Optional[str] = None

    # --- the fixture and the options pytest-benchmark users know ---

    @pytest.fixture
    def benchmark(self, request: pytest.FixtureRequest) -> Iterator[BenchmarkFixture]:
        """pytest-benchmark's ``benchmark`` fixture, measured by warpt."""
        if _option(self.config, "benchmark_skip") and not _option(self.config, "benchmark_only"):
            pytest.skip("Benchmarks are skipped (--benchmark-skip was used).")
        yield BenchmarkFixture(self, request.node)

    def pytest_report_header(self, config: pytest.Config) -> List[str]:
        lines = [f"warpt: tests using `benchmark` are measured by warpt (suite {SUITE})"]
        if self.other:
            lines.append(f"warpt: {self.other}")
        return lines

    def pytest_collection_modifyitems(self, config: pytest.Config, items: List[pytest.Item]) -> None:
        only = _option(config, "benchmark_only")
        skip = _option(config, "benchmark_skip") and not only
        for item in items:
            uses = "benchmark" in getattr(item, "fixturenames", ())
            if uses and skip:
                item.add_marker(pytest.mark.skip(reason="Skipping benchmark (--benchmark-skip active)."))
            elif not uses and only:
                item.add_marker(pytest.mark.skip(reason="Skipping non-benchmark (--benchmark-only active)."))

    # --- one warpt run for the session ---

    def _planned(self, items: List[pytest.Item]) -> List[str]:
        if _option(self.config, "benchmark_disable"):
            return []
        out = []
        for item in items:
            if "benchmark" not in getattr(item, "fixturenames", ()):
                continue
            if item.get_closest_marker("skip") is not None:
                continue
            out.append(item.nodeid)
        return out

    def _store(self) -> Optional[str]:
        store = _option(self.config, "warpt_store")
        return None if store is None else str(store)

    def _resolve_base(self) -> Optional[str]:
        ref = _option(self.config, "warpt_compare")
        if ref is None:
            return None
        store = self._store()
        store_args = [] if store is None else ["--store", store]
        if ref == "latest":
            return self._latest(store_args, ref)
        try:
            shown = json.loads(_binary.call(["results", "show", ref, "--json", *store_args]))
            return str(shown["id"])
        except WarptError as e:
            not_stored = e.message
        commit = _gitref.commit_of(self.config.rootpath, ref)
        if commit is None:
            raise pytest.UsageError(
                f"--warpt-compare {ref}: neither a stored run ({not_stored}) nor a git ref"
            )
        try:
            _gitref.run_at(
                ref,
                commit,
                self.config.rootpath,
                self.config.invocation_params.dir,
                self.config.invocation_params.args,
            )
        except WarptError as e:
            raise pytest.UsageError(str(e.message)) from None
        return self._latest(store_args, ref)

    def _latest(self, store_args: List[str], ref: str) -> str:
        rows = json.loads(
            _binary.call(["results", "list", "--suite", SUITE, "--limit", "1", "--json", *store_args])
        )
        if not rows:
            raise pytest.UsageError(
                f"--warpt-compare {ref}: the store holds no earlier pytest run to compare with"
            )
        return str(rows[0]["id"])

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        if session.config.option.collectonly:
            return
        nodeids = self._planned(session.items)
        if not nodeids:
            return
        self.base = self._resolve_base()
        max_time = _option(self.config, "benchmark_max_time")
        try:
            self.run = WarptRun(
                nodeids,
                store=self._store(),
                duration=None if max_time is None else float(max_time),
                seed=_option(self.config, "warpt_seed"),
                labels=_labels(_option(self.config, "warpt_label") or []),
                description=_option(self.config, "warpt_description"),
            )
        except WarptError as e:
            raise pytest.UsageError(f"warpt: {e}") from None

    def measure(
        self, node: pytest.Item, settings: Dict[str, Any], target: Target, fixture: BenchmarkFixture
    ) -> None:
        """Called by the fixture: warpt measures the test's function."""
        self.measured[node.nodeid] = fixture
        if self.run is None:
            raise RuntimeError("warpt is not measuring this session (see the report header)")
        if not self.run.measure(node.nodeid, settings, target):
            raise RuntimeError(f"warpt has no benchmark planned for {node.nodeid}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.failed or report.skipped:
            self.reports.setdefault(item.nodeid, report)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        done = yield
        if self.run is None:
            return done
        fixture = self.measured.get(item.nodeid)
        if fixture is None:
            self._declined(item)
            return done
        report = self.reports.get(item.nodeid)
        problem = None
        if report is not None and report.failed:
            lines = [line for line in report.longreprtext.splitlines() if line.strip()]
            last = lines[-1].strip() if lines else ""
            problem = f"the test failed ({report.when}): {last}"[:500]
        details: Dict[str, Any] = {}
        if fixture.group is not None:
            details["group"] = fixture.group
        if fixture.extra_info:
            details["extra_info"] = fixture.extra_info
        self.run.complete(item.nodeid, problem, details)
        return done

    def _declined(self, item: pytest.Item) -> None:
        """Tells warpt why a planned test was not measured."""
        assert self.run is not None
        if item.nodeid not in self.run.pending:
            return
        report = self.reports.get(item.nodeid)
        if report is not None and report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
            self.run.decline(item.nodeid, f"skipped by pytest: {reason}", skipped=True)
        elif report is not None and report.failed:
            self.run.decline(
                item.nodeid, f"the test failed before calling benchmark() ({report.when})", skipped=False
            )
        else:
            self.run.decline(item.nodeid, "the test did not call benchmark()", skipped=True)

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(
        self, session: pytest.Session, exitstatus: int
    ) -> Generator[None, object, object]:
        if self.run is not None:
            try:
                self.result = self.run.finish("not run: the pytest session ended before it")
            except WarptError as e:
                self.error = str(e)
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            finally:
                self.run.cleanup()
        if self.result is not None:
            path = _option(self.config, "benchmark_json")
            if path:
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(benchmark_json(self.result), f, indent=4)
            if self.base is not None and self.result.id:
                self.comparison = compare(
                    self.base,
                    self.result.id,
                    threshold=_option(self.config, "warpt_threshold"),
                    assume_noise=_option(self.config, "warpt_assume_noise"),
                    store=self._store(),
                )
                if _timed(self.comparison.regressions):
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return (yield)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        if self.error:
            tr.write_sep("=", "warpt", red=True)
            tr.write_line(self.error)
            return
        if self.result is None:
            return
        tr.write_sep("-", f"warpt: run {self.result.id} (suite {SUITE})")
        for line in _table(self.result.results):
            tr.write_line(line)
        if self.comparison is not None:
            c = self.comparison
            tr.write_sep("-", f"warpt: compared with {c.base} (threshold {c.threshold_pct:g}%)")
            for v in _timed(c.verdicts):
                why = f": {v.reason}" if v.verdict == "inconclusive" and v.reason else ""
                tr.write_line(
                    f"{v.verdict:>12}  {v.change_pct:+7.1f}%  {v.benchmark}  "
                    f"({_time(v.base)} -> {_time(v.current)}){why}",
                    red=v.verdict == "regressed",
                    green=v.verdict == "improved",
                )
            if any(v.verdict == "inconclusive" for v in _timed(c.verdicts)):
                tr.write_line(
                    "warpt: inconclusive verdicts never fail the session; for a verdict, record "
                    "this machine's noise (five or more stored runs, or `warpt noise`) or state "
                    "it with --warpt-assume-noise PCT"
                )
            regressed = _timed(c.regressions)
            if regressed:
                names = ", ".join(v.benchmark for v in regressed)
                tr.write_line(f"warpt: regressed: {names}", red=True, bold=True)


def _labels(given: List[str]) -> Dict[str, str]:
    """``--warpt-label KEY=VALUE`` options as a mapping (warpt checks the
    keys and values: a bad one is its usage error)."""
    out: Dict[str, str] = {}
    for text in given:
        key, sep, value = text.partition("=")
        if not sep:
            raise pytest.UsageError(f"warpt: --warpt-label {text!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def _timed(verdicts: Iterable[Verdict]) -> List[Verdict]:
    """The verdicts on the time per call: what pytest-benchmark measures
    (each result's throughput is the same samples inverted, judged alike)."""
    return [v for v in verdicts if v.metric == "latency_ms"]


def _time(ms: float) -> str:
    """A per-call time given in ms, in the unit that reads best."""
    s = ms / 1e3
    for unit, scale in (("s", 1.0), ("ms", 1e3), ("us", 1e6)):
        if s * scale >= 1.0:
            return f"{s * scale:.4g} {unit}"
    return f"{s * 1e9:.4g} ns"


def _table(results: tuple[Result, ...]) -> List[str]:
    """The summary: one line per test, its median per call with the CI."""
    rows = [("test", "median", "95% CI", "samples", "status")]
    for r in results:
        try:
            m = r.metric("latency_ms")
        except KeyError:
            rows.append((r.benchmark, "", "", "", f"{r.status}: {r.error_message or ''}"))
            continue
        ci = f"{_time(m.stats.ci95_low)} .. {_time(m.stats.ci95_high)}" if m.stats else ""
        n = str(m.stats.n) if m.stats else ""
        status = r.status if not r.quality or r.quality == "good" else f"{r.status} ({r.quality})"
        rows.append((r.benchmark, _time(m.value), ci, n, status))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]

