"""The benchmark protocol's adapter side (docs/protocol.md), served by the
pytest process over a Unix socket that warpt's ``pytest`` benchmarks
connect to: warpt decides how many calls to time and when to stop; this
side only calls the test's function and times exactly what it is asked.

One connection is one benchmark: ``load`` names the test (its node id),
``run`` times batches of calls while the test waits in ``benchmark()``
(:func:`measure`); ``output``, ``validate``, ``teardown`` and ``exit`` are
answered once the test has finished (:func:`complete`), so its assertions
after the call are the result's validation and its ``extra_info`` is
final.
"""

from __future__ import annotations

import json
import mmap
import socket
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple


@dataclass
class Target:
    """What one test measures: ``fn(*args, **kwargs)``, or with pedantic's
    ``setup`` the arguments ``setup()`` returns before every round."""

    fn: Callable[..., Any]
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = field(default_factory=dict)
    setup: Optional[Callable[[], Any]] = None
    #: The last call's return value (``benchmark()`` returns it).
    result: Any = None
    #: Whether ``fn`` was called at all.
    called: bool = False
    #: The exception ``fn`` (or ``setup``) raised, re-raised in the test.
    error: Optional[BaseException] = None

    def _arguments(self) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
        if self.setup is None:
            return self.args, self.kwargs
        made = self.setup()
        if made is None:
            return self.args, self.kwargs
        if not (isinstance(made, tuple) and len(made) == 2):
            raise TypeError("pedantic setup must return None or a tuple (args, kwargs)")
        args, kwargs = made
        return tuple(args), dict(kwargs)

    def time(self, calls: int, batches: int = 1) -> Tuple[List[int], int]:
        """Times ``batches`` batches of ``calls`` calls, back to back: a
        sample per batch, or one per call when a pedantic ``setup`` must
        run (untimed) before each."""
        clock = time.perf_counter_ns
        fn = self.fn
        if self.setup is not None:
            samples = []
            for _ in range(calls):
                args, kwargs = self._arguments()
                start = clock()
                self.result = fn(*args, **kwargs)
                samples.append(clock() - start)
                self.called = True
            return samples, 1
        args, kwargs = self.args, self.kwargs
        result = None
        samples = []
        for _ in range(max(1, batches)):
            start = clock()
            for _ in range(calls):
                result = fn(*args, **kwargs)
            samples.append(clock() - start)
        self.result, self.called = result, True
        return samples, calls


#: Words before the samples in a shared file (docs/protocol.md): the
#: limit warpt writes, the count of samples taken, two reserved.
_HEADER = 4


def _time_shared(target: "Target", calls: int, path: str) -> Tuple[List[int], int]:
    """Times batches of ``calls`` calls back to back, writing each sample
    to the file warpt maps at ``path`` (docs/protocol.md, ``shared``) and
    going on while they number fewer than the limit warpt keeps there:
    no system call between batches, where a reply after each few costs
    tens of microseconds on a virtual machine."""
    with open(path, "r+b") as f:
        mapped = mmap.mmap(f.fileno(), 0)
    words = memoryview(mapped).cast("Q")
    try:
        capacity = len(words) - _HEADER
        # An uncontended lock's release orders the sample's store before
        # the count's (on any CPU: x86 keeps stores in order anyway).
        fence = threading.Lock()
        clock = time.perf_counter_ns
        fn, args, kwargs = target.fn, target.args, target.kwargs
        samples: List[int] = []
        result = None
        taken = 0
        while True:
            start = clock()
            for _ in range(calls):
                result = fn(*args, **kwargs)
            elapsed = clock() - start
            samples.append(elapsed)
            if taken < capacity:
                words[_HEADER + taken] = elapsed
            taken += 1
            with fence:
                pass
            words[1] = min(taken, capacity)
            target.result, target.called = result, True
            if taken >= words[0] or taken >= capacity:
                return samples, calls
    finally:
        words.release()
        mapped.close()


class Connection:
    """One accepted connection from warpt: requests in, replies out."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._reader = conn.makefile("r", encoding="utf-8", newline="\n")
        self._writer = conn.makefile("w", encoding="utf-8", newline="\n")

    def request(self) -> Optional[Dict[str, Any]]:
        """The next request; ``None`` when warpt closed the connection."""
        line = self._reader.readline()
        if not line:
            return None
        parsed: Dict[str, Any] = json.loads(line)
        return parsed

    def reply(self, reply: Dict[str, Any]) -> None:
        """Sends one reply line."""
        # default=str: a test's extra_info may hold values JSON cannot.
        self._writer.write(json.dumps(reply, default=str) + "\n")
        self._writer.flush()

    def close(self) -> None:
        """Closes both directions."""
        for f in (self._reader, self._writer):
            try:
                f.close()
            except OSError:
                pass
        self._conn.close()


def _failure(e: BaseException) -> Dict[str, Any]:
    return {
        "ok": False,
        "error": f"{type(e).__name__}: {e}",
        "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__)),
    }


def decline(conn: Connection, nodeid: str, reason: str, *, skipped: bool) -> None:
    """Answers warpt's ``load`` for a test that will not be measured: a
    skip (pytest skipped it) or an error (it failed before measuring)."""
    try:
        request = conn.request()
        if request is not None:
            reply: Dict[str, Any] = {"ok": False, "error": reason}
            if skipped:
                reply["skipped"] = reason
            conn.reply(reply)
    finally:
        conn.close()


def measure(
    conn: Connection, nodeid: str, config: Dict[str, Any], target: Target
) -> Optional[Dict[str, Any]]:
    """Serves warpt's requests for the test ``nodeid`` while it measures:
    ``load`` (answered with ``config``, the marker's and pedantic's
    settings), ``setup`` and the timed ``run`` batches. Returns the first
    request after them (``output``, or ``teardown`` after an error), left
    for :func:`complete` once the test has finished; ``None`` when warpt
    closed the connection."""
    try:
        return _measure(conn, nodeid, config, target)
    except BaseException:
        # Ctrl-C or a broken pipe mid-measurement: warpt sees the
        # connection close (the benchmark fails) instead of waiting.
        conn.close()
        raise


def _measure(
    conn: Connection, nodeid: str, config: Dict[str, Any], target: Target
) -> Optional[Dict[str, Any]]:
    while True:
        request = conn.request()
        if request is None:
            conn.close()
            return None
        op = request.get("op")
        if op == "load":
            if request.get("path") != nodeid:
                conn.reply(
                    {
                        "ok": False,
                        "error": f"warpt asked for {request.get('path')!r} while pytest "
                        f"is running {nodeid!r}: the tests ran in another order than "
                        "collected",
                    }
                )
                conn.close()
                return None
            conn.reply(
                {
                    "ok": True,
                    "config": config,
                    "timing": "host",
                    "cold_cache": False,
                    "shared_samples": True,
                }
            )
        elif op == "setup":
            conn.reply({"ok": True})
        elif op == "run":
            calls = max(1, int(request.get("calls", 1)))
            shared = request.get("shared")
            try:
                if shared and target.setup is None:
                    samples, per_sample = _time_shared(target, calls, str(shared))
                else:
                    samples, per_sample = target.time(calls, int(request.get("samples", 1)))
            except Exception as e:  # the user's code: reported, then re-raised in the test
                target.error = e
                conn.reply(_failure(e))
                continue
            conn.reply({"ok": True, "samples_ns": samples, "calls": per_sample})
        else:
            return request


def complete(
    conn: Connection,
    pending: Dict[str, Any],
    problem: Optional[str],
    details: Dict[str, Any],
) -> None:
    """Answers the rest once the test has finished: ``output`` with the
    test's ``details`` (group, extra_info), ``validate`` with ``problem``
    (the test's failure, if it failed after measuring), ``teardown``, and
    ``exit``, which ends the connection."""
    request: Optional[Dict[str, Any]] = pending
    try:
        while request is not None:
            op = request.get("op")
            if op == "output":
                conn.reply({"ok": True, "details": details})
            elif op == "validate":
                conn.reply({"ok": True, "problem": problem})
            elif op == "exit":
                conn.reply({"ok": True})
                return
            elif op in ("setup", "teardown"):
                conn.reply({"ok": True})
            else:
                conn.reply({"ok": False, "error": f"unknown request {op!r} after measuring"})
            request = conn.request()
    finally:
        conn.close()
