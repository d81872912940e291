"""Read-only judgement: programs and their options by allowlist, reads kept inside the folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsm_agent.core.read_only_commands import ReadOnlyVerdict, judge_read_only
from fsm_agent.core.shell_commands import analyse_command

CWD = "/srv/project"
HOME = "/home/user"


def judge(command: str, *, roots: tuple[str, ...] = ()) -> ReadOnlyVerdict:
    """The verdict on ``command`` run in CWD, lexical paths only."""
    return judge_read_only(analyse_command(command), cwd=CWD, readable_roots=roots, home=HOME)


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la src",
        "ls --color=auto -1",
        "cat README.md",
        "cat -n src/a.py | head -20",
        "head -n 5 a.txt",
        "head -5 a.txt",
        "tail -f log.txt",
        "wc -l a.txt b.txt",
        "grep -rn 'def main' src",
        "grep -E 'a|b' -- -weird-name",
        "grep -e pattern file",
        "egrep -i x y",
        "rg -n --hidden todo",
        "rg --files",
        "rg -e foo -e bar src",
        "find . -name '*.py' -type f",
        "find src -maxdepth 2 -not -path './.git/*' -print",
        "sort a.txt",
        "sort -rn -k 2 a.txt | uniq -c",
        "uniq -c a.txt",
        "diff -u a.txt b.txt",
        "cut -d, -f2 data.csv",
        "tr a-z A-Z < in.txt",
        "stat a.txt",
        "du -sh .",
        "df -h",
        "file a.bin",
        "tree -L 2",
        "echo hello world",
        "echo -n 'a > b'",
        "printf '%s\\n' x",
        "pwd",
        "date +%Y",
        "which python",
        "test -f a.txt && cat a.txt",
        "[ -d src ] || echo none",
        "true",
        "sha256sum a.txt",
        "git status",
        "git status --porcelain=v1 -b",
        "git log --oneline -5",
        "git log -p --stat -- src",
        "git diff HEAD~1 --stat",
        "git diff --cached --name-only",
        "git show HEAD:README.md",
        "git branch -a",
        "git branch --list 'feat*'",
        "git rev-parse --show-toplevel",
        "git ls-files -z",
        "git blame -L 1,10 a.py",
        "git diff -U5 --unified=1",
        "git log -p -U1 --format=%h --min-parents=2",
        "git shortlog -n -s --format '%an'",
        "git blame --reverse HEAD~3..HEAD a.py",
        "git --no-pager log -1",
        "git tag -l",
        "git remote -v",
        "git grep -n todo",
        "git --version",
        "ls 2>/dev/null",
        "ls 2>&1 | grep x",
        "cat a.txt >/dev/null 2>&1",
        "LC_ALL=C sort a.txt",
        "cat <<EOF\nhello\nEOF",
        "grep x <<< 'some text'",
        "/usr/bin/ls -l",
        "ls; " * 49 + "ls",
    ],
)
def test_read_only_commands_are_allowed(command: str) -> None:
    """Everyday looking-around commands are judged read-only."""
    verdict = judge(command)
    assert verdict.read_only, verdict.reason


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm x", "`rm x`: rm is not on the read-only list"),
        ("ls && rm x", "`rm x`: rm is not on the read-only list"),
        ("sort -o out a.txt", "sort -o is not a read-only option"),
        ("sort -ro out a.txt", "sort -o is not a read-only option"),
        ("sort --outp=out a.txt", "sort --outp (that is --output) is not a read-only option"),
        ("sort --o=out a.txt", "sort --o (that is --output) is not a read-only option"),
        ("sort --rev a.txt", "sort --rev abbreviates --reverse; spell options out in full"),
        ("sort --bogus a.txt", "sort: --bogus is not an option we know"),
        ("sort -T /tmp a.txt", "sort -T is not a read-only option"),
        ("uniq in.txt out.txt", "uniq with more than 1 operand(s) writes or changes"),
        ("wc --files0-from=list", "wc --files0-from is not a read-only option"),
        ("sort --files0-from=list", "sort --files0-from is not a read-only option"),
        ("md5sum -c sums", "md5sum -c is not a read-only option"),
        ("git grep --textconv x", "git grep --textconv is not a read-only option"),
        ("git log '--format=%h %G?'", "checks signatures, running gpg"),
        ("git tag --format='%(signature)'", "checks signatures, running gpg"),
        # found: a placeholder's line-break or blank modifier hid it
        ("git log --format=%+GS", "checks signatures, running gpg"),
        # found: a value git takes only joined to its option was taken from the next word, so
        # the option there was not judged (each wrote, or emptied, the file named)
        ("git diff -U --output=x", "git diff --output is not a read-only option"),
        ("git log -p --unified --output=x", "git log --output is not a read-only option"),
        ("git show --format --output=x", "git show --output is not a read-only option"),
        ("git log --min-parents --output=x", "git log --output is not a read-only option"),
        ("git shortlog -n --output=x", "git shortlog: --output is not an option we know"),
        ("git shortlog --committer --output=x", "git shortlog: --output is not an option"),
        ("git blame --reverse --output=x a.txt", "git blame: --output is not an option"),
        ("git show -s '--pretty=tformat:%-G?'", "checks signatures, running gpg"),
        ("git shortlog '--format=% GK'", "checks signatures, running gpg"),
        ("git tag -l --format='%(*signature)'", "checks signatures, running gpg"),
        ("git diff --output=x", "git diff --output is not a read-only option"),
        ("git diff --outp=x", "git diff: --outp is ambiguous"),
        ("git log --output x", "git log --output is not a read-only option"),
        ("git -c color.ui=always log", "git -c is not a read-only option"),
        # the pager is followed: a shell reading git's output as commands
        ("git -c core.pager=sh log", "a shell reading commands from its input"),
        ("git --exec-path=/tmp log", "git --exec-path is not a read-only option"),
        ("git -C /tmp status", "git -C is not a read-only option"),
        ("git diff --ext-diff", "git diff --ext-diff is not a read-only option"),
        ("git grep -O x", "git grep -O is not a read-only option"),
        ("git commit -m x", "git commit is not on the read-only list"),
        ("git branch new", "git branch with a name creates it"),
        ("git branch -D old", "git branch -D is not a read-only option"),
        ("git tag v1", "git tag with a name creates it"),
        ("git remote add o url", "git remote with more than 0 operand(s)"),
        ("find . -delete", "find -delete deletes files"),
        ("find . -exec cat {} +", "find -exec runs a command"),
        ("find . -fprint out", "find -fprint writes a file"),
        ("find . -newermt 2020", "find -newermt is not known to be read-only"),
        ("rg --pre=sh x", "rg --pre is not a read-only option"),
        ("rg -z x", "rg -z is not a read-only option"),
        ("tree -o out", "tree -o is not a read-only option"),
        # found: it sets the times of each file it read back, a write the nanoseconds show
        ("file -p a.txt", "file -p is not a read-only option"),
        ("file --preserve-date a.txt", "file --preserve-date is not a read-only option"),
        ("date -s 2020-01-01", "date -s is not a read-only option"),
        ("date 0101", "sets the clock"),
        ("printf -v x y", "printf -v assigns a shell variable"),
        ("echo hi > out", "writes to out (>)"),
        ("echo hi >> out", "writes to out (>>)"),
        ("echo hi &> out", "writes to out (&>)"),
        ("echo hi 2> err", "writes to err (2>)"),
        ("echo hi >&out", "redirects with >& out"),
        ("cat < $F", "which the shell computes"),
        ("env", "env prints the environment"),
        ("printenv", "printenv prints the environment"),
        ("set", "set prints the shell's variables"),
        ("export -p", "export prints or changes the environment"),
        ("declare -p", "declare prints or changes shell variables"),
        ("compgen -v", "compgen can list the environment"),
        ("echo $HOME", "uses $HOME, which the shell computes"),
        ('echo "$(id)"', "uses $(id), which the shell computes"),
        ("ls *", "uses *, which the shell computes"),
        ("PATH=. ls", "'PATH=.' sets what runs later"),
        ("X=$(id) ls", "sets X for the program"),
        ("PATH=.", "'PATH=.' sets what runs later"),
        ("X=.", "assigns shell variables"),
        ("timeout 5 ls", "timeout is not on the read-only list"),
        ("xargs ls", "xargs is not on the read-only list"),
        ("./ls", "runs the program file ./ls"),
        ("less a.txt", "less is not on the read-only list"),
        ("awk '{print}' a.txt", "awk is not on the read-only list"),
        ("tee out", "tee is not on the read-only list"),
        ("ls 'open", "cannot be analysed"),
        ("", "there is no command to run"),
        ("ls; " * 50 + "ls", "more than 50"),
    ],
)
def test_anything_not_proven_read_only_is_refused_with_a_reason(command: str, reason: str) -> None:
    """Writers, runners, environment printers and unknowns are refused, naming why."""
    verdict = judge(command)
    assert not verdict.read_only
    assert reason in verdict.reason


@pytest.mark.parametrize(
    "command",
    [
        "cat /etc/passwd",
        "cat ../secret",
        "cat src/../../secret",
        "cat ~/.ssh/id_rsa",
        "cat ~root/.bashrc",
        "ls /",
        "grep -r key /etc",
        "grep -f /etc/shadow x",
        "rg key ~",
        "find / -name id_rsa",
        "find . -newer /etc/shadow",
        "cat < /etc/passwd",
        "grep --exclude-from=/etc/list x .",
        "git log -- ../other",
        "git diff /etc/passwd a",
        "diff --from-file=/etc/hosts a",
        "test -f ~/.netrc",
        "head -c 10 /proc/self/environ",
    ],
)
def test_reads_outside_the_working_folder_are_refused(command: str) -> None:
    """A path (operand, path option or ``<`` source) outside the folder and roots asks."""
    verdict = judge(command)
    assert not verdict.read_only
    assert "outside the working folder" in verdict.reason


@pytest.mark.parametrize(
    "command",
    [
        "grep -R key .",
        "grep --dereference-recursive key .",
        "rg --follow key",
        "find -L . -name x",
        "find . -follow -name x",
        "ls -LR",
        "du -L .",
        "tree -l",
        "diff -r a b",
    ],
)
def test_options_that_follow_symlinks_while_walking_are_refused(command: str) -> None:
    """A walk that follows links could leave the folder through one, so it asks."""
    assert not judge(command).read_only


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("cd src && ls", True),
        ("cd src; git status", True),
        ("cd src && cd lib && cat a.py", True),
        ("cd -P src && ls", True),
        ("cd .. && ls", False),
        ("cd /etc && cat passwd", False),
        ("cd && ls", False),
        ("cd ~ && ls", False),
        ("cd - && ls", False),
        ("cd $DIR && ls", False),
        ("cd src && cat ../README.md", False),
        ("(cd src; ls); cat ../x", False),
    ],
)
def test_cd_inside_the_folder_is_followed(command: str, read_only: bool) -> None:
    """``cd`` inside the folder is read-only; later paths must stay inside from either folder."""
    assert judge(command).read_only is read_only


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("sed -n '1,20p' a.txt", True),
        ("sed -n 5p a.txt", True),
        ("sed 's/a/b/g' a.txt", True),
        ("sed -e 's|a|b|' -e '/x/d' a.txt", True),
        ("sed -n '/start/,/end/p' a.txt", True),
        ("sed '1!G;h;$!d' a.txt", True),
        ("sed -n '/a/{s/x/y/p}' a.txt", True),
        ("sed 's/a\\/b/c/' a.txt", True),
        ("sed y/abc/xyz/ a.txt", True),
        ("sed -i s/a/b/ a.txt", False),
        ("sed -ni p a.txt", False),
        ("sed --in-pl s/a/b/ a.txt", False),
        ("sed -f script a.txt", False),
        ("sed 's/a/b/w out' a.txt", False),
        ("sed 's/x/y/;s/a/b/gw out' a.txt", False),
        ("sed 's/a/b/e' a.txt", False),
        ("sed 'w out' a.txt", False),
        ("sed 'W out' a.txt", False),
        ("sed '1e rm x' a.txt", False),
        ("sed e a.txt", False),
        ("sed 'r /etc/passwd' a.txt", False),
        ("sed '/a/{w x\n}' a.txt", False),
        ("sed p /etc/passwd", False),
        # a label ends at a blank, and what follows is a command (found: it wrote and ran)
        ("sed -n ':a w out' a.txt", False),
        ("sed ':a\te rm x' a.txt", False),
        ("sed -n '/x/{:a w out\n}' a.txt", False),
        ("sed -e p -e ':a e rm x' a.txt", False),
        ("sed ':a;N;$!ba;s/\\n/ /g' a.txt", True),
        ("sed -n ':a p' a.txt", True),
        # a label is on its command's line (found: `e` on the next line was read as the label
        # of `t`, and ran each line of the file as a command)
        ("sed -n 't\ne' a.txt", False),
        ("sed 'T\ne' a.txt", False),
        ("sed -n 's/a/b/;t \ne' a.txt", False),
        ("sed -n 't\np' a.txt", True),
    ],
)
def test_sed_is_read_only_only_with_a_printing_script(command: str, read_only: bool) -> None:
    """sed passes with printing commands only: no -i, no w/W/r/R/e, no s///w or s///e."""
    assert judge(command).read_only is read_only


def test_cd_after_cd_is_bounded() -> None:
    """Each ``cd`` doubles the folders to check from; too many ask."""
    verdict = judge("".join(f"cd d{n}; " for n in range(5)) + "ls")
    assert not verdict.read_only
    assert "folders the shell may be in" in verdict.reason


def test_readable_roots_widen_where_reading_is_allowed() -> None:
    """A file under an additional readable folder may be read."""
    assert judge("cat /data/shared/a.txt", roots=("/data/shared",)).read_only
    assert not judge("cat /data/other/a.txt", roots=("/data/shared",)).read_only
    assert not judge("cat /data/shared-not/a.txt", roots=("/data/shared",)).read_only


def test_the_home_folder_is_what_tilde_means() -> None:
    """``~`` resolves to the given home; it is readable only when it is a readable root."""
    assert judge("cat ~/notes.txt", roots=(HOME,)).read_only


def test_symlinks_are_followed_with_a_resolver(tmp_path: Path) -> None:
    """With ``os.path.realpath`` as resolver, a link inside pointing outside is refused."""
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret").write_text("key")
    (work / "link").symlink_to(tmp_path / "secret")
    (work / "plain.txt").write_text("ok")
    cwd = os.path.realpath(work)

    def verdict(command: str) -> bool:
        analysis = analyse_command(command)
        return judge_read_only(
            analysis, cwd=cwd, readable_roots=(), home=HOME, resolve=os.path.realpath
        ).read_only

    assert verdict("cat plain.txt")
    assert not verdict("cat link")


def test_a_wrapped_read_only_command_is_not_read_only() -> None:
    """The wrapper itself is never read-only, whatever it runs."""
    verdict = judge("sudo ls")
    assert (verdict.read_only, verdict.reason) == (
        False,
        "`sudo ls`: sudo is not on the read-only list",
    )


def test_the_reason_names_the_first_part_that_is_not_read_only() -> None:
    """Earlier read-only parts are passed over; the refusal quotes the offending part."""
    verdict = judge("ls | grep x && cat a > b")
    assert verdict.reason == "`cat a`: writes to b (>)"


@pytest.mark.parametrize(
    "command",
    [
        "ls; (( 'a[$(touch x)]' ))",
        'ls; (( "a[\\$(touch x)]" ))',
        "ls; (( x ))",
        "for (( i=0; i<2; i++ )); do ls; done",
        "test -v 'a[$(touch x)]'",
        "[ -v 'a[1]' ]",
        "[ ! -R 'a[`touch x`]' ]",
        "let 'a[$(touch x)]'",
        "[[ 'a[$(touch x)]' -eq 1 ]]",
        "cat <<-E\n\t$(touch x)\n\tE",
        "cat <<E\n$ANTHROPIC_API_KEY\nE",
    ],
)
def test_arithmetic_and_array_subscripts_are_never_read_only(command: str) -> None:
    """Bash computes ``(( ))``, ``NAME[...]`` subscripts and unquoted heredoc bodies, running
    any ``$(...)`` in them (or printing the environment)."""
    assert not judge(command).read_only


def test_arithmetic_expansion_of_a_quoted_word_asks() -> None:
    """``echo $(( 'rm' ))`` is arithmetic (Bash refuses it), and is still not read-only."""
    verdict = judge("echo $(( 'rm' ))")
    assert not verdict.read_only
    assert "which the shell computes" in verdict.reason


def test_test_v_of_a_plain_name_is_read_only() -> None:
    """``[ -v HOME ]`` only looks a variable up, so it stays read-only."""
    assert judge("[ -v HOME ] && test -v PATH").read_only


def test_a_heredoc_of_plain_or_quoted_text_stays_read_only() -> None:
    """A heredoc without ``$`` or backquotes, or with a quoted delimiter, is data."""
    assert judge("cat <<E\nplain text\nE").read_only
    assert judge("cat <<'E'\n$HOME $(id)\nE").read_only
