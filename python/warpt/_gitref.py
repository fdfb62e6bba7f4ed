"""``--warpt-compare REF`` where REF is a git ref: the same pytest command
run first on REF, checked out as a detached worktree (as ``warpt ci pr``
checks out its sides: the user's tree, index and branches untouched), its
run recorded in the same store, then compared with."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence

from warpt._errors import UsageError

#: Options of the head's command line that the base's run must not repeat:
#: what it compares with, and the files it writes.
DROPPED = ("--warpt-compare", "--benchmark-json", "--junitxml", "--junit-xml")


def _git(repo: Path, *args: str) -> Optional[str]:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit_of(repo: Path, ref: str) -> Optional[str]:
    """The commit ``ref`` names in the repository holding ``repo``, if it
    names one."""
    if ref.startswith("-"):
        return None
    return _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")


def base_args(args: Sequence[str]) -> List[str]:
    """The head's pytest arguments without :data:`DROPPED` options."""
    out: List[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in DROPPED:
            skip = True
            continue
        if any(arg.startswith(f"{name}=") for name in DROPPED):
            continue
        out.append(arg)
    return out


def run_at(ref: str, commit: str, rootdir: Path, invocation_dir: Path, args: Sequence[str]) -> None:
    """Runs ``pytest ARGS --warpt`` on ``commit`` in a temporary worktree,
    from the directory matching ``invocation_dir``; its run goes to the
    store the environment names. A run that could not measure is a
    :class:`UsageError` with pytest's last lines."""
    top = _git(rootdir, "rev-parse", "--show-toplevel")
    if top is None:
        raise UsageError(f"--warpt-compare {ref}: {rootdir} is not in a git repository", 2)
    toplevel = Path(top)
    with tempfile.TemporaryDirectory(prefix="warpt-pytest-base-") as tmp:
        checkout = Path(tmp) / "checkout"
        if _git(toplevel, "worktree", "add", "--detach", str(checkout), commit) is None:
            raise UsageError(f"--warpt-compare {ref}: git could not check out {commit}", 2)
        try:
            try:
                here = invocation_dir.resolve().relative_to(toplevel.resolve())
            except ValueError:
                here = Path(".")
            sys.stderr.write(f"warpt: measuring {ref} ({commit[:12]}) in a worktree first\n")
            done = subprocess.run(
                [sys.executable, "-m", "pytest", *base_args(args), "--warpt", "-p", "no:cacheprovider"],
                cwd=checkout / here,
                capture_output=True,
                text=True,
                check=False,
                env=dict(os.environ),
            )
            if done.returncode not in (0, 1):
                tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
                raise UsageError(
                    f"--warpt-compare {ref}: pytest on {commit[:12]} exited {done.returncode}:\n{tail}",
                    2,
                )
        finally:
            _git(toplevel, "worktree", "remove", "--force", str(checkout))
