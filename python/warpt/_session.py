"""One pytest session measured by warpt: a single ``warpt benchmark run``
of suite ``pytest`` (one benchmark per test, named by its node id) whose
benchmarks connect back to this process over a Unix socket and time the
test's function through the protocol. Measurement, statistics, the store
and the export are warpt's run path, unchanged."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

from warpt import _binary
from warpt._adapter import Connection, Target, complete, decline, measure, release_shared
from warpt._errors import WarptError
from warpt._results import Run

#: The suite pytest's tests are recorded under.
SUITE = "pytest"

#: How long to wait for warpt to come for a test before giving up on it.
CONNECT_TIMEOUT_S = 600.0


class WarptRun:
    """The warpt process behind a pytest session, and its socket."""

    def __init__(
        self,
        nodeids: List[str],
        *,
        store: Optional[str],
        duration: Optional[float],
        seed: Optional[int],
        labels: Optional[Dict[str, str]] = None,
        description: Optional[str] = None,
    ) -> None:
        self.nodeids = nodeids
        self.pending = list(nodeids)
        #: Tests measured whose connection awaits the test's end.
        self._open: Dict[str, Tuple[Connection, Dict[str, Any]]] = {}
        self._dir = tempfile.TemporaryDirectory(prefix="warpt-pytest-")
        os.chmod(self._dir.name, 0o700)
        self.socket_path = os.path.join(self._dir.name, "adapter.sock")
        self.export_path = os.path.join(self._dir.name, "run.json")
        self.log_path = os.path.join(self._dir.name, "warpt.log")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.socket_path)
        self._listener.listen(1)
        body: Dict[str, Any] = {
            "suite": SUITE,
            "benchmarks": nodeids,
            "in_process": True,
        }
        if duration is not None:
            body["duration"] = duration
        if seed is not None:
            body["seed"] = seed
        if labels:
            body["labels"] = labels
        if description is not None:
            body["description"] = description
        request = os.path.join(self._dir.name, "request.json")
        with open(request, "w", encoding="utf-8") as f:
            json.dump(body, f)
        args = [
            _binary.executable(),
            "benchmark",
            "run",
            "--request",
            request,
            "--export-file",
            self.export_path,
        ]
        if store is not None:
            args += ["--store", store]
        self._log = open(self.log_path, "w", encoding="utf-8")
        # The socket is no parameter of the results (a test's results from
        # two sessions have the same parameters, so they share a noise
        # history): warpt reads it from the environment.
        env = dict(os.environ, WARPT_PYTEST_SOCKET=self.socket_path)
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=env
        )

    def _accept(self, nodeid: str) -> Connection:
        """The connection warpt opens for ``nodeid``'s benchmark."""
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while True:
            ready, _, _ = select.select([self._listener], [], [], 0.2)
            if ready:
                conn, _ = self._listener.accept()
                return Connection(conn)
            if self.process.poll() is not None:
                raise WarptError(
                    f"warpt exited before measuring {nodeid}: {self.log_tail()}",
                    self.process.returncode or 1,
                )
            if time.monotonic() > deadline:
                raise WarptError(f"warpt did not come for {nodeid} in {CONNECT_TIMEOUT_S:.0f} s", 1)

    def exited(self) -> bool:
        """Whether warpt has ended (interrupted, or failed)."""
        return self.process.poll() is not None

    def _take(self, nodeid: str) -> bool:
        if nodeid not in self.pending:
            return False
        # Tests warpt planned but pytest passed over (deselected after
        # collection) are declined in order, so warpt's plan and pytest's
        # run stay in step.
        while self.pending and self.pending[0] != nodeid:
            skipped = self.pending.pop(0)
            decline(self._accept(skipped), skipped, "not run by pytest", skipped=True)
        self.pending.pop(0)
        return True

    def measure(self, nodeid: str, config: Dict[str, Any], target: Target) -> bool:
        """Lets warpt measure ``target`` as the test ``nodeid``; ``False``
        when warpt has no benchmark of that test (not planned). The rest
        waits for :meth:`complete`."""
        if not self._take(nodeid):
            return False
        conn = self._accept(nodeid)
        pending = measure(conn, nodeid, config, target)
        if pending is not None:
            self._open[nodeid] = (conn, pending)
        return True

    def complete(self, nodeid: str, problem: Optional[str], details: Dict[str, Any]) -> None:
        """The test ``nodeid`` has finished: ``problem`` is its failure
        after measuring, if any; ``details`` go into its result."""
        opened = self._open.pop(nodeid, None)
        if opened is not None:
            complete(opened[0], opened[1], problem, details)

    def decline(self, nodeid: str, reason: str, *, skipped: bool) -> None:
        """Tells warpt that ``nodeid`` will not be measured, and why."""
        if self._take(nodeid):
            decline(self._accept(nodeid), nodeid, reason, skipped=skipped)

    def finish(self, reason: str) -> Run:
        """Declines what is left, waits for warpt to record and export the
        run, and returns it."""
        try:
            for nodeid in list(self._open):
                self.complete(nodeid, reason, {})
            # An interrupted warpt stops planning: nobody comes for the rest.
            while self.pending and not self.exited():
                try:
                    self.decline(self.pending[0], reason, skipped=True)
                except WarptError:
                    break
            status = self.process.wait()
        finally:
            self._listener.close()
            self._log.close()
        if not os.path.exists(self.export_path):
            raise WarptError(f"warpt wrote no results: {self.log_tail()}", status or 1)
        with open(self.export_path, encoding="utf-8") as f:
            return Run.from_json(json.load(f))

    def log(self) -> str:
        """What warpt printed."""
        try:
            with open(self.log_path, encoding="utf-8") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, lines: int = 12) -> str:
        """The end of what warpt printed."""
        return "\n".join(self.log().splitlines()[-lines:])

    def cleanup(self) -> None:
        """Unmaps the shared file and removes the temporary directory."""
        release_shared()
        self._dir.cleanup()
