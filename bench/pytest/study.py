"""scripts/bench-harness PARTS=pytest: warpt's pytest plugin against
pytest-benchmark on the same machine, interleaved.

1. Agreement: test_agreement.py (ten tests) run ROUNDS times by each tool,
   alternating which goes first; per test the median over rounds of
   warpt's median / pytest-benchmark's, and whether the two medians'
   95% CIs overlap (order-statistic intervals from each tool's samples).
   Goal: within 5%, or the CIs overlap. A control session of
   pytest-benchmark on warpt's opposite side each round, judged the same
   way against pytest-benchmark, gives the host's noise floor: on a host
   whose speed drifts between sessions, what no tool could do better.
2. The 2x pair (test_sort_twice / test_sort) in warpt's runs: the ratio of
   medians in each round, and the 95% CI of its median over the rounds.
   Goal: that CI holds 2.0. (Each round's interval from the two medians'
   own CIs is printed too: it says how well each median is known at its
   moment, not how far two moments of the machine drift apart.)
3. A 1.5x regression (SLOWER=1.5 makes test_hash do three digests instead
   of two): `--warpt-compare` against the last run must fail naming
   test_hash alone, in each of TRIALS sessions (each against the same
   stored runs).
4. Overhead (test_overhead.py: sessions of 25 tests of a ~1 ms function
   that times itself; conftest.py records each test's wall time, setup to
   report, and the time inside the function): per test, its wall less the
   calls (the time inside the function, and each call's cost beyond it
   measured in a plain loop), the median over a session's tests after the
   first, less the same for pytest alone (--benchmark-disable). Each round
   gives a per-test figure per tool; the table shows their median and its
   95% CI. Goal: warpt's per test no more than pytest-benchmark's. (Until
   2026-12-04 the figure was the growth of whole sessions' overhead from 5
   to 25 tests: two walls' difference, whose noise dwarfed a few ms a
   test.)

A virtual environment under the target directory gets pytest,
pytest-benchmark and NumPy; the plugin is this checkout's python/ (on
PYTHONPATH) driving the release binary (WARPT_BIN).
"""

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
AGREEMENT = HERE / "test_agreement.py"
OVERHEAD = HERE / "test_overhead.py"


def venv(target):
    path = target / "bench-venv" / "pytest"
    python = path / "bin" / "python"
    probe = [str(python), "-c", "import pytest, pytest_benchmark, numpy"]
    if not python.exists() or subprocess.run(probe, capture_output=True).returncode != 0:
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "pytest",
                        "pytest-benchmark", "numpy"], check=True)
    return python


def median_ci(data):
    """The distribution-free 95% CI of the median (normal approximation to
    the binomial order statistics; [min, max] below 6 samples)."""
    xs = sorted(data)
    n = len(xs)
    if n < 6:
        return xs[0], xs[-1]
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half))
    return xs[lo], xs[hi]


class Runner:
    def __init__(self, python, warpt, store):
        self.python = python
        self.env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), WARPT_BIN=str(warpt),
                        WARPT_STORE=str(store), WARPT_NO_PROGRESS="1")

    def pytest(self, file, *args, warpt=False, env=None):
        cmd = [str(self.python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(file), *args]
        if warpt:
            cmd += ["-p", "warpt.pytest_plugin", "--warpt"]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE,
                              env=dict(self.env, **(env or {})))
        return done, time.perf_counter() - t0

    def measured(self, side, out):
        # "control": pytest-benchmark again.
        done, _ = self.pytest(AGREEMENT, "--benchmark-json", str(out), warpt=side == "warpt")
        if done.returncode != 0:
            sys.exit(f"{side} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        doc = json.loads(out.read_text())
        return {b["name"]: (b["stats"]["median"], median_ci(b["stats"]["data"]))
                for b in doc["benchmarks"]}


def _agrees(rows):
    """The per-test verdict over rounds of (ratio, CIs overlap) rows: the
    median ratio, the rounds whose CIs overlap, and whether it agrees."""
    ratio = statistics.median(r for r, _ in rows)
    overlaps = sum(1 for _, o in rows if o)
    return ratio, overlaps, abs(ratio - 1) <= 0.05 or overlaps * 2 > len(rows)


def _pair(a, b):
    """(a's median / b's, whether their CIs overlap)."""
    (ma, ca), (mb, cb) = a, b
    return ma / mb, ca[0] <= cb[1] and cb[0] <= ca[1]


def agreement(run, rounds):
    """Each round runs the file under warpt, pytest-benchmark, and
    pytest-benchmark again (the control), warpt and the control on either
    side of pytest-benchmark, alternating ends: the control's agreement with
    pytest-benchmark is the host's noise floor for the same schedule."""
    per_test = {}
    twice = []
    with tempfile.TemporaryDirectory() as d:
        for r in range(rounds):
            order = ["warpt", "pytest-benchmark", "control"]
            if r % 2:
                order.reverse()
            got = {side: run.measured(side, Path(d) / f"{side}.json") for side in order}
            for name, pb in got["pytest-benchmark"].items():
                w, c = got["warpt"][name], got["control"][name]
                per_test.setdefault(name, []).append((_pair(w, pb), _pair(c, pb), w[0], pb[0]))
            (s1, ci1), (s2, ci2) = got["warpt"]["test_sort"], got["warpt"]["test_sort_twice"]
            twice.append((s2 / s1, ci2[0] / ci1[1], ci2[1] / ci1[0]))
            print(f"round {r + 1}/{rounds} done ({', '.join(order)})", flush=True)
    print("\n| test | warpt median | pytest-benchmark median | warpt / p-b (median of rounds) "
          "| CIs overlap (rounds) | agrees | control: p-b again / p-b | CIs overlap | agrees |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---|")
    agreed = controlled = 0
    for name, rows in per_test.items():
        ratio, overlaps, ok = _agrees([w for w, _, _, _ in rows])
        cratio, coverlaps, cok = _agrees([c for _, c, _, _ in rows])
        agreed += ok
        controlled += cok
        print(f"| {name} | {statistics.median(w for _, _, w, _ in rows) * 1e6:.2f} us "
              f"| {statistics.median(p for _, _, _, p in rows) * 1e6:.2f} us | {ratio:.3f} "
              f"| {overlaps}/{len(rows)} | {'yes' if ok else 'NO'} "
              f"| {cratio:.3f} | {coverlaps}/{len(rows)} | {'yes' if cok else 'NO'} |")
    print(f"\n{agreed} of {len(per_test)} tests agree (within 5%, or CIs overlapping in most "
          f"rounds); pytest-benchmark against itself on the same schedule (the host's noise "
          f"floor): {controlled} of {len(per_test)}")
    ratios = [t for t, _, _ in twice]
    ratio = statistics.median(ratios)
    lo, hi = median_ci(ratios)
    holds = sum(1 for _, lo1, hi1 in twice if lo1 <= 2.0 <= hi1)
    called = "yes" if lo <= 2.0 <= hi else "NO"
    print(f"2x pair (test_sort_twice / test_sort, warpt): median ratio {ratio:.3f}, "
          f"95% CI over the rounds [{lo:.3f}, {hi:.3f}]: called 2x: {called} "
          f"(within one session the two medians' CIs hold 2.0 in {holds} of {len(twice)} rounds)")


#: Slowed sessions of the regression check, each against the same stored
#: base and the same noise history (a copy of the store apiece, so no trial
#: sees another's slowed run).
TRIALS = 3


def regression(run):
    rows = subprocess.run([str(run.env["WARPT_BIN"]), "results", "list", "--suite", "pytest",
                           "--limit", "1", "--json"], capture_output=True, text=True,
                          env=run.env, check=True)
    base = json.loads(rows.stdout)[0]["id"]
    print(f"\n1.5x slower test_hash against run {base} (goal: exit 1 naming "
          "test_agreement.py::test_hash alone):")
    alone = 0
    for t in range(TRIALS):
        with tempfile.TemporaryDirectory() as d:
            store = Path(d) / "results.db"
            shutil.copy(run.env["WARPT_STORE"], store)
            done, _ = run.pytest(AGREEMENT, "--warpt-compare", base, warpt=True,
                                 env={"SLOWER": "1.5", "WARPT_STORE": str(store)})
        named = [line.split("regressed:", 1)[1].strip() for line in done.stdout.splitlines()
                 if line.startswith("warpt: regressed:")]
        # The verdict table's lines that are not `~` (within the noise).
        verdicts = [line.strip() for line in done.stdout.splitlines()
                    if "test_agreement.py::" in line and "(" in line and "->" in line
                    and not line.strip().startswith("~")]
        ok = done.returncode == 1 and named == ["bench/pytest/test_agreement.py::test_hash"]
        alone += ok
        print(f"- trial {t + 1}: exit {done.returncode}, regressed: "
              f"{named[0] if named else 'nothing'}")
        for line in verdicts:
            print(f"    {line}")
    print(f"test_hash named alone in {alone} of {TRIALS} trials")


#: Tests in each session of the overhead study.
TESTS = 25


def overhead(run, rounds):
    """Each test's non-function time (its wall time, setup to report, less
    the calls: the time inside the function, and what each call costs
    beyond it in a plain loop; conftest.py records them), for each tool and
    for pytest alone (--benchmark-disable). A session's figure per test is
    the median over its tests after the first, less pytest's own; per
    session, what the session took beyond its tests plus the first test's
    excess (warpt's start-up: reading the machine and the 0.2 s probe of
    other processes' CPU time)."""
    sides = ("warpt", "pytest-benchmark", "baseline")
    per_test = {side: [] for side in sides}
    per_session = {side: [] for side in sides}
    probe = ("import statistics, test_overhead as t; "
             "print(statistics.median(t.outside_ns_per_call() for _ in range(5)))")
    per_call_ns = float(subprocess.run([str(run.python), "-c", probe], cwd=HERE, check=True,
                                       capture_output=True, text=True).stdout)
    with tempfile.TemporaryDirectory() as d:
        spent_file, rows_file = Path(d) / "spent.json", Path(d) / "rows.json"
        for r in range(rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                args = ["--benchmark-max-time", "0.2"]
                if side == "baseline":
                    args = ["--benchmark-disable"]
                env = {"SPENT_FILE": str(spent_file), "OVERHEAD_TESTS": str(TESTS),
                       "PER_TEST_FILE": str(rows_file)}
                done, wall = run.pytest(OVERHEAD, *args, warpt=side == "warpt", env=env)
                if done.returncode != 0:
                    sys.exit(f"{side} failed:\n{done.stdout[-3000:]}")
                rows = json.loads(rows_file.read_text())
                over = [(row["wall_ns"] - row["spent_ns"] - row["calls"] * per_call_ns) / 1e6
                        for row in rows]
                typical = statistics.median(over[1:])
                per_test[side].append(typical)
                tests_s = sum(row["wall_ns"] for row in rows) / 1e9
                per_session[side].append(wall - tests_s + (over[0] - typical) / 1e3)
    print(f"\n| overhead ({rounds} rounds of {TESTS}-test sessions; each test's wall less its calls "
          f"(each {per_call_ns:.0f} ns beyond its timed region), median over the tests after the "
          "first, less pytest's own) | per test, ms (median of rounds) | 95% CI | per session, s |")
    print("|---|---:|---:|---:|")
    figure = {}
    for side in ("pytest-benchmark", "warpt"):
        diffs = [t - b for t, b in zip(per_test[side], per_test["baseline"])]
        figure[side] = statistics.median(diffs)
        lo, hi = median_ci(diffs)
        session = statistics.median(
            s - b for s, b in zip(per_session[side], per_session["baseline"]))
        print(f"| {side} | {figure[side]:.2f} | [{lo:.2f}, {hi:.2f}] | {session:.2f} |")
    print(f"| (pytest alone: per test, ms; per session, s) | "
          f"{statistics.median(per_test['baseline']):.2f} | "
          f"| {statistics.median(per_session['baseline']):.2f} |")
    verdict = "within" if figure["warpt"] <= figure["pytest-benchmark"] else "ABOVE"
    print(f"\nwarpt's overhead per test is {verdict} pytest-benchmark's")


def main(warpt, target, rounds):
    python = venv(target)
    with tempfile.TemporaryDirectory() as d:
        run = Runner(python, warpt, Path(d) / "results.db")
        agreement(run, rounds)
        regression(run)
        overhead(run, rounds)
