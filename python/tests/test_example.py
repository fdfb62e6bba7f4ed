"""examples/pytest and the GitHub Actions workflow it ships, run for real:
the workflow's `warpt/warpt` step as action.yml's `pytest` step executes
it (GitHub itself stands outside: its expressions are filled in here from
the workflow's inputs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import yaml

import warpt

ROOT = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_example_workflow_measures_a_pull_request_against_its_base(
    tmp_path: Path, store: Path
) -> None:
    workflow = load(ROOT / "examples" / "pytest" / "github-actions.yml")
    uses = [
        s for s in workflow["jobs"]["pytest"]["steps"] if str(s.get("uses", "")).startswith("warpt/")
    ]
    assert len(uses) == 1, workflow
    inputs: Dict[str, str] = uses[0]["with"]
    assert inputs["mode"] == "pytest"
    action = load(ROOT / "action.yml")
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "pytest")
    assert step["if"] == "inputs.mode == 'pytest'"

    # The project on a pull-request branch one commit ahead of `main`.
    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples" / "pytest", project)
    def run(*cmd: str) -> None:
        subprocess.run(cmd, cwd=project, check=True, capture_output=True)

    run("git", "init", "-q", "-b", "main")
    run("git", "add", ".")
    run(*GIT, "commit", "-qm", "base")
    run("git", "checkout", "-q", "-b", "feature")
    (project / "NOTES").write_text("a change that does not matter\n")
    run("git", "add", ".")
    run(*GIT, "commit", "-qm", "head")

    outputs = tmp_path / "github-output"
    outputs.write_text("")
    # The workflow's command, run by this interpreter (where the wheel and
    # pytest are installed), its measurement shortened for the test.
    command = f"{sys.executable} -m {inputs['command']} --benchmark-max-time 0.2"
    env = {
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "HOME": str(tmp_path),
        "WARPT_STORE": str(store),
        "WARPT_NO_PROGRESS": "1",
        "GITHUB_OUTPUT": str(outputs),
        "WARPT_BUILD": "",
        # `origin/${{ github.base_ref }}`: the base branch, here local.
        "WARPT_BASE": inputs["base"].replace("origin/${{ github.base_ref }}", "main"),
        "WARPT_THRESHOLD": inputs["threshold"],
        "WARPT_COMMAND": command,
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    said = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert said == {"status": "0", "regressed": "false"}, done.stdout + done.stderr
    # Every benchmark test measured and written in pytest-benchmark's shape.
    doc = json.loads((project / "warpt-pytest.json").read_text())
    names = sorted(b["name"] for b in doc["benchmarks"])
    assert names == [
        "test_compress",
        "test_counts_counter",
        "test_counts_loop",
        "test_top_fresh_counts",
        "test_words",
    ]
    # The base measured first in a worktree (gone afterwards), then the head.
    runs = warpt.history(store).runs(suite="pytest")
    assert len(runs) == 2, runs
    assert "warpt: measuring main" in done.stderr, done.stderr
    assert "warpt: compared with run" in done.stdout, done.stdout
    worktrees = subprocess.run(
        ["git", "worktree", "list"], cwd=project, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(worktrees) == 1, worktrees
