"""The plugin's adapter side of a shared series (docs/protocol.md, "Samples
through a shared file"): what it writes to the file warpt maps, and where it
stops."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import List

from warpt._adapter import Target, _time_shared, release_shared

HEADER = 4


def shared_file(path: Path, limit: int, ring: int, calls: int = 0) -> None:
    head = [limit, 0, calls, 0]
    path.write_bytes(struct.pack(f"={HEADER + 2 * ring}Q", *head, *([0] * (2 * ring))))


def words(path: Path) -> List[int]:
    data = path.read_bytes()
    return list(struct.unpack(f"={len(data) // 8}Q", data))


def test_samples_their_calls_and_count_are_written_until_the_limit(tmp_path: Path) -> None:
    f = tmp_path / "samples"
    shared_file(f, limit=3, ring=8, calls=2)
    calls: List[int] = []
    target = Target(lambda: calls.append(1) or len(calls))
    # The file's calls beat the request's.
    assert _time_shared(target, 5, str(f)) == 3
    # Three batches of two calls, each sample and its calls in its slot.
    assert len(calls) == 6
    w = words(f)
    assert w[1] == 3
    slots = w[HEADER:]
    assert all(slots[2 * i] > 0 and slots[2 * i + 1] == 2 for i in range(3))
    assert slots[6:] == [0] * 10
    assert target.called and target.result == 6
    release_shared()


def test_the_ring_wraps_and_the_request_calls_stand_in_for_none(tmp_path: Path) -> None:
    f = tmp_path / "samples"
    shared_file(f, limit=5, ring=2)
    calls: List[int] = []
    assert _time_shared(Target(lambda: calls.append(1)), 3, str(f)) == 5
    w = words(f)
    # Five samples of three calls through a ring of two: the fifth in the
    # first slot.
    assert len(calls) == 15 and w[1] == 5
    assert w[HEADER + 1] == 3 and w[HEADER + 3] == 3
    release_shared()


def test_a_path_stays_mapped_until_released(tmp_path: Path) -> None:
    f = tmp_path / "samples"
    shared_file(f, limit=1, ring=2, calls=1)
    assert _time_shared(Target(lambda: None), 1, str(f)) == 1
    # warpt lends the same file to the next test: the mapping made for the
    # first one sees what warpt writes to it now.
    with open(f, "r+b") as out:
        out.write(struct.pack("=Q", 3))
    assert _time_shared(Target(lambda: None), 1, str(f)) == 3
    release_shared()
