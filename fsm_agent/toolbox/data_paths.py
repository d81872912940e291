"""What the patch and archive readers share: judging the paths a command's data names.

A patch (:mod:`~fsm_agent.toolbox.patch_targets`) and an archive
(:mod:`~fsm_agent.toolbox.archive_members`) name the files they write inside themselves. Both
readers judge those names the same way (:func:`protected_in`), and both give up when another
part of the same command may write the file they would read (:func:`named_by_another`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fsm_agent.core.shell_commands import CommandAnalysis, CommandPart
from fsm_agent.toolbox.paths import is_protected

UNTOLD: Final = "\x00"
"""Where the data comes from cannot be told (an option we do not know): never a file's name."""


def protected_in(name: str, cwd: Path) -> bool:
    """Whether the path ``name`` the data holds is protected, judged at every depth a strip
    may cut it to (``b/cfg/x`` is ``cfg/x`` with ``-p1`` or ``--strip-components=1``, and
    ``cfg`` may be a link to ``.claude``)."""
    parts = Path(name.strip('"')).parts
    return any(is_protected(cwd.joinpath(*parts[strip:])) for strip in range(len(parts)))


def named_by_another(name: str, part: CommandPart, analysis: CommandAnalysis) -> bool:
    """Whether a part of ``analysis`` other than ``part`` names ``name`` (it may write the file
    before ``part`` reads it: ``printf ... > x.diff && git apply x.diff``). A wrapper holding
    ``part`` whole (``xargs tar -xf x.tar``, ``sh -c 'git apply x.diff'``) does not count."""
    text = " ".join(part.argv)
    for other in analysis.parts:
        if other is part or text in " ".join(other.argv):
            continue
        words = (*other.argv[1:], *(redirect.target for redirect in other.redirects))
        if any(name in word for word in words):
            return True
    return False
