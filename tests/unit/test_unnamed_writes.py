"""An Edit rule covers the files a command writes without a word naming them.

Found in bypass mode with ``Edit(./src/**)`` denied: ``echo x > src/a.py`` and ``touch
src/new.py`` were denied by their words, but ``cp evil.py src/``, ``cp -t src evil.py``,
``install evil.py src/``, ``tar -xf a.tar`` (holding ``src/a.py``), ``unzip -o a.zip``,
``python3 -m zipfile -e a.zip .``, ``patch -p1 < x.patch``, ``git apply x.patch``, ``rsync -a
other/ .``, ``rm -rf src``, ``git checkout other -- src``, ``git reset --hard``, ``git stash
pop``, ``git rm -r src``, ``git mv src old``, ``git clean -fdx`` and ``find . -name a.py -exec
sed -i s/x/y/ {} +`` wrote there unasked. Each now asks
(even in bypass mode, as an unnamed read does under a Read rule; with no one to ask, it is
denied), while writes elsewhere run.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_hostile_commands import decide

from fsm_agent import PermissionMode
from fsm_agent.core.kinds import DecisionSource, PermissionBehavior
from fsm_agent.core.shell_commands import analyse_command
from fsm_agent.toolbox.unnamed_writes import unnamed_writes

RULE = "Edit(./src/**)"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder with ``src``, ``build``, another tree holding ``src/a.py``, an archive
    of each kind holding ``src/a.py`` and a patch of it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    (tmp_path / "build").mkdir()
    (tmp_path / "other" / "src").mkdir(parents=True)
    (tmp_path / "other" / "src" / "a.py").write_text("x")
    (tmp_path / "evil.py").write_text("x")
    (tmp_path / "a.txt").write_text("")
    with tarfile.open(tmp_path / "a.tar", "w") as archive:
        archive.addfile(tarfile.TarInfo("src/a.py"), io.BytesIO())
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as archive:
        archive.writestr("src/a.py", "x")
    (tmp_path / "x.patch").write_text("--- a/src/a.py\n+++ b/src/a.py\n@@ -0,0 +1 @@\n+x\n")
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        "cp evil.py src/",
        "cp evil.py src",
        "cp -t src evil.py",
        "mv evil.py src",
        "install evil.py src/",
        "ln -s ../evil.py src/",
        "rsync -a other/ .",
        "cp -r other/. .",
        "tar -xf a.tar",
        "tar -xf a.tar -C src",
        "unzip -o a.zip",
        "python3 -m zipfile -e a.zip .",
        "patch -p1 < x.patch",
        "git apply x.patch",
        "rm -rf src",
        "chmod -R 777 src",
        "mv src old",
        "git checkout other -- src",
        "git reset --hard",
        "git stash pop",
        "git rm -r src",
        "git -C src rm a.py",
        "git mv src old",
        "git clean -fdx",
        # found: ran unasked in bypass mode
        "git submodule update --init",
        "git -C src submodule update",
        "git format-patch -o src HEAD~1",
        "git format-patch --output-directory=src HEAD~1",
        "git format-patch -osrc HEAD~1",
        "find . -name a.py -exec sed -i s/x/y/ {} +",
        "find . -delete",
        "git ls-files | xargs sed -i s/x/y/",
        'f=src/a.py; echo x > "$f"',
    ],
)
def test_an_edit_rule_covers_a_write_no_word_names(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={RULE})
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.rule == RULE
    assert decided.source is DecisionSource.NO_ONE_TO_ASK  # asked; headless, no one answered


@pytest.mark.parametrize(
    "command",
    [
        "cp a.txt build/",
        "cp -r src build/",  # reads src
        "rsync -a src/ build/",
        "rm -rf build",
        "tar -xf a.tar -C build",
        "tar -x -C build -f a.tar",
        "unzip a.zip -d build",
        "find build -delete",
        "mv a.txt b.txt",
        "git status",
        "git rm -r --cached src",  # the index only
        "git mv a.txt b.txt",
        "git clean -n",
        "git clean -fd build",
        "git format-patch -o build HEAD~1",
        "git submodule status",
    ],
)
def test_writes_elsewhere_still_run(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={RULE})
    assert decided.behavior is PermissionBehavior.ALLOW


def test_where_each_write_lands(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "d").mkdir()

    def writes(command: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        found = unnamed_writes(analyse_command(command).parts[0], tmp_path)
        return found.files, found.folders

    assert writes("cp a b c/") == (("c/a", "c/b"), ())
    assert writes("cp -r d c") == ((), ("c/d",))  # a folder: anything under it
    assert writes("cp -t c a") == (("c/a",), ())
    assert writes("cp a.py b.py") == ((), ())  # b.py is named
    assert writes("mv a c") == (("c/a",), ("a",))
    assert writes("rm -r x y") == ((), ("x", "y"))
    assert writes("tar -xzf a.tgz -C out") == ((), ("out",))
    assert writes("unzip a.zip") == ((), (".",))
    assert writes("find x y -delete") == ((), ("x", "y"))
    assert writes("git -C w reset --hard") == ((), (str(tmp_path / "w"),))
    assert writes("sed -i s/a/b/ src/*.py") == ((), ("src/",))
    assert writes("echo $HOME") == ((), ())
    assert writes('echo x > "$f"') == ((), ("/",))


def test_a_copy_is_judged_by_the_names_it_lands_under(work: Path) -> None:
    """A rule on a name at any depth (``.env``) asks for a copy that lands one, not for every
    copy into a folder."""
    (work / "other" / ".env").write_text("KEY=x\n")
    for command, asks in (
        ("cp a.txt build/", False),
        ("cp other/.env build/", True),
        ("cp -t build other/.env", True),
        ("cp -r other build/", True),  # a folder that may hold one
    ):
        decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Edit(.env)"})
        assert (decided.behavior is PermissionBehavior.DENY) is asks, command
