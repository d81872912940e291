"""Where ``~``, ``cd`` and ``cd -`` lead, as the command's shell decides it.

Found in bypass mode, where a write to a protected path still asks: the checks expanded ``~``
to the home folder and took ``cd -`` as a folder named ``-``, but the shell follows its own
variables and folder stack. ``HOME=/; rm -rf ~/home/me/.config``, ``read HOME <<< /``,
``HOME=/ bash -c '…'``, ``OLDPWD=~; cd - && rm -rf .config``, ``cd ~+/.. && rm -rf .config``
(``~+`` is the folder the shell is in) and ``pushd ~; pushd -; rm -rf ~1/.config`` each
deleted git's settings unasked; and ``cd -`` led where the terminal that started the library
had been (an inherited ``OLDPWD``). Now ``~+``, ``~-`` and ``~N`` are taken from every folder
the command may be in, the command's shell inherits no ``OLDPWD``, and a command naming
``HOME``, ``PWD``, ``OLDPWD`` or ``DIRSTACK`` but to read it asks, as does a ``CDPATH``
the command reads in or computes (one it spells out is followed, and a name beginning with a
dot, ``cd .config``, is searched for in it as Bash does).

So do ``read H""OME``, ``declare "HO"ME=…`` (the shell removes the quotes before it reads the
name), ``shopt -s cdable_vars`` (then ``h=~; cd h`` enters the home folder) and an alias a
later line runs for ``cd`` (``alias go=cd``): each deleted git's settings unasked in bypass
mode.

``cd -e DIR`` entered a folder named ``-e``; and a folder the shell computes was taken as each
path its text spells, which ``cd "$(printf '%s/.con%s' ~ fig)" && rm -rf git`` and ``cd
"$(git rev-parse --show-toplevel)/.." && rm -rf .config`` beat. Now only the options are
skipped, and a computed folder asks unless it reads ``$HOME``, ``$PWD`` or ``$OLDPWD``, is the
repository's top, the folder of a path written out (``$(dirname src/a.py)``) or a new one
``mktemp -d`` makes in ``TMPDIR``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import decide
from test_toolbox import call

from fsm_agent import PermissionMode
from fsm_agent.core.kinds import DecisionSource, PermissionBehavior
from fsm_agent.core.shell_commands import analyse_command
from fsm_agent.toolbox import Bash
from fsm_agent.toolbox.paths import expand_home, word_bases


@pytest.fixture
def work(home_project: Path) -> Path:
    """A project (a repository) in a home folder holding git's settings."""
    (home_project / ".git").mkdir()
    return home_project


ASKING = [
    "HOME=/; rm -rf ~/{home}/.config",
    "HOME=/ ; cd; rm -rf {home}/.config",
    "HOME=/ bash -c 'rm -rf ~/{home}/.config'",
    "HOME=/ eval 'rm -rf ~/{home}/.config'",
    "export HOME=/; rm -rf ~/{home}/.config",
    "read HOME <<< /; rm -rf ~/{home}/.config",
    "printf -v HOME /; rm -rf ~/{home}/.config",
    "for HOME in /; do rm -rf ~/{home}/.config; done",
    "unset HOME; : ${{HOME:=/}}; rm -rf ~/{home}/.config",
    "ln -s / 0; ((HOME=0)); rm -rf ~/{home}/.config",
    "OLDPWD=~; cd - && rm -rf .config",
    "PWD=~; rm -rf ~+/.config",
    "DIRSTACK[0]=~; rm -rf ~0/.config",
    "cd ~+/.. && rm -rf .config",
    "cd .. ; cd project; cd ~- && rm -rf .config",
    "pushd .. ; pushd project; rm -rf ~1/.config",
    "pushd .. ; pushd project; pushd +1 && rm -rf .config",
    "cd ..; cd -; rm -rf ~-/.config",
    # cd's own options
    "cd -e .. && rm -rf .config",
    "cd -@ .. && rm -rf .config",
    "cd -P -e -- .. && rm -rf .config",
    # a folder the shell computes other than by reading $HOME, $PWD, $OLDPWD
    "cd ${{PWD%/*}} && rm -rf .config",
    "cd $(dirname $(pwd)) && rm -rf .config",
    "cd \"$(printf '%s/.con%s' ~ fig)\" && rm -rf git",
    'cd "$(git rev-parse --show-toplevel)/.." && rm -rf .config',
    'cd "$(dirname ~/.config/git/config)" && echo x >> config',
    "cd ~/.con* && rm -rf git",
    # CDPATH: a name beginning with a dot is searched for, a computed or read value is not
    # known (found)
    "CDPATH=.. cd .config && rm -rf git",
    "CDPATH=~ cd .config; echo x >> git/config",
    'CDPATH="$(printf %s ~/.con)fig" cd git && echo x >> config',
    "read CDPATH <<< ~/.config; cd git; echo x >> config",
    "CDPATH+=:~/.config; cd git && echo x >> config",
    # a name the shell reads once its quotes are removed (found)
    'read H""OME <<< ~/.config; cd; rm -rf git',
    'declare "HO"ME=~/.config; cd; rm -rf git',
    "printf -v H''OME %s ~/.config; cd; rm -rf git",
    # cdable_vars: cd NAME enters $NAME when no folder is named so (found)
    "shopt -s cdable_vars; h=~; cd h; rm -rf .config",
    "shopt -s cdable_v''ars; h=~/.config; cd h && rm -rf git",
    "bash -O cdable_vars -c 'h=~; cd h; rm -rf .config'",
    "env BASHOPTS=cdable_vars bash -c 'h=~; cd h; rm -rf .config'",
    # an alias a later line runs for cd (found)
    "shopt -s expand_aliases\nalias go=cd\ngo ~\nrm -rf .config",
    "bash -ic 'alias go=cd\ngo ~\nrm -rf .config'",
    "shopt -s expand_aliases; BASH_ALIASES[go]=cd\ngo ~\nrm -rf .config",
]


@pytest.mark.parametrize("command", ASKING)
def test_where_the_shell_leads_asks_in_bypass(command: str, work: Path) -> None:
    home = str(work.parent).lstrip("/")
    decided = decide(command.format(home=home), work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.DENY, decided.reason
    assert decided.source is DecisionSource.NO_ONE_TO_ASK
    assert "protected path" in decided.reason


def test_a_path_rule_asks_when_home_is_set(work: Path) -> None:
    decided = decide(
        f"HOME={work}/..; rm -rf ~/project/src",
        work,
        mode=PermissionMode.BYPASS,
        deny={"Edit(./src/**)"},
    )
    assert decided.behavior is PermissionBehavior.DENY
    assert "Edit(./src/**)" in decided.reason
    assert "it may set HOME" in decided.reason


@pytest.mark.parametrize(
    "command",
    [
        'ls "$HOME" > listing.txt',
        "echo ${HOME%/} $PWD ${OLDPWD:-none} > where.txt",
        "cd src && cd - && rm -rf build",
        "pushd src && popd && rm -rf build",
        "cd ~+/src && rm -f a.o",
        'cd "$(git rev-parse --show-toplevel)" && echo x > src/a.py',
        'cd "$(dirname src/a.py)" && echo x > a.py',
        'cd "$(mktemp -d)" && git clone https://example.com/x.git && rm -rf x/docs',
        "cd `mktemp -d`; echo x > a.txt",
        'cd "$PWD/src" && rm -f a.o',
        # naming one of those variables matters only where ~ or cd follows it
        'echo "PWD: $PWD" > log.txt',
        'printf "PWD=%s\\n" "$PWD" >> debug.log',
        "cat > notes.md <<'EOF'\nSet HOME first\nEOF",
        "HOME=/tmp/h npm ci",
        "CDPATH=~/work cd ./src && rm -f a.o",  # ./ is never searched for
        'echo "alias ll=ls -l" >> notes.txt',  # naming an alias defines none
    ],
)
def test_plain_reads_and_moves_still_run_in_bypass(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


def test_the_shell_folders_are_relative_words(work: Path) -> None:
    assert expand_home("~+/x") == Path("x")
    assert expand_home("~-") == Path()
    assert expand_home("~12/a/b") == Path("a/b")
    assert expand_home("~+3") == Path()
    assert expand_home("~/x") == work.parent / "x"
    assert expand_home("~+x") == Path("~+x")  # a user named `+x`, who is not there
    bases = word_bases(analyse_command("cd src; cd -; pushd +1"), work)
    assert bases == [work, work / "src"]
    top = word_bases(analyse_command('cd src; cd "$(git rev-parse --show-toplevel)/x"'), work)
    assert top == [work, work / "src", work / "x"]
    assert isinstance(word_bases(analyse_command("read -r HOME; cd"), work), str)
    assert not isinstance(word_bases(analyse_command("read -r HOME"), work), str)


def test_the_command_inherits_no_oldpwd(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cd -`` at the start of a command fails instead of leading where we were."""
    monkeypatch.setenv("OLDPWD", str(tmp_path))
    finished = call(Bash(), {"command": "cd - >/dev/null 2>&1; pwd"}, work)
    assert finished.content.strip() == str(work)


@pytest.mark.parametrize(
    "command",
    [
        "cd $DIR && ls",
        "cd ${PWD%/*} && cat notes.txt 2>&1 | head",
        'cd "$(git rev-parse --git-dir)" && ls',
    ],
)
def test_a_command_that_writes_nothing_runs_wherever_it_goes(command: str, work: Path) -> None:
    """A folder the shell computes matters only to a command that writes: reading or moving
    the shell changes no protected path."""
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


@pytest.mark.parametrize("command", ["cd $DIR && ls > out.txt", "cd $DIR; ls >& out"])
def test_a_redirection_in_an_unknown_folder_asks(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.DENY, decided.reason


@pytest.mark.parametrize(
    "command",
    [
        'cd "$(mktemp -d)/.." && rm -rf {tmp}',  # the folder temporary files are kept in
        'cd "$(mktemp -d ~/x.XXXX)" && rm -rf ../.config',  # a folder made elsewhere
        'cd "$(mktemp -d)" && cd ~ && rm -rf .config',
        'cd "$(mktemp)/.." && rm -rf .config',  # a file's name, not a folder made
    ],
)
def test_a_folder_mktemp_makes_is_a_new_one_in_tmpdir(
    command: str, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cd "$(mktemp -d)"`` enters a new, empty folder in ``TMPDIR``: found asking in
    bypass mode, as any folder the shell computes; where ``TMPDIR`` holds a protected path,
    a command leaving the new folder for it asks."""
    temporary = work.parent / "tmp"
    (temporary / ".git").mkdir(parents=True)  # the folder holds a repository
    monkeypatch.setenv("TMPDIR", str(temporary))
    decided = decide(command.format(tmp=temporary), work, mode=PermissionMode.BYPASS)
    assert decided.behavior is not PermissionBehavior.ALLOW, decided.reason


def test_a_tmpdir_that_is_no_absolute_path_is_not_followed(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", "tmp")
    assert isinstance(word_bases(analyse_command('cd "$(mktemp -d)"; ls'), work), str)
    monkeypatch.setenv("TMPDIR", str(work.parent))
    bases = word_bases(analyse_command('cd "$(mktemp -d)"; ls'), work)
    assert bases == [work, work.parent / "tmp.XXXXXXXXXX"]
