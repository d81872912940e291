"""The files an archive writes, read from the archive before ``tar -x`` or ``unzip`` extracts
it (SPEC §9.3 safety checks); the other programs that extract one are in
:mod:`~fsm_agent.toolbox.archive_programs`.

Like a patch (:mod:`~fsm_agent.toolbox.patch_targets`), an archive names the files it writes
inside itself: ``tar -xf payload.tar`` may write ``.claude/settings.json`` or
``.git/hooks/pre-commit`` while its words name neither. The Bash tool lists the archive first
(with Python's ``tarfile`` and ``zipfile``: gzip, bzip2, xz and zip) and judges each member's
name — at every depth ``--strip-components`` may cut it to, in the folder it extracts to
(``-C DIR``, ``unzip -d DIR``, where a ``cd`` of the command enters) — and the target of each
link member (a link to ``.git`` followed by a file under the link writes there).

An archive that cannot be listed first is taken as one that may write a protected path: read
from a pipe (``curl ... | tar -x``), missing, larger than :data:`ARCHIVE_READ_LIMIT` or with
more than :data:`MEMBER_LIMIT` members, compressed by a program Python does not read (``tar
-I zstd``), written by another part of the same command, or renamed as it is extracted
(``--transform``). Listing (``tar -t``, ``unzip -l``) and extracting to standard output
(``tar -O``, ``unzip -p``) write nothing.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import tarfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Protocol

from fsm_agent.core.shell_commands import CommandAnalysis, CommandPart
from fsm_agent.toolbox.archive_programs import extracted_archive
from fsm_agent.toolbox.data_paths import UNTOLD, first_protected_where, named_by_another

ARCHIVE_READ_LIMIT: Final = 64 * 1024 * 1024
"""The largest archive file listed; a larger one counts as one that cannot be read."""
UNPACKED_LIMIT: Final = 512 * 1024 * 1024
"""The most bytes a tar is read to once decompressed; a larger one counts as unread."""
MEMBER_LIMIT: Final = 100_000
"""The most members listed; an archive with more counts as one that cannot be read."""

UNREAD: Final = "an archive that cannot be listed before it is extracted"

_TARS: Final = frozenset({"tar", "gtar", "bsdtar"})
_TAR_VALUE_LETTERS: Final = "bCfFgHIKLNTVX"
"""tar's option letters that take a value (the rest of the cluster, or the next word)."""
_TAR_RENAMING: Final = ("--transform", "--xform", "-s")
_TAR_TO_OUTPUT: Final = ("--to-stdout", "--to-command", "-O")
_UNZIP_NOT_WRITING: Final = frozenset("lptvcZz")
"""unzip's letters that list, test or print instead of extracting."""


def archive_refusal(
    part: CommandPart, analysis: CommandAnalysis, cwd: Path, entered: Sequence[Path] = ()
) -> str | None:
    """The protected path that the archive ``part`` extracts would write, or :data:`UNREAD`
    when the archive cannot be listed; None when ``part`` extracts nothing or writes none.

    Args:
        part: one part of ``analysis``.
        analysis: the whole command (another part may write the archive first).
        cwd: the working folder, against which the archive's path and the members' paths are
            judged.
        entered: the other folders the command may run it in (``cd DIR && tar -x``), where
            the members are judged too, as in the folders its words name (``-C DIR``,
            ``unzip -d DIR``: :func:`~fsm_agent.toolbox.data_paths.first_protected_where`).
    """
    source = _extracted(part)
    if source is None:
        return None
    if source == "-":
        source = next((r.target for r in part.redirects if r.operator == "<"), "")
        if any(r.expanded for r in part.redirects if r.operator == "<"):
            source = ""
    if source in ("", UNTOLD) or named_by_another(source, part, analysis):
        return UNREAD
    path = cwd / source
    if part.argv[0].rsplit("/", 1)[-1] == "unzip" and not os.path.exists(path):  # noqa: PTH110
        path = cwd / f"{source}.zip"  # unzip's own guess
    names = _members(path)
    if names is None:
        return UNREAD
    found = first_protected_where(names, part, cwd, entered)
    return None if found is None else f"{found} (a path the archive holds)"


def extracts_archive(part: CommandPart) -> bool:
    """Whether ``part`` extracts an archive to files (``tar -x``, ``unzip``, ``cpio -i``...)."""
    return _extracted(part) is not None


def _extracted(part: CommandPart) -> str | None:
    """The archive ``part`` extracts to files (``-`` for its input, :data:`UNTOLD` when it
    cannot be told), or None when it extracts none."""
    if not part.argv:
        return None
    program = part.argv[0].rsplit("/", 1)[-1]
    if program in _TARS:
        return _tar_archive(part.argv[1:])
    if program == "unzip":
        return _unzip_archive(part.argv[1:])
    return extracted_archive(program, part.argv[1:])


def _tar_archive(args: Sequence[str]) -> str | None:
    """The archive ``tar`` extracts (``-`` for its input, :data:`UNTOLD` when it cannot
    be told), or None when it extracts nothing to files."""
    letters: list[tuple[str, int]] = []  # (letter, index of the word its value is in or after)
    extracting = False
    by_program = False  # compressed by a program Python does not read (-I, --use-compress-...)
    archive = "-"
    index = 0
    while index < len(args):
        word, index = args[index], index + 1
        if word == "--":
            break
        if word.startswith("--"):
            name, has_value, value = word.partition("=")
            if name.startswith(_TAR_RENAMING):
                return UNTOLD
            if name.startswith(_TAR_TO_OUTPUT) or name in ("--list", "--diff", "--compare"):
                return None
            if ("--extract".startswith(name) and len(name) > 3) or name == "--get":
                extracting = True
            elif "--file".startswith(name) and len(name) > 3:
                if not has_value and index < len(args):
                    value, index = args[index], index + 1
                archive = value
            elif "--use-compress-program".startswith(name) and len(name) > 3:
                by_program = True
        elif word.startswith("-") or (index == 1 and not word.startswith("-")):
            cluster = word.lstrip("-")
            old_style = not word.startswith("-")
            for position, letter in enumerate(cluster):
                if letter in "Ot":  # lists, or extracts to standard output
                    return None
                if letter == "x":
                    extracting = True
                if letter == "s" and not old_style:  # bsdtar's renaming (GNU's is rare)
                    return UNTOLD
                if letter in _TAR_VALUE_LETTERS:
                    if old_style:
                        letters.append((letter, index))
                        continue
                    value = cluster[position + 1 :]
                    if not value and index < len(args):
                        value, index = args[index], index + 1
                    if letter == "f":
                        archive = value
                    by_program = by_program or letter == "I"
                    break
    # Old-style letters take their values from the words after the first, in order.
    for offset, (letter, _) in enumerate(letters):
        value = args[1 + offset] if 1 + offset < len(args) else ""
        if letter == "f":
            archive = value
        by_program = by_program or letter == "I"
    if not extracting:
        return None
    return UNTOLD if by_program else archive


def _unzip_archive(args: Sequence[str]) -> str | None:
    """The archive ``unzip`` extracts, or None when it lists, tests or prints instead."""
    operands: list[str] = []
    index = 0
    while index < len(args):
        word, index = args[index], index + 1
        if word == "-x":
            break  # the names after it are left out of the extraction
        if word in ("-d", "-P"):
            index += 1
        elif word.startswith("-") and len(word) > 1:
            if _UNZIP_NOT_WRITING & set(word[1:]):
                return None
        else:
            operands.append(word)
    if not operands:
        return None  # unzip with no archive prints its usage
    return operands[0]


def _members(path: Path) -> list[str] | None:
    """The member names and link targets of the archive at ``path``, or None when it cannot
    be listed within the limits."""
    try:
        if not path.is_file() or path.stat().st_size > ARCHIVE_READ_LIMIT:
            return None
        if zipfile.is_zipfile(path):
            return _zip_members(path)
        return _tar_members(path)
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, ValueError, lzma.LZMAError):
        return None


def _tar_members(path: Path) -> list[str] | None:
    """A tar's member names and link targets, read as a stream of at most
    :data:`UNPACKED_LIMIT` bytes once decompressed: a small file may unpack to gigabytes
    (listing reads every byte), and the question must not wait on it."""
    with path.open("rb") as file:
        head = file.read(6)
    opener = next((open_ for magic, open_ in _COMPRESSIONS if head.startswith(magic)), None)
    names: list[str] = []
    with (opener or open)(path, "rb") as raw:
        bounded = _Bounded(raw, UNPACKED_LIMIT)
        with tarfile.open(fileobj=bounded, mode="r|") as archive:
            for count, member in enumerate(archive):
                if count >= MEMBER_LIMIT:
                    return None
                names.append(member.name)
                if member.issym() or member.islnk():
                    names.append(member.linkname)
    return names


_COMPRESSIONS: Final = (
    (b"\x1f\x8b", gzip.open),
    (b"BZh", bz2.open),
    (b"\xfd7zXZ", lzma.open),
)
"""What Python decompresses, by the first bytes of the file (anything else is read as it is:
a tar, or not one)."""


class _Reading(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Bounded(io.BufferedIOBase):
    """A binary stream that refuses to give more than ``limit`` bytes in all."""

    def __init__(self, raw: _Reading, limit: int) -> None:
        super().__init__()
        self._raw = raw
        self._left = limit

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        size = -1 if size is None else size
        data = self._raw.read(size if size >= 0 else self._left + 1)
        self._left -= len(data)
        if self._left < 0:
            raise ValueError("the archive unpacks to more than the limit")
        return data


def _zip_members(path: Path) -> list[str] | None:
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if len(infos) > MEMBER_LIMIT:
            return None
        names = [info.filename for info in infos]
        for info in infos:
            if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symbolic link
                with archive.open(info) as link:  # its target; never the whole of a bomb
                    names.append(link.read(4096).decode("utf-8", errors="replace"))
    return names
