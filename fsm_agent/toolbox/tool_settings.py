"""Commands that keep a setting naming a program a tool runs when it is next used.

``~/.aws/config`` and ``~/.kube/config`` are protected (:mod:`~fsm_agent.toolbox.startup_places`):
their ``credential_process`` and ``exec`` plugin run a command the next time the tool needs
credentials. The tools' own commands write those settings without naming the file: ``aws
configure set credential_process CMD``, ``kubectl config set-credentials NAME
--exec-command=CMD`` or ``kubectl config set users.NAME.exec.command CMD``. The Bash safety
check asks for them as for a write to the file (in bypassPermissions too); other settings
(``aws configure set region eu-west-1``, ``kubectl config use-context x``) run as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from fsm_agent.core.shell_commands import CommandPart


def _aws(words: Sequence[str], options: Sequence[str]) -> bool:
    """``aws configure set KEY VALUE`` with a key naming ``credential_process``."""
    if "configure" not in words:
        return False
    rest = words[words.index("configure") + 1 :]
    return rest[:1] == ["set"] and any(
        key.lower().rsplit(".", 1)[-1] == "credential_process" for key in rest[1:2]
    )


def _kubectl(words: Sequence[str], options: Sequence[str]) -> bool:
    """``kubectl config set-credentials`` with an ``--exec-…`` option, or ``kubectl config
    set`` of a key inside a user's ``exec`` (or ``auth-provider``) settings."""
    if "config" not in words:
        return False
    rest = words[words.index("config") + 1 :]
    if rest[:1] == ["set-credentials"]:
        return any(option.startswith(("--exec-", "--auth-provider")) for option in options)
    return rest[:1] == ["set"] and any(
        {"exec", "auth-provider"} & set(key.lower().split(".")) for key in rest[1:2]
    )


_SETTERS = {"aws": (_aws, "~/.aws/config"), "kubectl": (_kubectl, "~/.kube/config")}


def setting_kept(part: CommandPart) -> str | None:
    """The settings file of a tool that ``part`` makes run a program later (see the
    module's text), or None."""
    if not part.argv:
        return None
    found = _SETTERS.get(part.argv[0].rsplit("/", 1)[-1])
    if found is None:
        return None
    keeps, where = found
    args = part.argv[1:]
    words = [word for word in args if not word.startswith("-")]
    options = [word for word in args if word.startswith("-")]
    return where if keeps(words, options) else None
