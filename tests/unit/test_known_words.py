"""Words the shell computes that the check can tell beforehand (SPEC §9.3 step 1g): a glob
word is judged by the paths it matches, as Bash expands it, and a word reading ``$HOME`` at its
start by the path it spells.

Found: in bypass mode ``rm -rf build dist *.egg-info``, ``sed -i s/foo/bar/g src/*.py`` and
``rm -rf "$HOME/.cache/pip"`` asked a safety question, such a word counting as a path the shell
computes, which may be any path; in acceptEdits the first two asked as well, while ``sed -i
s/foo/bar/g src/a.py`` ran. Bash replaces a glob by the existing paths it matches (a name
beginning with ``.`` only for a pattern written with one), and ``$HOME`` by the home folder the
command's shell inherits; the check judges those paths.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import decide, safety_question

from fsm_agent.core.kinds import PermissionBehavior
from fsm_agent.runtime.permissions import PermissionMode
from fsm_agent.toolbox.glob_matches import MAX_MATCHES


@pytest.fixture
def project(home_project: Path) -> Path:
    """The home folder's project, a repository with sources, a build and a package's
    metadata; the home folder holds git's settings and a ``.bashrc``."""
    (home_project / ".git" / "hooks").mkdir(parents=True)
    (home_project / ".git" / "config").write_text("")
    for name in ("src/a.py", "src/b.py", "build/out.o", "dist/x.whl", "x.egg-info/PKG-INFO"):
        (home_project / name).parent.mkdir(parents=True, exist_ok=True)
        (home_project / name).write_text("")
    (home_project.parent / ".bashrc").write_text("")
    return home_project


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build dist *.egg-info",
        "sed -i 's/foo/bar/g' src/*.py",
        "rm -f src/*.pyc build/*",
        "chmod -R a+r *",
        "rm -rf *",  # the repository is .git, which no bare * matches
        "rm -rf ?it src/[ab].py",
        "touch src/[!a].py",
        "rm -rf [.]git",  # a bracket never matches a leading dot
        "cp src/*.py build/",
        "cp build/out.o none/*",  # no match: the word is left as written
        "mv src/* ~/.config/git/",  # a.py and b.py are no names git reads there
        "mv dist/* build",
        "rm -f ~/*.log",
        "bash -c 'rm -rf *.egg-info'",
    ],
)
def test_bypass_runs_a_glob_matching_no_protected_path(command: str, project: Path) -> None:
    assert not safety_question(command, project)


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf .*",
        "rm -rf .g*",
        "rm -rf .[g]it",
        "rm -rf \\.g?t",
        "rm -rf '.'git*",
        "rm -rf */../.git",
        "rm -rf ~/.c*",
        "rm -rf ~/.c*/git",
        "sed -i s/a/b/ ~/.bash*",
        "truncate -s0 ~/.b*",
        "chmod -R 777 ../*",  # the project holds .git
        "rm -rf ~/*",  # likewise
        "cp src/a.py ~/.c*/git/config",
        "shopt -s dotglob; rm -rf *",
        "bash -O dotglob -c 'rm -rf *'",
        "GLOBIGNORE=x; rm -rf *",
        "rm [ [x]/../.git/config",  # read by the parser as one word; Bash reads two
    ],
)
def test_bypass_asks_for_a_glob_matching_a_protected_path(command: str, project: Path) -> None:
    assert safety_question(command, project)


def test_a_glob_naming_a_start_up_file_asks_only_where_there_is_one(project: Path) -> None:
    """``~/.[b]ashrc`` is ``.bashrc`` where there is one; elsewhere the word is left as
    written, and names a file of that odd name."""
    assert safety_question("ln -sf /tmp/x ~/.[b]ashrc", project)
    (project.parent / ".bashrc").unlink()
    assert not safety_question("ln -sf /tmp/x ~/.[b]ashrc", project)


def test_a_glob_placing_a_file_under_a_protected_name_asks(project: Path) -> None:
    (project / "src" / "config").write_text("")
    assert safety_question("mv src/* ~/.config/git/", project)


def test_a_shell_given_a_start_up_script_may_match_otherwise(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``BASH_ENV`` names a script ``bash -c`` runs first, which may ``shopt -s dotglob``."""
    assert not safety_question("rm -rf *", project)
    monkeypatch.setenv("BASH_ENV", str(project / "env.sh"))
    assert safety_question("rm -rf *", project)


def test_which_match_comes_last_is_not_guessed_for_a_program_that_places(project: Path) -> None:
    """Bash sorts by the locale: ``cp f src/*`` with two matches copies into the last."""
    (project / "src" / "b.py").unlink()
    assert not safety_question("cp build/out.o src/*", project)
    (project / "src" / "b.py").write_text("")
    assert safety_question("cp build/out.o src/*", project)
    assert not safety_question("rm build/out.o src/*", project)  # rm: the order is no matter


def test_a_glob_matching_too_many_paths_asks(project: Path) -> None:
    for number in range(MAX_MATCHES + 1):
        (project / "build" / f"{number}.o").write_text("")
    assert safety_question("rm build/*.o", project)
    assert not safety_question("rm build/1*.o", project)


def test_a_glob_listing_too_many_entries_in_all_its_folders_asks(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``*/*`` lists every folder it passes: their entries together are bounded, not each
    folder's alone (a tree of many folders would be listed whole on every check)."""
    for folder in ("a", "b", "c"):
        for number in range(5):
            (project / "build" / folder / f"{number}.o").parent.mkdir(parents=True, exist_ok=True)
            (project / "build" / folder / f"{number}.o").write_text("")
    monkeypatch.setattr("fsm_agent.toolbox.glob_matches.MAX_TREE_ENTRIES", 12)
    assert not safety_question("rm build/a/*.o", project)  # 5 entries
    assert safety_question("rm build/*/*.o", project)  # 4 + 15 entries


def test_a_glob_after_cd_asks(project: Path) -> None:
    """The control: where the shell may be in several folders, a glob may start from any."""
    assert safety_question("cd src; rm -f *.py", project)


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf $HOME/.cache/pip",
        'rm -rf "$HOME/.cache"',
        'mkdir -p "${HOME}/projects/new"',
        "chmod 700 $HOME/.local",
        'rm -rf "$HOME/.cache" build/*',
        "./configure --prefix=$HOME/.local",
    ],
)
def test_bypass_runs_a_word_reading_home_that_names_no_protected_path(
    command: str, project: Path
) -> None:
    assert not safety_question(command, project)


@pytest.mark.parametrize(
    "command",
    [
        'rm "$HOME"/.bashrc',
        "rm -rf ${HOME}/.config",
        "rm -rf $HOME/.config/git",
        "rm -rf $HOME/project/../.config",
        'cp src/a.py "$HOME/.profile"',
        "chmod -R 700 $HOME",  # it holds git's settings
        "cp src/a.py --target-directory=$HOME/.config/git/config",
        "tar -xf x.tar --directory=$HOME",
        "echo x >> $HOME/.bashrc",  # a redirection's target stays computed
        # the command sets HOME, or something else may run with another
        "HOME=/tmp rm -rf $HOME/.config",
        "read HOME; rm -rf $HOME/.config",
        "sudo rm -rf $HOME/.config",
        "bash -c 'rm -rf $HOME/.config'",
        # more than $HOME computed
        "rm -rf $HOME/$X",
        "rm -rf ${HOME%/*}/home/.config",
    ],
)
def test_bypass_asks_for_a_word_reading_home_that_may_name_one(command: str, project: Path) -> None:
    assert safety_question(command, project)


def accepted(command: str, cwd: Path) -> bool:
    """Whether acceptEdits runs ``command`` with nobody to ask."""
    decided = decide(command, cwd, mode=PermissionMode.ACCEPT_EDITS)
    return decided.behavior is PermissionBehavior.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "sed -i 's/foo/bar/g' src/*.py",
        "rm -rf build dist *.egg-info",
        "mkdir -p out && cp src/*.py out/",
        "mv dist/* build",
        "rm -f src/[ab].py",
        'for f in src/*.py; do sed -i s/a/b/ "$f"; done',  # the loop's f= changes nothing else
        'out=build; rm -rf "$out"',
    ],
)
def test_accept_edits_runs_a_glob_matching_files_inside(command: str, project: Path) -> None:
    assert accepted(command, project)


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf .*",  # . and .. too, in a Bash before 5.2
        "rm -rf ../*",  # outside the working folder
        "cp src/* ../",
        "sed -i s/a/b/ .g*/config",
        "rm -rf *",  # a folder of the project holds a repository
        "cd src && rm -f *.py",  # more than one folder the shell may be in
        "cp build/out.o src/*",  # which match comes last is a guess
        "rm -rf $HOME/.cache",  # outside
        'for f in src ../x; do rm -rf "$f"; done',
        "d=build; rm -rf $d",  # unquoted: split and matched again
        "PATH=/tmp; rm -rf build",  # a variable that changes what runs
        "for PATH in /tmp; do rm -rf build; done",
    ],
)
def test_accept_edits_asks_for_a_glob_reaching_further(command: str, project: Path) -> None:
    if command == "rm -rf *":
        (project / "vendor" / ".git").mkdir(parents=True)  # a folder holding a repository
    assert not accepted(command, project)


@pytest.mark.parametrize(
    "command",
    [
        'for f in src/*.py; do sed -i s/a/b/ "$f"; done',
        'for f in build dist; do rm -rf "$f"; done',
        'for f in src/*.pyc; do rm -f "${f}"; done',
        'for f in *.egg-info; do echo "$f"; rm -rf "$f"; done',
    ],
)
def test_bypass_runs_a_loop_over_paths_naming_no_protected_one(command: str, project: Path) -> None:
    assert not safety_question(command, project)


@pytest.mark.parametrize(
    "command",
    [
        'for f in .*; do rm -rf "$f"; done',
        'for f in ~/.bashrc; do sed -i s/a/b/ "$f"; done',
        'for f in ~/.config; do rm -rf "$f"; done',
        'for d in ../*; do rm -rf "$d"; done',  # the project holds .git
        # the variable set otherwise too, or read otherwise
        'for f in src; do f=~/.config; rm -rf "$f"; done',
        'for f in src; do read f; rm -rf "$f"; done',
        'for f in src; do printf -v f %s ~/.config; rm -rf "$f"; done',
        'for f in src; do rm -rf "${f:=~/.config}"; done',
        'for f in src; do : $((f=1)); rm -rf "$f"; done',
        "for f in src; do rm -rf $f; done",  # unquoted: split and matched again
        'for f in src; do rm -rf "$f/../.."; done',
        'for f in $DIRS; do rm -rf "$f"; done',
        'for f; do rm -rf "$f"; done',  # the script's arguments
        'for f in src; do :; done; for f in ~/.config; do rm -rf "$f"; done',
        'cd src; for f in ../*; do rm -rf "$f"; done',
    ],
)
def test_bypass_asks_for_a_loop_that_may_reach_a_protected_path(
    command: str, project: Path
) -> None:
    assert safety_question(command, project)


def test_a_loop_variable_the_environment_sets_is_not_taken_for_the_loop(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read before its loop, the variable holds what the environment gives it."""
    command = 'rm -rf "$f"; for f in build; do :; done'
    assert not safety_question(command, project)
    monkeypatch.setenv("f", str(project.parent / ".config"))
    assert safety_question(command, project)


@pytest.mark.parametrize(
    "command",
    [
        'tmp=$(mktemp -d); cd "$tmp"; git clone https://example.com/x.git; rm -rf "$tmp"',
        'tmp="$(mktemp -d)" && cd "$tmp" && touch a',
        'd=build; rm -rf "$d"',
        'out="dist"; rm -rf "${out}"',
    ],
)
def test_bypass_runs_a_variable_the_command_sets_once_to_no_protected_path(
    command: str, project: Path
) -> None:
    assert not safety_question(command, project)


@pytest.mark.parametrize(
    "command",
    [
        'd=~/.config; rm -rf "$d"',  # ~ is expanded in an assignment: not taken as text
        'd="$HOME/.config"; rm -rf "$d"',
        'd=build; d=../; rm -rf "$d"',
        'd=build; read d; rm -rf "$d"',
        'd=build; export d=..; rm -rf "$d"',
        'd=build; : ${d:=x}; rm -rf "$d"',
        'd=..; rm -rf "$d"',  # the project's folder holds .git
        'cd "$d"; rm -rf .config',  # set by nothing in the command: the environment's
        't=$(mktemp -d ~/x.XXXX); cd "$t"; rm -rf ../.config',  # made where the home is
        "d=build; env d=.. bash -c 'rm -rf \"$d\"'",  # set again, for the inner shell
        # the inner shell's d is its own (empty here): the word is "/…/.config"
        "d=build; bash -c 'rm -rf \"$d{home}/.config\"'",
        "for d in build; do sh -c 'rm -rf \"$d{home}/.config\"'; done",
    ],
)
def test_bypass_asks_for_a_variable_set_otherwise_or_to_a_protected_path(
    command: str, project: Path
) -> None:
    assert safety_question(command.replace("{home}", str(project.parent)), project)


def test_a_new_folder_is_made_where_tmpdir_says(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = 'tmp=$(mktemp -d); cd "$tmp"; rm -rf ../git'
    monkeypatch.setenv("TMPDIR", str(project / "build"))
    assert not safety_question(command, project)
    monkeypatch.setenv("TMPDIR", str(project.parent / ".config"))
    assert safety_question(command, project)  # ~/.config/git: git's settings


@pytest.mark.parametrize(
    "command",
    [
        'tmp=$(mktemp -d); cp src/a.py "$tmp/"; rm -rf "$tmp"',
        'for f in src/*.py; do sed -i.bak s/a/b/ "$f" && rm -f "$f.bak"; done',
        'out=build; rm -rf "$out/cache" "${out}"/x.o',
    ],
)
def test_bypass_runs_a_read_followed_by_a_plain_path(command: str, project: Path) -> None:
    assert not safety_question(command, project)


@pytest.mark.parametrize(
    "command",
    [
        'd=..; rm -rf "$d/.git"',
        'for f in src; do cp src/a.py "$f/../../.bashrc"; done',
        'd=..; rm -rf "$d"/.config',
        # one text read two ways: unquoted, the loop's word is split into two paths
        'for f in "x {home}/.bashrc"; do rm $f "$f"; done',
    ],
)
def test_bypass_asks_for_a_read_leading_to_a_protected_path(command: str, project: Path) -> None:
    assert safety_question(command.format(home=project.parent), project)


def test_a_loop_runs_its_body_once_for_each_word(project: Path) -> None:
    """``cp "$f" "$f.bak"`` over two files copies each to its own name: judged once per
    word, not as one ``cp`` of every file into the last name (which asked)."""
    assert not safety_question('for f in src/*.py; do cp "$f" "$f.bak"; done', project)
    assert not safety_question('for d in src build; do cp build/out.o "$d"; done', project)
    assert safety_question('for d in src ~/.config/git; do cp src/config "$d"; done', project)
    assert safety_question('for f in src ~; do cp src/a.py "$f/.bashrc"; done', project)


@pytest.mark.parametrize(
    "command",
    [
        'for f in src/*.py; do sort "$f" > "$f.sorted"; done',
        'tmp=$(mktemp -d); echo x > "$tmp/out.txt"',
        'echo x >> "$HOME/.cache/x.log"',
        "echo x > build/*.o",  # one match: written
        "echo x > *.none",  # none: a file of that name
        'd=build; cat src/a.py > "$d/a.txt"',
    ],
)
def test_bypass_runs_a_redirection_to_a_told_path(command: str, project: Path) -> None:
    assert not safety_question(command, project)


@pytest.mark.parametrize(
    "command",
    [
        'echo x >> "$HOME/.bashrc"',
        "echo x > .g*/config",
        "> .gi?/config",
        "echo x > src/*.py",  # two matches: Bash refuses, but which is not told
        'd=..; echo x > "$d/.git/config"',
        'for f in src ~; do echo x > "$f/.bashrc"; done',
        "echo x > $F",
        "echo x > ~/.bash*",
    ],
)
def test_bypass_asks_for_a_redirection_that_may_reach_a_protected_path(
    command: str, project: Path
) -> None:
    assert safety_question(command, project)


@pytest.mark.parametrize(
    "command",
    [
        # where mktemp makes its folder is the command's TMPDIR
        'export TMPDIR={home}/.config; cd "$(mktemp -d)"; rm -rf ../git',
        'TMPDIR={home}/.config; t=$(mktemp -d); cd "$t"; rm -rf ../git',
        'read TMPDIR <<< {home}/.config; cd "$(mktemp -d)"; rm -rf ../git',
        # names the shell gives values of its own
        'BASH_REMATCH=build; [[ {home}/.config =~ .* ]]; rm -rf "$BASH_REMATCH"',
        '_=build; ls {home}/.config; rm -rf "$_"',
        'for _ in build; do ls {home}/.config; rm -rf "$_"; done',
    ],
)
def test_bypass_asks_where_the_shell_gives_a_name_its_own_value(
    command: str, project: Path
) -> None:
    """Found: the first two ran unasked, deleting git's settings: mktemp made its folder in
    the TMPDIR the command set, not the one the check read from the environment."""
    assert safety_question(command.replace("{home}", str(project.parent)), project)
