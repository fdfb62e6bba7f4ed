"""Finding the ``warpt`` executable and running it.

Everything the package does goes through the binary the wheel installs
beside it: the Python side parses and prints, the measuring, storing and
comparing stay in one place (docs/python.md says why).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Sequence

from warpt._errors import WarptError, error_for

#: The variable that names a ``warpt`` executable to use instead of the
#: wheel's (a development build, say).
BIN_VARIABLE = "WARPT_BIN"


def executable() -> str:
    """The ``warpt`` executable: ``$WARPT_BIN``, else the one installed
    beside this package (the wheel's), else the first on ``PATH``."""
    named = os.environ.get(BIN_VARIABLE)
    if named:
        if not os.access(named, os.X_OK):
            raise WarptError(f"{BIN_VARIABLE}={named} is not an executable file", 2)
        return named
    scripts = Path(sysconfig.get_path("scripts")) / ("warpt.exe" if os.name == "nt" else "warpt")
    if scripts.is_file():
        return str(scripts)
    found = shutil.which("warpt")
    if found:
        return found
    raise WarptError(
        "no warpt executable: install the warpt wheel (pip install warpt), put warpt on PATH, "
        f"or set {BIN_VARIABLE}",
        2,
    )


def _message(stderr: str) -> str:
    """What warpt said went wrong: its `error:` lines, else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    if errors:
        return "\n".join(e[len("error:") :].strip() if e.startswith("error:") else e for e in errors)
    return lines[-1] if lines else "warpt failed without a message"


def invoke(
    args: Sequence[str], *, ok: Sequence[int] = (0,), stdin: str | None = None
) -> tuple[int, str]:
    """Runs ``warpt ARGS``: its exit status and stdout. A status outside
    ``ok`` raises :class:`WarptError` with warpt's message and status.
    warpt's progress lines (stderr) are kept for the error only."""
    proc = subprocess.run(
        [executable(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in ok:
        raise error_for(_message(proc.stderr), proc.returncode, stderr=proc.stderr)
    return proc.returncode, proc.stdout


def call(args: Sequence[str], *, ok: Sequence[int] = (0,), stdin: str | None = None) -> str:
    """:func:`invoke`'s stdout."""
    return invoke(args, ok=ok, stdin=stdin)[1]


def call_streaming(args: Sequence[str], *, ok: Sequence[int] = (0,)) -> int:
    """Runs ``warpt ARGS`` with its progress shown live on this process's
    stderr (a long run in a notebook or a terminal); returns the exit
    status, raising :class:`WarptError` outside ``ok``. Only the tail of
    stderr is kept, for the error."""
    proc = subprocess.Popen(
        [executable(), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    tail: list[str] = []
    assert proc.stderr is not None  # asked for above
    for line in proc.stderr:
        sys.stderr.write(line)
        tail.append(line)
        del tail[:-50]
    status = proc.wait()
    if status not in ok:
        text = "".join(tail)
        raise error_for(_message(text), status, stderr=text)
    return status
