"""The Python package's tests: run by scripts/test against the wheel it
builds, installed in a virtual environment with pytest (and pytest-benchmark,
pandas and polars, which the package never requires)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh store for the test, as WARPT_STORE (what every warpt
    command and the plugin's runs use)."""
    path = tmp_path / "results.db"
    monkeypatch.setenv("WARPT_STORE", str(path))
    monkeypatch.setenv("WARPT_NO_PROGRESS", "1")
    return path
