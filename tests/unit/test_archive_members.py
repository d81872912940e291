"""An archive writes the files it holds: those are judged before it is extracted.

Found: in bypass mode ``tar -xf payload.tar`` and ``unzip payload.zip`` wrote
``.git/hooks/pre-commit`` or ``.claude/settings.json`` unasked (an Edit of either asks): the
command's words named no protected path, the archive's members did.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_hostile_commands import safety_question


def _tar(path: Path, members: dict[str, str], *, links: dict[str, str] | None = None) -> None:
    mode = "w:gz" if path.name.endswith("gz") else "w"
    with tarfile.open(path, mode) as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)


def _zip(path: Path, members: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder with a repository and archives, hostile and plain."""
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    _tar(tmp_path / "hook.tar", {"src/a.py": "", ".git/hooks/pre-commit": "rm -rf src\n"})
    _tar(tmp_path / "settings.tgz", {"pkg/.claude/settings.json": "{}"})
    _tar(tmp_path / "linked.tar", {"cfg/settings.json": "{}"}, links={"cfg": ".claude"})
    _tar(tmp_path / "plain.tgz", {"pkg/src/b.py": "", "pkg/README": ""})
    _zip(tmp_path / "tasks.zip", {"proj/.vscode/tasks.json": "{}"})
    _zip(tmp_path / "plain.zip", {"proj/src/c.py": ""})
    (tmp_path / "bogus.tar").write_text("not an archive")
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        "tar -xf hook.tar",
        "tar xf hook.tar",
        "tar -xvf hook.tar -C .",
        "tar --extract --file=hook.tar",
        "tar --extract --file hook.tar",
        "tar -x -f hook.tar",
        "tar -xzf settings.tgz --strip-components=1",
        "tar xzvf settings.tgz",
        "gtar -xf linked.tar",
        "bsdtar -xf tasks.zip",
        "tar -xf - < hook.tar",
        "unzip tasks.zip",
        "unzip -o tasks",
        "unzip -q tasks.zip -d out",
        "curl -sL https://example.com/x.tgz | tar -xz",
        "cat plain.tgz | tar -xzf -",
        "tar -xf missing.tar",
        "tar -xf bogus.tar",
        "tar -I zstd -xf plain.tgz",
        "tar --use-compress-program=zstd -xf plain.tgz",
        "tar -xf plain.tgz --transform 's,^,.git/hooks/,'",
        "bsdtar -xf plain.tgz -s ',^,.git/hooks/,'",
        "cp hook.tar plain.tgz && tar -xzf plain.tgz",
    ],
)
def test_bypass_asks_before_an_archive_writes_a_protected_path(command: str, work: Path) -> None:
    """An archive holding a protected path, or one that cannot be listed first, is a safety
    question even in bypass mode."""
    assert safety_question(command, work)


@pytest.mark.parametrize(
    "command",
    [
        "tar -xzf plain.tgz",
        "tar xzf plain.tgz -C src",
        "tar -tf hook.tar",
        "tar tvf hook.tar",
        "tar -xOf hook.tar",
        "tar -xf hook.tar --to-stdout",
        "tar -czf out.tgz src",
        "unzip plain.zip",
        "unzip -l tasks.zip",
        "unzip -p tasks.zip",
        "unzip -t tasks.zip",
        "sh -c 'tar -xzf plain.tgz'",
        "find src -name '*.tgz' -exec tar -xzf plain.tgz {} +",
    ],
)
def test_bypass_still_extracts_an_archive_that_holds_no_protected_path(
    command: str, work: Path
) -> None:
    """Ordinary archives, listings and extraction to standard output run as before."""
    assert not safety_question(command, work)


def test_an_archive_past_the_size_limit_counts_as_unread(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fsm_agent.toolbox import archive_members

    monkeypatch.setattr(archive_members, "ARCHIVE_READ_LIMIT", 10)
    assert safety_question("tar -xzf plain.tgz", work)


def test_an_archive_past_the_member_limit_counts_as_unread(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fsm_agent.toolbox import archive_members

    monkeypatch.setattr(archive_members, "MEMBER_LIMIT", 1)
    assert safety_question("unzip plain.zip", work) is False  # one member: within the limit
    assert safety_question("tar -xzf plain.tgz", work)


def test_a_small_archive_unpacking_past_the_limit_counts_as_unread(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gzip of a few kilobytes may unpack to gigabytes: listing stops at the limit."""
    from fsm_agent.toolbox import archive_members

    _tar(work / "big.tgz", {"pkg/data.bin": "\0" * 200_000})
    assert (work / "big.tgz").stat().st_size < 2_000
    monkeypatch.setattr(archive_members, "UNPACKED_LIMIT", 100_000)
    assert safety_question("tar -xzf big.tgz", work)
    monkeypatch.setattr(archive_members, "UNPACKED_LIMIT", 1_000_000)
    assert not safety_question("tar -xzf big.tgz", work)


@pytest.mark.parametrize("name", ["hook.tar.xz", "hook.tar.bz2"])
def test_every_compression_python_reads_is_listed(name: str, work: Path) -> None:
    mode = "w:xz" if name.endswith("xz") else "w:bz2"
    with tarfile.open(work / name, mode) as archive:
        archive.addfile(tarfile.TarInfo(".git/hooks/pre-commit"), io.BytesIO())
    assert safety_question(f"tar -xf {name}", work)


def test_a_link_member_of_a_zip_is_read_no_further_than_its_target(work: Path) -> None:
    """A zip member marked as a link has its target read (4 KiB at most), never the whole."""
    info = zipfile.ZipInfo("cfg")
    info.external_attr = 0o120777 << 16
    with zipfile.ZipFile(work / "link.zip", "w") as archive:
        archive.writestr(info, ".claude")
        archive.writestr("cfg/settings.json", "{}")
    assert safety_question("unzip link.zip", work)
