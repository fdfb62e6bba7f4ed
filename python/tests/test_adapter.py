"""The plugin's adapter side of a shared series (docs/protocol.md, "Samples
through a shared file"): what it writes to the file warpt maps, and where it
stops."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import List

from warpt._adapter import Target, _time_shared

HEADER = 4


def shared_file(path: Path, limit: int, capacity: int) -> None:
    path.write_bytes(struct.pack(f"={HEADER + capacity}Q", limit, *([0] * (HEADER + capacity - 1))))


def words(path: Path) -> List[int]:
    data = path.read_bytes()
    return list(struct.unpack(f"={len(data) // 8}Q", data))


def test_samples_and_their_count_are_written_until_the_limit(tmp_path: Path) -> None:
    f = tmp_path / "samples"
    shared_file(f, limit=3, capacity=8)
    calls: List[int] = []
    target = Target(lambda: calls.append(1) or len(calls))
    samples, per_sample = _time_shared(target, 2, str(f))
    # Three batches of two calls, each sample in the file as in the reply.
    assert (len(samples), per_sample, len(calls)) == (3, 2, 6)
    w = words(f)
    assert w[1] == 3
    assert w[HEADER : HEADER + 3] == samples and all(ns > 0 for ns in samples)
    assert w[HEADER + 3 :] == [0] * 5
    assert target.called and target.result == 6


def test_a_full_file_stops_the_series_below_the_limit(tmp_path: Path) -> None:
    f = tmp_path / "samples"
    shared_file(f, limit=100, capacity=2)
    samples, _ = _time_shared(Target(lambda: None), 1, str(f))
    assert len(samples) == 2 and words(f)[1] == 2
