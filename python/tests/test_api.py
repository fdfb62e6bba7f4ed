"""``import warpt``: runs, history, comparison and errors, against the real
binary and a real SQLite store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import warpt


def tiny(**params: int) -> warpt.Run:
    """The smallest real benchmark: the CPU's FLOP rate for a tenth of a second."""
    return warpt.run(
        suite="micro",
        benchmarks=["cpu_flops"],
        params={"threads": 1, **params},
        duration=0.1,
        progress=False,
    )


def test_a_run_comes_back_typed_and_is_stored(store: Path) -> None:
    run = tiny()
    assert isinstance(run, warpt.Run)
    assert run.suite == "micro" and run.id
    assert run.passed, [r.error_message for r in run.results]
    result = run.result("cpu_flops")
    assert result.status == "passed"
    assert result.validation is not None and result.validation.passed
    assert result.params["threads"] == 1
    gflops = result.metric("gflops", {"precision": "fp64", "threads": "1"})
    assert gflops.unit == "GFLOP/s" and gflops.value > 0
    assert gflops.stats is not None
    assert gflops.stats.ci95_low <= gflops.value <= gflops.stats.ci95_high
    assert gflops.stats.n == len(gflops.stats.samples)
    assert run.manifest["warpt_version"]
    with pytest.raises(KeyError, match="has no metric 'nope'"):
        result.metric("nope")
    page = run._repr_html_()
    assert "micro/cpu_flops" in page and "GFLOP/s" in page

    runs = warpt.history().runs()
    assert [r["id"] for r in runs] == [run.id]
    rows = warpt.history(store).metric("cpu_flops", "gflops", {"precision": "fp64", "threads": "1"})
    assert len(rows) == 1
    assert rows[0]["run_id"] == run.id
    assert rows[0]["value"] == pytest.approx(gflops.value)
    assert rows[0]["tags"]["precision"] == "fp64"
    assert warpt.history(store).run("latest").id == run.id


def test_rows_become_data_frames() -> None:
    rows = warpt.Rows([{"a": 1, "b": "x"}, {"a": 2, "c": 3.5}])
    assert rows.columns() == ["a", "b", "c"]
    pandas = pytest.importorskip("pandas")
    df = rows.to_pandas()
    assert isinstance(df, pandas.DataFrame)
    assert list(df.columns) == ["a", "b", "c"] and len(df) == 2
    polars = pytest.importorskip("polars")
    pl = rows.to_polars()
    assert isinstance(pl, polars.DataFrame)
    assert pl.columns == ["a", "b", "c"] and pl.height == 2


def test_compare_gives_the_verdicts_of_benchmark_compare(store: Path) -> None:
    a = tiny()
    b = tiny()
    c = warpt.compare(a, b, threshold=50)
    assert c.threshold_pct == 50
    assert c.verdicts, c.raw
    assert {v.benchmark for v in c.verdicts} == {"cpu_flops"}
    # Two runs of one machine within a 50% threshold: nothing regressed.
    assert not c.regressed, [(v.metric, v.change_pct, v.verdict) for v in c.verdicts]
    assert all(v.verdict in ("~", "improved", "inconclusive") for v in c.verdicts)
    by_id = warpt.compare(a.id, b.id, threshold=50)
    assert [v.verdict for v in by_id.verdicts] == [v.verdict for v in c.verdicts]
    assert "cpu_flops" in c._repr_html_()
    assert len(c.rows()) == len(c.verdicts)


def test_errors_carry_warpt_s_message_and_exit_status(store: Path) -> None:
    with pytest.raises(warpt.UsageError) as refused:
        warpt.run(suite="no_such_suite", progress=False)
    assert refused.value.exit_status == 2
    assert "no_such_suite" in refused.value.message
    with pytest.raises(warpt.UsageError) as bad:
        tiny(no_such_param=1)
    assert "no_such_param" in bad.value.message
    with pytest.raises(warpt.WarptError) as no_store:
        warpt.history().run("latest")
    assert no_store.value.message.startswith("no store at"), no_store.value.message
    tiny()
    with pytest.raises(warpt.WarptError) as missing:
        warpt.history().run("no-such-run")
    assert missing.value.exit_status != 0
    assert "no-such-run" in missing.value.message
    assert "warpt exit status" in str(missing.value)


def test_the_package_is_typed_for_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    user = tmp_path / "user.py"
    user.write_text(
        "import warpt\n"
        "run: warpt.Run = warpt.run(suite='micro', duration=0.1)\n"
        "value: float = run.results[0].metrics[0].value\n"
        "rows: warpt.Rows = warpt.history().metric('cpu_flops', 'gflops')\n"
        "verdicts = warpt.compare(run, 'latest').regressions\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(user)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import warpt\nx: int = warpt.run(suite='micro')\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(wrong)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "Incompatible types" in done.stdout, done.stdout
