"""The pytest plugin, run for real: pytest in a subprocess (pytester) with
the installed wheel's plugin, warpt measuring, a real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

import warpt


TESTS = """
import time
import pytest

def work(n):
    return sum(range(n))

def test_sum(benchmark):
    assert benchmark(work, 1000) == sum(range(1000))

@pytest.mark.benchmark(group="sleepy", min_rounds=12)
def test_sleep(benchmark):
    benchmark(time.sleep, 0.001)
    benchmark.extra_info["kind"] = "sleep"

def test_pedantic(benchmark):
    made = []
    def setup():
        made.append(1)
        return (len(made),), {}
    result = benchmark.pedantic(lambda i: i * 2, setup=setup, rounds=7, warmup_rounds=2)
    assert result == 2 * len(made)
    # warpt's own warm-up round, one more, then exactly the seven rounds.
    assert len(made) == 9

def test_plain():
    assert True

@pytest.mark.skip(reason="not today")
def test_skipped(benchmark):
    benchmark(work, 10)

def test_fails_first(benchmark):
    assert False, "broken before measuring"

def test_raises(benchmark):
    benchmark(lambda: 1 / 0)

def test_wrong_after(benchmark):
    assert benchmark(work, 10) == 46
"""

QUICK = ("--benchmark-max-time", "0.1")


def _stored_run(store: Path) -> warpt.Run:
    runs = warpt.history(store).runs(suite="pytest")
    assert len(runs) == 1, list(runs)
    return warpt.history(store).run(str(runs[0]["id"]))


def _check_run(run: warpt.Run, module: str) -> None:
    by_name = {r.benchmark: r for r in run.results}
    # Every test using the fixture, by node id, but the one pytest skips
    # by its marker (never planned).
    assert sorted(by_name) == sorted(
        f"{module}::{t}"
        for t in (
            "test_sum",
            "test_sleep",
            "test_pedantic",
            "test_fails_first",
            "test_raises",
            "test_wrong_after",
        )
    )
    ok = by_name[f"{module}::test_sum"]
    assert ok.status == "passed", ok.error_message
    latency = ok.metric("latency_ms")
    assert latency.stats is not None and latency.stats.n >= 10
    assert latency.stats.ci95_low <= latency.value <= latency.stats.ci95_high
    assert ok.details["test"] == f"{module}::test_sum"
    # The test's code runs in pytest's process, the one that started warpt:
    # its CPU time is the benchmark's, not another process's interference
    # (warpt itself waits on the socket meanwhile).
    spent = ok.raw["interference"]
    assert spent["benchmark_cpu_s"] >= 0.3 * spent["window_s"], spent
    assert int(ok.details["calls_per_sample"]) > 1, "a fast call is timed in batches"

    sleep = by_name[f"{module}::test_sleep"]
    assert sleep.status == "passed", sleep.error_message
    assert sleep.details["group"] == "sleepy"
    assert json.loads(sleep.details["extra_info"]) == {"kind": "sleep"}
    s = sleep.metric("latency_ms").stats
    assert s is not None and s.n >= 12
    # time.sleep(0.001) takes at least a millisecond.
    assert sleep.metric("latency_ms").value >= 1.0

    pedantic = by_name[f"{module}::test_pedantic"]
    assert pedantic.status == "passed", pedantic.error_message
    p = pedantic.metric("latency_ms").stats
    assert p is not None and p.n == 7
    assert pedantic.details["calls_per_sample"] == 1

    first = by_name[f"{module}::test_fails_first"]
    assert first.status == "failed"
    assert "failed before calling benchmark()" in (first.error_message or "")
    raises = by_name[f"{module}::test_raises"]
    assert raises.status == "failed"
    assert "ZeroDivisionError" in (raises.error_message or "")
    wrong = by_name[f"{module}::test_wrong_after"]
    assert wrong.status == "failed"
    assert wrong.validation is not None and not wrong.validation.passed
    assert "AssertionError" in wrong.validation.message or "assert" in wrong.validation.message


def test_the_fixture_is_measured_by_warpt_and_stored(
    pytester: pytest.Pytester, store: Path
) -> None:
    pytester.makepyfile(test_bench=TESTS)
    out = pytester.path / "bench.json"
    result = pytester.runpytest_subprocess("--warpt", *QUICK, "--benchmark-json", str(out))
    result.assert_outcomes(passed=4, failed=3, skipped=1)
    result.stdout.fnmatch_lines(["*warpt: tests using `benchmark` are measured by warpt*"])
    result.stdout.fnmatch_lines(["*warpt: run * (suite pytest)*", "*test_bench.py::test_sum*"])
    run = _stored_run(store)
    _check_run(run, "test_bench.py")

    # --benchmark-json: pytest-benchmark's shape, the passing tests only.
    doc: Dict[str, Any] = json.loads(out.read_text())
    assert {"machine_info", "commit_info", "benchmarks", "datetime", "version"} <= set(doc)
    names = {b["fullname"] for b in doc["benchmarks"]}
    assert "test_bench.py::test_sum" in names and "test_bench.py::test_raises" not in names
    sleep = next(b for b in doc["benchmarks"] if b["name"] == "test_sleep")
    assert sleep["group"] == "sleepy" and sleep["extra_info"] == {"kind": "sleep"}
    stats = sleep["stats"]
    for key in ("min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3", "ops", "data"):
        assert key in stats, key
    assert stats["rounds"] == len(stats["data"]) >= 12
    assert stats["min"] <= stats["median"] <= stats["max"]
    assert stats["median"] >= 0.001  # seconds per call


def test_without_warpt_nothing_changes(pytester: pytest.Pytester, store: Path) -> None:
    pytester.makepyfile(test_one="def test_sum(benchmark):\n    benchmark(sum, range(10))\n")
    # Without pytest-benchmark (blocked) and without --warpt, no plugin
    # offers the fixture: the test errors as it would without warpt.
    result = pytester.runpytest_subprocess("-p", "no:benchmark")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'benchmark' not found*"])
    assert not store.exists() or len(warpt.history(store).runs()) == 0


def test_dash_p_warpt_turns_it_on_with_its_own_options(
    pytester: pytest.Pytester, store: Path
) -> None:
    pytester.makepyfile(
        test_one="def test_sum(benchmark):\n    benchmark(sum, range(10))\n\n"
        "def test_other():\n    pass\n"
    )
    # pytest-benchmark blocked: these --benchmark-* options are warpt's own.
    result = pytester.runpytest_subprocess(
        "-p", "no:benchmark", "-p", "warpt", *QUICK, "--benchmark-only",
        "--warpt-label", "branch=main", "--warpt-description", "nightly",
    )
    result.assert_outcomes(passed=1, skipped=1)
    assert [r.benchmark for r in _stored_run(store).results] == ["test_one.py::test_sum"]
    # The labels and description are the run's, and find it.
    labelled = warpt.history(store).runs(labels={"branch": "main"})
    assert len(labelled) == 1
    assert labelled[0]["labels"] == {"branch": "main"} and labelled[0]["description"] == "nightly"
    assert len(warpt.history(store).runs(labels={"branch": "dev"})) == 0
    result = pytester.runpytest_subprocess("-p", "no:benchmark", "--warpt", "--benchmark-skip")
    result.assert_outcomes(passed=1, skipped=1)
    assert len(warpt.history(store).runs(suite="pytest")) == 1, "nothing measured, nothing stored"


def test_with_pytest_benchmark_installed_the_header_says_who_owns_the_fixture(
    pytester: pytest.Pytester, store: Path
) -> None:
    pytest.importorskip("pytest_benchmark")
    pytester.makepyfile(test_one="def test_sum(benchmark):\n    benchmark(sum, range(10))\n")
    result = pytester.runpytest_subprocess("--warpt", *QUICK)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*warpt owns the `benchmark` fixture in this run*"])
    assert len(warpt.history(store).runs(suite="pytest")) == 1
    # Without --warpt, pytest-benchmark measures and warpt records nothing.
    result = pytester.runpytest_subprocess(*QUICK)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*benchmark: 1 tests*"])
    assert len(warpt.history(store).runs(suite="pytest")) == 1


SLOWABLE = """
import os, time

def test_steady(benchmark):
    benchmark(time.sleep, 0.002)

def test_slowed(benchmark):
    benchmark(time.sleep, 0.002 * float(os.environ.get("SLOWER", "1")))

def test_other(benchmark):
    benchmark(time.sleep, 0.001)
"""


def test_compare_fails_on_the_regressed_test_alone(
    pytester: pytest.Pytester, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_slow=SLOWABLE)
    args = ("--warpt", "--benchmark-max-time", "0.3")
    first = pytester.runpytest_subprocess(*args)
    first.assert_outcomes(passed=3)
    base = str(warpt.history(store).runs(suite="pytest")[0]["id"])

    monkeypatch.setenv("SLOWER", "1.5")
    # One stored run and no noise profile: warpt cannot tell a change from
    # this machine's run-to-run noise, so nothing fails.
    unknown_noise = pytester.runpytest_subprocess(*args, "--warpt-compare", base)
    assert unknown_noise.ret == pytest.ExitCode.OK, unknown_noise.stdout.str()
    unknown_noise.stdout.fnmatch_lines(["*inconclusive*test_slowed*", "*--warpt-assume-noise*"])
    # On a busy VM the brief clock probe can read the two runs' clocks 10-20%
    # apart: the comparison then widens its band by that and calls even
    # +48% inconclusive ("regime: ..."), as `benchmark compare` would. A
    # user reruns; so does this test, up to three times, only for that.
    for _ in range(3):
        second = pytester.runpytest_subprocess(
            *args, "--warpt-compare", base, "--warpt-threshold", "10", "--warpt-assume-noise", "2"
        )
        regime = any(
            "test_slowed  (" in line and "inconclusive" in line and "regime:" in line
            for line in second.stdout.lines
        )
        if not regime:
            break
    assert second.ret == pytest.ExitCode.TESTS_FAILED, second.stdout.str()
    second.stdout.fnmatch_lines([f"*compared with*{base}*", "*warpt: regressed: test_slow.py::test_slowed"])
    regressed = [line for line in second.stdout.lines if line.strip().startswith("regressed")]
    assert len(regressed) == 1 and "test_slowed" in regressed[0], regressed

    slowed = str(warpt.history(store).runs(suite="pytest")[0]["id"])
    monkeypatch.setenv("SLOWER", "1")
    # `latest`: the last stored run (the slowed one), which this one beats:
    # improved, or (when the host's effective clock moved between the two
    # runs, as it does on a busy VM) inconclusive saying so; never a failure.
    third = pytester.runpytest_subprocess(
        *args, "--warpt-compare", "latest", "--warpt-threshold", "10", "--warpt-assume-noise", "2"
    )
    assert third.ret == pytest.ExitCode.OK, third.stdout.str()
    third.stdout.fnmatch_lines([f"*compared with*{slowed}*"])
    verdict = next(line for line in third.stdout.lines if "test_slowed  (" in line)
    assert "improved" in verdict or (
        "inconclusive" in verdict and " -" in verdict and "effective clock" in verdict
    ), verdict

    unknown = pytester.runpytest_subprocess(*args, "--warpt-compare", "no-such-run")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*--warpt-compare no-such-run*"])


def test_compare_with_a_git_ref_measures_it_in_a_worktree(
    pytester: pytest.Pytester, store: Path
) -> None:
    pytester.makepyfile(test_slow=SLOWABLE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for cmd in (["git", "init", "-q"], ["git", "add", "."], [*git, "commit", "-qm", "base"]):
        assert pytester.run(*cmd).ret == 0
    # The working tree makes test_slowed 1.5x slower than the committed HEAD.
    (pytester.path / "test_slow.py").write_text(
        SLOWABLE.replace('float(os.environ.get("SLOWER", "1"))', "1.5")
    )
    # One run a side: where the host's clock differed between the two runs
    # (a regime the probes name), the answer is, by design, inconclusive
    # for that regime; that alone earns another attempt, anything but the
    # regression fails.
    for attempt in range(1, 4):
        result = pytester.runpytest_subprocess(
            "--warpt",
            "--benchmark-max-time",
            "0.3",
            "--warpt-compare",
            "HEAD",
            "--warpt-threshold",
            "10",
            "--warpt-assume-noise",
            "2",
        )
        out = result.stdout.str()
        regime = any(
            "inconclusive" in line and "::test_slowed" in line and "regime:" in line
            for line in out.splitlines()
        )
        if result.ret == pytest.ExitCode.OK and regime and attempt < 3:
            continue
        break
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*warpt: regressed: test_slow.py::test_slowed"])
    runs = warpt.history(store).runs(suite="pytest")
    assert len(runs) == 2 * attempt, "the base's run and the head's, each attempt"
    worktrees = pytester.run("git", "worktree", "list").stdout.lines
    assert len(worktrees) == 1, worktrees
