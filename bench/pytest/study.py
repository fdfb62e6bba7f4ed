"""scripts/bench-harness PARTS=pytest: warpt's pytest plugin against
pytest-benchmark on the same machine, interleaved.

1. Agreement: test_agreement.py (ten tests) run ROUNDS times by each tool,
   alternating which goes first; per test the median over rounds of
   warpt's median / pytest-benchmark's, and whether the two medians'
   95% CIs overlap (order-statistic intervals from each tool's samples).
   Goal: within 5%, or the CIs overlap.
2. The 2x pair (test_sort_twice / test_sort) in warpt's runs: the ratio of
   medians and its interval from the two CIs. Goal: the interval holds 2.0.
3. A 1.5x regression (SLOWER=1.5 makes test_hash do three digests instead
   of two): `--warpt-compare` against the last run must fail naming
   test_hash alone.
4. Overhead per test (test_overhead.py: twenty tests of a ~50 us function
   that times itself): the session's wall time, less the time inside the
   function, less pytest's own start-up (the same file with
   --benchmark-disable), over twenty. Goal: warpt's no more than
   pytest-benchmark's.

A virtual environment under the target directory gets pytest,
pytest-benchmark and NumPy; the plugin is this checkout's python/ (on
PYTHONPATH) driving the release binary (WARPT_BIN).
"""

import json
import math
import os
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
        done, _ = self.pytest(AGREEMENT, "--benchmark-json", str(out), warpt=side == "warpt")
        if done.returncode != 0:
            sys.exit(f"{side} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        doc = json.loads(out.read_text())
        return {b["name"]: (b["stats"]["median"], median_ci(b["stats"]["data"]))
                for b in doc["benchmarks"]}


def agreement(run, rounds):
    per_test = {}
    twice = []
    with tempfile.TemporaryDirectory() as d:
        for r in range(rounds):
            order = ["warpt", "pytest-benchmark"] if r % 2 == 0 else ["pytest-benchmark", "warpt"]
            got = {side: run.measured(side, Path(d) / f"{side}.json") for side in order}
            for name, (w, wci) in got["warpt"].items():
                p, pci = got["pytest-benchmark"][name]
                overlap = wci[0] <= pci[1] and pci[0] <= wci[1]
                per_test.setdefault(name, []).append((w / p, overlap, w, p))
            (s1, ci1), (s2, ci2) = got["warpt"]["test_sort"], got["warpt"]["test_sort_twice"]
            twice.append((s2 / s1, ci2[0] / ci1[1], ci2[1] / ci1[0]))
            print(f"round {r + 1}/{rounds} done ({', '.join(order)})", flush=True)
    print("\n| test | warpt median | pytest-benchmark median | warpt / p-b (median of rounds) "
          "| CIs overlap (rounds) | agrees |")
    print("|---|---:|---:|---:|---:|---|")
    agreed = 0
    for name, rows in per_test.items():
        ratio = statistics.median(r for r, _, _, _ in rows)
        overlaps = sum(1 for _, o, _, _ in rows if o)
        ok = abs(ratio - 1) <= 0.05 or overlaps * 2 > len(rows)
        agreed += ok
        print(f"| {name} | {statistics.median(w for _, _, w, _ in rows) * 1e6:.2f} us "
              f"| {statistics.median(p for _, _, _, p in rows) * 1e6:.2f} us | {ratio:.3f} "
              f"| {overlaps}/{len(rows)} | {'yes' if ok else 'NO'} |")
    print(f"\n{agreed} of {len(per_test)} tests agree (within 5%, or CIs overlapping in most rounds)")
    ratio = statistics.median(t for t, _, _ in twice)
    holds = sum(1 for _, lo, hi in twice if lo <= 2.0 <= hi)
    print(f"2x pair (test_sort_twice / test_sort, warpt): median ratio {ratio:.3f}; "
          f"its interval holds 2.0 in {holds} of {len(twice)} rounds")


def regression(run):
    rows = subprocess.run([str(run.env["WARPT_BIN"]), "results", "list", "--suite", "pytest",
                           "--limit", "1", "--json"], capture_output=True, text=True,
                          env=run.env, check=True)
    base = json.loads(rows.stdout)[0]["id"]
    done, _ = run.pytest(AGREEMENT, "--warpt-compare", base, warpt=True, env={"SLOWER": "1.5"})
    named = [line.split("regressed:", 1)[1].strip() for line in done.stdout.splitlines()
             if line.startswith("warpt: regressed:")]
    print(f"\n1.5x slower test_hash against run {base}: exit {done.returncode} (goal 1), "
          f"regressed: {named[0] if named else 'nothing'} (goal: test_agreement.py::test_hash alone)")


def overhead(run, rounds):
    walls = {"warpt": [], "pytest-benchmark": [], "baseline": []}
    with tempfile.TemporaryDirectory() as d:
        spent_file = Path(d) / "spent.json"
        env = {"SPENT_FILE": str(spent_file)}
        for r in range(rounds):
            order = ["warpt", "pytest-benchmark", "baseline"]
            if r % 2:
                order.reverse()
            for side in order:
                args = ["--benchmark-max-time", "0.2"]
                if side == "baseline":
                    args = ["--benchmark-disable"]
                done, wall = run.pytest(OVERHEAD, *args, warpt=side == "warpt", env=env)
                if done.returncode != 0:
                    sys.exit(f"{side} failed:\n{done.stdout[-3000:]}")
                spent = json.loads(spent_file.read_text())["spent_ns"] / 1e9
                walls[side].append(wall - spent)
    base = statistics.median(walls["baseline"])
    print("\n| overhead per test (20 tests, wall - time in the function - pytest's start-up) "
          "| ms |")
    print("|---|---:|")
    result = {}
    for side in ("pytest-benchmark", "warpt"):
        result[side] = (statistics.median(walls[side]) - base) / 20 * 1e3
        print(f"| {side} | {result[side]:.1f} |")
    print(f"| (pytest's own start-up and collection, s) | {base:.2f} |")
    verdict = "within" if result["warpt"] <= result["pytest-benchmark"] else "ABOVE"
    print(f"\nwarpt's overhead per test is {verdict} pytest-benchmark's")


def main(warpt, target, rounds):
    python = venv(target)
    with tempfile.TemporaryDirectory() as d:
        run = Runner(python, warpt, Path(d) / "results.db")
        agreement(run, rounds)
        regression(run)
        overhead(run, max(3, rounds // 2))
