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
import os
import platform
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
        run (untimed) before each (pedantic's rounds come in one request)."""
        clock = time.perf_counter_ns
        fn = self.fn
        if self.setup is not None:
            samples = []
            for _ in range(calls * max(1, batches)):
                args, kwargs = self._arguments()
                start = clock()
                self.result = fn(*args, **kwargs)
                samples.append(clock() - start)
                self.called = True
            return samples, 1
        samples = []
        for _ in range(max(1, batches)):
            elapsed, self.result = _batch(fn, self.args, self.kwargs, calls)
            samples.append(elapsed)
        self.called = True
        return samples, calls


def _batch(
    fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any], calls: int
) -> Tuple[int, Any]:
    """Times ``calls`` calls back to back: nanoseconds, and the last call's
    result."""
    clock = time.perf_counter_ns
    result = None
    if args or kwargs:
        start = clock()
        for _ in range(calls):
            result = fn(*args, **kwargs)
        return clock() - start, result
    # A call without arguments to unpack: as cheap a loop as Python has
    # (timeit's), which a batch's time includes.
    start = clock()
    for _ in range(calls):
        result = fn()
    return clock() - start, result


#: Words before the samples in a shared file (docs/protocol.md): the
#: limit warpt writes, the count of samples taken, the calls of the next
#: batch (warpt writes it), one reserved.
_HEADER = 4

#: Whether this CPU keeps stores in program order (x86's TSO): a sample's
#: stores then reach warpt before the count's with no barrier. Elsewhere an
#: uncontended lock's release is the barrier; on a virtual machine even that
#: costs microseconds a batch, after milliseconds of the test's code.
_ORDERED_STORES = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


#: The shared file mapped last, by path: warpt lends the same file to each
#: test of a session, mapped here once (``release_shared`` at the end).
_mapped: Dict[str, Tuple[mmap.mmap, memoryview]] = {}


def _shared_words(path: str) -> memoryview:
    """The 64-bit words of the shared file at ``path``, mapped once."""
    held = _mapped.get(path)
    if held is not None:
        return held[1]
    release_shared()
    fd = os.open(path, os.O_RDWR)
    try:
        mapped = mmap.mmap(fd, 0)
    finally:
        os.close(fd)
    words = memoryview(mapped).cast("Q")
    _mapped[path] = (mapped, words)
    return words


def release_shared() -> None:
    """Unmaps the shared file kept mapped (the session's end)."""
    for mapped, words in _mapped.values():
        words.release()
        mapped.close()
    _mapped.clear()


def _time_shared(target: "Target", calls: int, path: str) -> int:
    """Times batches back to back, each of the calls warpt keeps in the
    file it maps at ``path`` (docs/protocol.md, ``shared``; ``calls`` if
    that word is 0), writing each sample and its calls to the file's ring
    and going on while they number fewer than the limit warpt keeps there:
    no system call between batches, where a reply after each few costs
    tens of microseconds on a virtual machine, and as little else as can
    be (each step after the test's code costs cache misses). Returns the
    samples taken."""
    words = _shared_words(path)
    fence = None if _ORDERED_STORES else threading.Lock()
    fn, args, kwargs = target.fn, target.args, target.kwargs
    first = slot = _HEADER
    end = len(words) - 1
    result = None
    taken = 0
    try:
        while True:
            n = words[2] or calls
            elapsed, result = _batch(fn, args, kwargs, n)
            words[slot] = elapsed
            words[slot + 1] = n
            taken += 1
            slot += 2
            if slot >= end:
                slot = first
            if fence is not None:
                with fence:
                    pass
            words[1] = taken
            if taken >= words[0]:
                return taken
    finally:
        if taken:
            target.result, target.called = result, True


class Connection:
    """One accepted connection from warpt: requests in, replies out.

    Replies wait in a buffer while more requests are already in: they go
    in one write when the next request would have to be waited for, before
    a ``run`` starts timing, and at the end. On a virtual machine each
    system call after a while of computing costs tens of microseconds, and
    a test's closing requests (``output``, ``validate``, ``teardown``,
    ``exit``) come in one write: their four replies, and the measuring
    ``run``'s before them, go back in one."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._in = b""
        self._out: List[bytes] = []

    def request(self) -> Optional[Dict[str, Any]]:
        """The next request; ``None`` when warpt closed the connection."""
        while True:
            end = self._in.find(b"\n")
            if end >= 0:
                line, self._in = self._in[:end], self._in[end + 1 :]
                parsed: Dict[str, Any] = json.loads(line)
                return parsed
            chunk = self._receive()
            if not chunk:
                return None
            self._in += chunk

    def _receive(self) -> bytes:
        if self._out:
            # What is already there needs no flush; what must be waited for
            # may wait on these replies.
            try:
                return self._conn.recv(1 << 16, socket.MSG_DONTWAIT)
            except BlockingIOError:
                self.flush()
        return self._conn.recv(1 << 16)

    def reply(self, reply: Dict[str, Any]) -> None:
        """Queues one reply line (sent by :meth:`flush`, or before the next
        request is waited for)."""
        # default=str: a test's extra_info may hold values JSON cannot.
        self._out.append(json.dumps(reply, default=str).encode() + b"\n")

    def reply_line(self, line: bytes) -> None:
        """Queues a reply already written as a JSON line (the fixed ones:
        right after the test's code even JSON's encoder is cold)."""
        self._out.append(line)

    def flush(self) -> None:
        """Sends the replies queued."""
        if self._out:
            data = b"".join(self._out)
            self._out.clear()
            self._conn.sendall(data)

    def close(self) -> None:
        """Sends what is queued, then closes both directions."""
        try:
            self.flush()
        except OSError:
            pass
        self._conn.close()


#: The reply of a request that succeeded with nothing to say.
_OK = b'{"ok": true}\n'


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
    # Pedantic's rounds are a fixed count (each after its own setup): only
    # a calibrated series goes through a shared file.
    sharing = target.setup is None and "pedantic" not in config
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
                    "shared_samples": sharing,
                }
            )
        elif op == "setup":
            conn.reply_line(_OK)
        elif op == "run":
            calls = max(1, int(request.get("calls", 1)))
            shared = request.get("shared")
            if request.get("speculative") and not sharing:
                # Sent before warpt read the load reply: pedantic's rounds
                # are warpt's to ask for.
                conn.reply_line(b'{"ok": true, "taken": 0}\n')
                continue
            conn.flush()
            try:
                if shared and sharing:
                    # The samples are in the file: the reply says how many.
                    taken = _time_shared(target, calls, str(shared))
                    conn.reply_line(b'{"ok": true, "taken": %d}\n' % taken)
                else:
                    samples, per_sample = target.time(calls, int(request.get("samples", 1)))
                    conn.reply({"ok": True, "samples_ns": samples, "calls": per_sample})
            except Exception as e:  # the user's code: reported, then re-raised in the test
                target.error = e
                conn.reply(_failure(e))
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
            if op == "output" and not details:
                conn.reply_line(b'{"ok": true, "details": {}}\n')
            elif op == "output":
                conn.reply({"ok": True, "details": details})
            elif op == "validate" and problem is None:
                conn.reply_line(b'{"ok": true, "problem": null}\n')
            elif op == "validate":
                conn.reply({"ok": True, "problem": problem})
            elif op == "exit":
                conn.reply_line(_OK)
                return
            elif op in ("setup", "teardown"):
                conn.reply_line(_OK)
            else:
                conn.reply({"ok": False, "error": f"unknown request {op!r} after measuring"})
            request = conn.request()
    finally:
        conn.close()
