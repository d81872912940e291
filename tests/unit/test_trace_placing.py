"""Trace chunks written at their offsets: repeated or late deliveries change nothing, and a
chunk that does not fit fails loudly without touching the file."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.errors import TraceWriteConflict
from fsm_agent.trace.placing import TraceOwner, place_chunk

CHUNKS = (b'{"kind":"header"}\n', b'{"seq":1}\n{"seq":2}\n', b'{"seq":3}\n', b'{"kind":"end"}\n')


def offsets(chunks: tuple[bytes, ...]) -> list[int]:
    """Where each chunk starts once all are laid end to end."""
    return [0, *itertools.accumulate(len(chunk) for chunk in chunks)][:-1]


def write_all(path: Path) -> None:
    """Write every chunk once, in order, the last one as the trace's end."""
    for index, (offset, chunk) in enumerate(zip(offsets(CHUNKS), CHUNKS, strict=True)):
        place_chunk(path, offset, chunk, ended=index == len(CHUNKS) - 1)


def test_chunks_in_order_make_the_file(tmp_path: Path) -> None:
    """Chunks written in order give their concatenation, and each returns where it ends."""
    path = tmp_path / "t.jsonl"
    ends = [place_chunk(path, o, c) for o, c in zip(offsets(CHUNKS), CHUNKS, strict=True)]
    assert path.read_bytes() == b"".join(CHUNKS)
    assert ends == [o + len(c) for o, c in zip(offsets(CHUNKS), CHUNKS, strict=True)]


def test_a_late_first_chunk_does_not_cut_the_file(tmp_path: Path) -> None:
    """The first chunk delivered again after the whole trace was written leaves it whole."""
    path = tmp_path / "t.jsonl"
    write_all(path)
    assert place_chunk(path, 0, CHUNKS[0]) == len(CHUNKS[0])
    assert path.read_bytes() == b"".join(CHUNKS)


def test_a_duplicated_middle_chunk_changes_nothing(tmp_path: Path) -> None:
    """A middle chunk delivered twice, before and after later chunks, is written once."""
    path = tmp_path / "t.jsonl"
    at = offsets(CHUNKS)
    place_chunk(path, at[0], CHUNKS[0])
    place_chunk(path, at[1], CHUNKS[1])
    place_chunk(path, at[1], CHUNKS[1])
    place_chunk(path, at[2], CHUNKS[2])
    place_chunk(path, at[1], CHUNKS[1])
    assert path.read_bytes() == b"".join(CHUNKS[:3])


def test_a_chunk_half_written_is_completed_by_its_retry(tmp_path: Path) -> None:
    """A file holding only the start of a chunk (a crash mid-write) gets the rest on retry."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(CHUNKS[0] + CHUNKS[1][:5])
    place_chunk(path, len(CHUNKS[0]), CHUNKS[1])
    assert path.read_bytes() == CHUNKS[0] + CHUNKS[1]


def test_a_conflicting_chunk_fails_naming_the_trace_and_offset(tmp_path: Path) -> None:
    """Other bytes where a chunk goes: TraceWriteConflict naming the file and the first byte
    that differs, and the file is left as it was."""
    path = tmp_path / "t.jsonl"
    write_all(path)
    before = path.read_bytes()
    at = offsets(CHUNKS)[1]
    with pytest.raises(TraceWriteConflict, match=r"t\.jsonl: at byte offset") as raised:
        place_chunk(path, at, b'{"seq":1}\n{"seq":9}\n')
    assert raised.value.offset == at + len(b'{"seq":1}\n{"seq":')
    assert raised.value.path == str(path)
    assert path.read_bytes() == before


def test_a_chunk_past_the_end_fails_and_writes_nothing(tmp_path: Path) -> None:
    """A chunk whose offset is past the file's end (an earlier chunk never landed) fails."""
    path = tmp_path / "t.jsonl"
    place_chunk(path, 0, CHUNKS[0])
    with pytest.raises(TraceWriteConflict, match="past the end of the file"):
        place_chunk(path, len(CHUNKS[0]) + len(CHUNKS[1]), CHUNKS[2])
    assert path.read_bytes() == CHUNKS[0]


def test_a_chunk_into_a_missing_file_past_zero_fails(tmp_path: Path) -> None:
    """A later chunk for a trace whose file was deleted fails instead of leaving a hole."""
    with pytest.raises(TraceWriteConflict, match="past the end"):
        place_chunk(tmp_path / "gone.jsonl", 40, CHUNKS[2])


def test_a_negative_offset_fails(tmp_path: Path) -> None:
    """A negative offset is refused, naming it."""
    with pytest.raises(TraceWriteConflict, match="negative"):
        place_chunk(tmp_path / "t.jsonl", -1, CHUNKS[0])


def test_the_last_chunk_refuses_bytes_after_it(tmp_path: Path) -> None:
    """The trace's last chunk fails when the file goes on after it (another writer added
    bytes); it does not cut them silently."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(CHUNKS) + b'{"stray":1}\n')
    with pytest.raises(TraceWriteConflict, match="goes on for 12 bytes"):
        place_chunk(path, offsets(CHUNKS)[-1], CHUNKS[-1], ended=True)


def header(run: str, started: str) -> bytes:
    """A trace's header line naming its run and when the run started."""
    return b'{"meta":{"run_id":"%s","started":"%s"},"record":"header"}\n' % (
        run.encode(),
        started.encode(),
    )


def test_a_later_runs_first_chunk_replaces_an_earlier_runs_file(tmp_path: Path) -> None:
    """A session traced to the file a finished session used replaces that older trace."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(header("old", "2026-01-01T10:00:00+00:00") + b'{"seq":1}\n' * 40)
    new = header("new", "2026-01-01T10:05:00+00:00") + b'{"seq":1}\n'
    assert place_chunk(path, 0, new) == len(new)
    assert path.read_bytes() == new


@pytest.mark.parametrize(
    "theirs",
    ["2026-01-01T10:05:00+00:00", "2026-01-01T11:05:00+01:00", "2026-01-01T10:00:00+00:00"],
    ids=["later", "later-in-another-zone", "same-moment"],
)
def test_a_late_first_chunk_of_a_superseded_run_keeps_the_newer_trace(
    tmp_path: Path, theirs: str
) -> None:
    """A stalled worker delivering the first chunk of a session that ended after a newer
    session (started later, or at the same moment) took the file fails with a conflict and
    leaves the newer trace whole: nothing can prove it older."""
    path = tmp_path / "t.jsonl"
    newer = header("newer", theirs) + b'{"seq":1}\n{"seq":2}\n'
    path.write_bytes(newer)
    late = header("late", "2026-01-01T10:00:00+00:00") + b'{"seq":1}\n'
    with pytest.raises(TraceWriteConflict, match="late write of a superseded run") as raised:
        place_chunk(path, 0, late)
    assert raised.value.offset == 0
    assert path.read_bytes() == newer


@pytest.mark.parametrize(
    "start",
    [
        b"not json at all\n",
        b'{"meta":{"started":"yesterday"}}\n',
        b'{"meta":{"started":"2026-01-01T10:05:00"}}\n',  # no zone: cannot be compared
        b'{"meta":{"started":12}}\n',
        b'["meta"]\n',
        b'{"meta":{"started":"2026-01-01T10:05:00+00:00"}',  # no line end: cut off
    ],
)
def test_a_file_with_no_comparable_start_is_replaced(tmp_path: Path, start: bytes) -> None:
    """A file whose first line tells no start time (not a trace, a cut-off header, a time
    without a zone) is another run's and is replaced, as before."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(start + b"x" * 64)
    new = header("new", "2026-01-01T10:00:00+00:00")
    place_chunk(path, 0, new)
    assert path.read_bytes() == new


def test_a_first_chunk_replaces_another_runs_file(tmp_path: Path) -> None:
    """A file that does not start with the first chunk holds another run's trace: the new
    trace replaces it, as a run traced in-process to the same file does."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"kind":"header","run":"old"}\n' * 50)
    write_all(path)
    assert path.read_bytes() == b"".join(CHUNKS)


@given(st.data())
def test_any_repeated_or_late_delivery_gives_the_whole_trace(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Chunks first delivered in order, with any number of extra deliveries of any chunk
    already delivered at any later moment, give exactly the concatenated trace."""
    path = tmp_path_factory.mktemp("placing") / "t.jsonl"
    at = offsets(CHUNKS)
    delivered: list[int] = []
    for index in range(len(CHUNKS)):
        repeats = data.draw(st.lists(st.sampled_from(delivered), max_size=3)) if delivered else []
        for again in [*repeats, index]:
            place_chunk(path, at[again], CHUNKS[again])
        delivered.append(index)
    for again in data.draw(st.lists(st.sampled_from(delivered), max_size=4)):
        place_chunk(path, at[again], CHUNKS[again])
    assert path.read_bytes() == b"".join(CHUNKS)


def test_a_conflict_deep_inside_a_large_chunk_is_found_at_its_byte(tmp_path: Path) -> None:
    """A chunk of several MiB compared with the file slice by slice: one byte changed far
    inside it is reported at its exact offset, and an identical retry is a no-op."""
    path = tmp_path / "t.jsonl"
    chunk = b'{"pad":"' + b"p" * (3 << 20) + b'"}\n'
    assert place_chunk(path, 0, CHUNKS[0]) == len(CHUNKS[0])
    end = place_chunk(path, len(CHUNKS[0]), chunk)
    assert place_chunk(path, len(CHUNKS[0]), chunk) == end
    changed = bytearray(chunk)
    changed[(5 << 19) + 7] = ord("q")
    with pytest.raises(TraceWriteConflict) as raised:
        place_chunk(path, len(CHUNKS[0]), bytes(changed))
    assert raised.value.offset == len(CHUNKS[0]) + (5 << 19) + 7
    assert path.read_bytes() == CHUNKS[0] + chunk


def test_a_superseding_chunk_keeps_the_replaced_runs_bytes_beside_the_file(
    tmp_path: Path,
) -> None:
    """A reset run's chunk that differs from the file's tail: the whole file is first copied
    to NAME.superseded-1.jsonl, then the file is cut where the chunk goes and takes it."""
    path = tmp_path / "t.jsonl"
    write_all(path)
    replaced = path.read_bytes()
    at = offsets(CHUNKS)[2]
    mine = b'{"seq":3,"reset":true}\n'
    assert place_chunk(path, at, mine, superseding=True) == at + len(mine)
    assert path.read_bytes() == b"".join(CHUNKS[:2]) + mine
    assert (tmp_path / "t.superseded-1.jsonl").read_bytes() == replaced


def test_a_superseding_last_chunk_cuts_what_the_replaced_run_wrote_after_it(
    tmp_path: Path,
) -> None:
    """The reset run's last chunk matches the file but the replaced run went on after it:
    set aside, then cut at the chunk's end (not refused as another writer's bytes)."""
    path = tmp_path / "t.jsonl"
    write_all(path)
    replaced = path.read_bytes()
    at = offsets(CHUNKS)
    assert place_chunk(path, at[1], CHUNKS[1], ended=True, superseding=True) == at[2]
    assert path.read_bytes() == b"".join(CHUNKS[:2])
    assert (tmp_path / "t.superseded-1.jsonl").read_bytes() == replaced


def test_each_reset_keeps_its_own_copy(tmp_path: Path) -> None:
    """Two resets, each diverging from the file: two copies, numbered, none overwritten; a
    superseding chunk the file already holds (a retried write) copies nothing."""
    path = tmp_path / "t.jsonl"
    write_all(path)
    first = path.read_bytes()
    at = offsets(CHUNKS)[1]
    place_chunk(path, at, b'{"run":"second"}\n', superseding=True)
    second = path.read_bytes()
    place_chunk(path, at, b'{"run":"third"}\n', superseding=True)
    place_chunk(path, at, b'{"run":"third"}\n', superseding=True)  # retried: in place
    assert (tmp_path / "t.superseded-1.jsonl").read_bytes() == first
    assert (tmp_path / "t.superseded-2.jsonl").read_bytes() == second
    assert not (tmp_path / "t.superseded-3.jsonl").exists()
    assert path.read_bytes() == CHUNKS[0] + b'{"run":"third"}\n'


def test_a_superseding_chunk_past_the_end_still_fails(tmp_path: Path) -> None:
    """Superseding does not excuse a missing earlier chunk: nothing is copied or written."""
    path = tmp_path / "t.jsonl"
    place_chunk(path, 0, CHUNKS[0])
    with pytest.raises(TraceWriteConflict, match="past the end"):
        place_chunk(path, len(CHUNKS[0]) + 5, CHUNKS[1], superseding=True)
    assert path.read_bytes() == CHUNKS[0]
    assert not list(tmp_path.glob("*.superseded-*"))


OWNER = TraceOwner(run_id="s-1", started="2026-03-01T09:00:00+00:00")
OWN_HEADER = header("s-1", "2026-03-01T09:00:00+00:00")


def test_the_owners_trace_gone_on_differently_is_set_aside_not_refused(tmp_path: Path) -> None:
    """A retried workflow task takes its events in another order than the failed attempt,
    whose write landed: the file is the owner's, its line where the chunk goes has the
    chunk's seq, so the file is copied aside and the chunk written (the session goes on)."""
    path = tmp_path / "t.jsonl"
    phantom = OWN_HEADER + b'{"seq":1}\n{"seq":2,"event":"first order"}\n'
    path.write_bytes(phantom)
    at = len(OWN_HEADER) + len(b'{"seq":1}\n')
    retried = b'{"seq":2,"event":"second order"}\n'
    assert place_chunk(path, at, retried, owner=OWNER) == at + len(retried)
    assert path.read_bytes() == OWN_HEADER + b'{"seq":1}\n' + retried
    assert (tmp_path / "t.superseded-1.jsonl").read_bytes() == phantom


def test_the_owners_last_chunk_cuts_later_lines_of_another_course(tmp_path: Path) -> None:
    """The owner's last chunk agrees with the file, which goes on with later-numbered lines
    (a failed attempt's course): set aside and cut, not refused."""
    path = tmp_path / "t.jsonl"
    last = b'{"seq":1,"record":"end"}\n'
    # The retry ended at seq 1 where the failed attempt had gone on.
    path.write_bytes(OWN_HEADER + last + b'{"seq":2}\n')
    assert place_chunk(path, len(OWN_HEADER), last, ended=True, owner=OWNER)
    assert path.read_bytes() == OWN_HEADER + last
    assert (tmp_path / "t.superseded-1.jsonl").exists()


def test_the_owners_first_chunk_replaces_its_own_other_course(tmp_path: Path) -> None:
    """At offset 0 too: the owner's own header with other lines after it is this trace gone
    on differently (not a newer run's): kept aside, then replaced."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(OWN_HEADER + b'{"seq":1,"event":"a"}\n')
    mine = OWN_HEADER + b'{"seq":1,"event":"b"}\n'
    place_chunk(path, 0, mine, owner=OWNER)
    assert path.read_bytes() == mine
    assert (
        tmp_path / "t.superseded-1.jsonl"
    ).read_bytes() == OWN_HEADER + b'{"seq":1,"event":"a"}\n'


@pytest.mark.parametrize(
    ("start", "tail"),
    [
        (header("s-2", "2026-03-01T09:00:00+00:00"), b'{"seq":2,"x":1}\n'),  # another session
        (header("s-1", "2026-03-01T09:00:01+00:00"), b'{"seq":2,"x":1}\n'),  # its id reused
        (OWN_HEADER, b'{"kind":"stray"}\n'),  # a line someone appended: no seq
        (OWN_HEADER, b'{"seq":3}\n'),  # numbered unlike the chunk
        (OWN_HEADER, b'{"seq":2,"x":'),  # cut off mid-line
    ],
    ids=["other-session", "reused-id", "stray-line", "other-seq", "cut-off"],
)
def test_bytes_that_are_not_the_owners_other_course_still_conflict(
    tmp_path: Path, start: bytes, tail: bytes
) -> None:
    """Where the file is not the owner's trace, or its line there is not numbered as the
    chunk's, the chunk is refused and nothing is copied or changed."""
    path = tmp_path / "t.jsonl"
    before = start + b'{"seq":1}\n' + tail
    path.write_bytes(before)
    at = len(start) + len(b'{"seq":1}\n')
    with pytest.raises(TraceWriteConflict):
        place_chunk(path, at, b'{"seq":2,"y":2}\n', owner=OWNER)
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("*.superseded-*"))


def test_a_copy_cut_short_never_stands_as_the_kept_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy aside fails before it is on disk (a full disk; a kill -9 there leaves at
    most a hidden temporary file): no NAME.superseded-N.jsonl holds a part of the trace, the
    file is not cut, and the write fails loudly; a later write sets the file aside whole."""
    path = tmp_path / "t.jsonl"
    write_all(path)
    replaced = path.read_bytes()
    at = offsets(CHUNKS)[2]

    def no_disk(_descriptor: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", no_disk)
        with pytest.raises(OSError, match="No space"):
            place_chunk(path, at, b'{"seq":3,"reset":true}\n', superseding=True)
    assert path.read_bytes() == replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]
    place_chunk(path, at, b'{"seq":3,"reset":true}\n', superseding=True)
    assert (tmp_path / "t.superseded-1.jsonl").read_bytes() == replaced
