"""Credentials found in configuration, so that what is shown of it never holds them (DESIGN §8).

Four shapes:

* a value under a credential's name (an ``Authorization`` header, an ``X-Api-Key``, a
  ``GITHUB_TOKEN`` environment variable; the names
  :func:`~fsm_agent.trace.redact.is_sensitive_key` judges), with the token of
  ``Bearer <token>`` alone as well; the OpenTelemetry exporter's headers
  (``OTEL_EXPORTER_OTLP_HEADERS``: ``name=value`` pairs, percent-encoded) are judged so, with
  a few vendors' key headers that the names do not cover (:data:`TELEMETRY_KEY_HEADERS`);
* a URL's credentials, which an error about the URL (a mistyped option, a space in the
  password) may quote: the password of its user info, ``scheme://user:PASSWORD@host/...``;
  user info with no password when it is shaped like a token (``https://TOKEN@host/``, as
  GitHub and Sentry take one: :func:`token_shaped`), for a user name is rarely that long and
  mixed; and a query parameter under a credential's name, ``?password=PASSWORD`` or
  ``?token=TOKEN`` (a PostgreSQL URL may carry its password either way);
* the value of a command-line option under a credential's name (``--token VALUE``,
  ``--api-key=VALUE``, ``GITHUB_TOKEN=VALUE``, ``--header "Authorization: Bearer TOKEN"``);
* the password a known program takes in an option a name does not tell
  (:data:`PROGRAM_PASSWORD_OPTIONS`: ``mysql -pVALUE``, ``sshpass -p VALUE``,
  ``curl -u user:VALUE``, ``htpasswd -b FILE USER VALUE``, ...). Only the programs listed,
  and only after the program's name in the command: ``-p`` means a port, a path or a prompt
  to others, and even ``mysql -p VALUE`` names a database, not a password.

An environment's credentials (:func:`environment_credentials`) are the first two shapes in
its variables, with a bound on what is long enough to be a secret.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final
from urllib.parse import unquote

from fsm_agent.trace.redact import is_sensitive_key

HIDDEN: Final = "***"
"""What a URL's password is shown as."""

TELEMETRY_KEY_HEADERS: Final = frozenset({"x-honeycomb-team", "uptrace-dsn"})
"""Headers that carry an OTLP collector's key under a name the key rule does not know (it knows
``Authorization``, ``api-key``, ``DD-API-KEY``, ``lightstep-access-token``, ``x-sf-token``)."""

_TOKEN_SHAPED: Final = re.compile(r"(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9_.~+=%-]{16,}")
"""User info that is a token, not a name: 16 or more characters of a token's alphabet, letters
and digits mixed (``ghp_...``, a 32-digit hex key)."""


def named_credentials(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """The values of ``(name, value)`` pairs (headers, environment variables) whose name is a
    credential's, each whole and, after a scheme such as ``Bearer``, its token alone."""
    found: list[str] = []
    for name, value in pairs:
        if is_sensitive_key(name.strip()):
            found += value_and_token(value)
    return [value for value in found if value]


def value_and_token(value: str) -> list[str]:
    """A credential's value whole and, after a scheme such as ``Bearer``, its token alone."""
    return [value.strip(), *value.split()[1:]]


ENVIRONMENT_SECRET_MIN: Final = 8
"""The fewest characters an environment variable's value needs to be taken as a secret: a
credential's name also covers switches and settings (``HF_HUB_DISABLE_IMPLICIT_TOKEN=1``,
``..._PASSWORD_AUTH=off``), which redacted would blank every ``1`` or ``off`` of a trace."""


def environment_credentials(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The credentials in an environment (``os.environ``), which a tool that prints it
    (``env``, ``printenv``) would otherwise put in a trace: the values of the variables under
    a credential's name (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``: the
    names :func:`~fsm_agent.trace.redact.is_sensitive_key` judges; each value whole, the
    token of ``Bearer TOKEN`` alone, and each line of a value of several lines alone) and
    the credentials of a URL in any variable (``DATABASE_URL=postgres://user:PASSWORD@host/db``).
    Left out are values shorter than :data:`ENVIRONMENT_SECRET_MIN` characters and a value
    that is the path of an existing file or folder (``GOOGLE_APPLICATION_CREDENTIALS=/path``,
    ``PASSWORD_STORE_DIR`` name where a secret is kept, and every mention of the path would
    be blanked)."""
    found: list[str] = []
    for name, value in environ.items():
        if is_sensitive_key(name.strip()):
            found += _environment_value(value)
        if "://" in value:
            found += url_passwords(value)
    kept = (
        value
        for value in found
        if len(value) >= ENVIRONMENT_SECRET_MIN and not _existing_path(value)
    )
    return tuple(dict.fromkeys(kept))


def _environment_value(value: str) -> list[str]:
    """A credential variable's value whole, the token of ``Bearer TOKEN`` alone, and each
    line of a value of several (a PEM key: a tool may print one of its lines) alone. Other
    words are not taken alone: a value holding JSON would make secrets of its keys."""
    words = value.split()
    found = [value.strip(), *words[1:2]] if len(words) == 2 else [value.strip()]
    lines = value.strip().splitlines()
    return found + [line.strip() for line in lines] if len(lines) > 1 else found


def _existing_path(value: str) -> bool:
    """Whether ``value`` is the absolute path of a file or folder that exists (``~`` for the
    home folder)."""
    if not value.startswith(("/", "~")):
        return False
    try:
        return Path(value).expanduser().exists()
    except (OSError, ValueError, RuntimeError):  # too long, a NUL, no home folder
        return False


def url_passwords(url: str) -> tuple[str, ...]:
    """The credentials in ``url`` (its user info's password, or its user info when that is a
    token, and the values of query parameters under a credential's name), as written and
    percent-decoded (a driver quotes either), longest first."""
    _, sep, rest = url.partition("://")
    if not sep:
        return ()
    location, _, query = rest.partition("?")
    found = []
    credentials, at, _ = location.rpartition("@")
    if at and ":" in credentials:
        found.append(credentials.split(":", 1)[1])
    elif at and token_shaped(unquote(credentials)):
        found.append(credentials)
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if equals and is_sensitive_key(unquote(name).strip()):
            found.append(value)
    return _spellings(found)


def url_private_parts(url: str) -> tuple[str, ...]:
    """What of ``url`` an error about it should never repeat, credential's name or not: its
    user info (the user and the password) and the value of every query parameter
    (``?key=...``, ``?sig=...``), as written and percent-decoded, longest first."""
    _, sep, rest = url.partition("://")
    if not sep:
        return ()
    location, _, query = rest.partition("?")
    location = location.partition("#")[0].partition("/")[0]
    credentials, at, _ = location.rpartition("@")
    found = [*credentials.split(":", 1)] if at else []
    found += [pair.partition("=")[2] for pair in query.partition("#")[0].split("&")]
    return _spellings(found)


def token_shaped(text: str) -> bool:
    """Whether URL user info with no password is a token rather than a user's name (see
    :data:`_TOKEN_SHAPED`)."""
    return _TOKEN_SHAPED.fullmatch(text) is not None


def otlp_header_credentials(headers: str) -> tuple[str, ...]:
    """The credentials in an ``OTEL_EXPORTER_OTLP_HEADERS`` value (``name=value`` pairs split
    by commas, percent-encoded, as the OpenTelemetry specification has them): the values of
    headers under a credential's name or in :data:`TELEMETRY_KEY_HEADERS`, as written and
    decoded, each whole and after a scheme (``Bearer``) its token alone, and the credentials of
    a value that is a URL (a DSN)."""
    found: list[str] = []
    for pair in headers.split(","):
        name, equals, value = pair.partition("=")
        name = unquote(name).strip()
        if not equals or not value.strip():
            continue
        if is_sensitive_key(name) or name.lower() in TELEMETRY_KEY_HEADERS:
            decoded = unquote(value).strip()
            found += [value.strip(), *named_credentials([("authorization", decoded)])]
            found += url_passwords(decoded)
    return _spellings(found)


def _spellings(found: Iterable[str]) -> tuple[str, ...]:
    """``found`` as written and percent-decoded, longest first (so a credential holding
    another is hidden whole), without duplicates or empty strings."""
    spellings = (spelling for value in found for spelling in (value, unquote(value)))
    return tuple(sorted({spelling for spelling in spellings if spelling}, key=len, reverse=True))


def argument_credentials(args: Sequence[str]) -> list[str]:
    """The credentials in a command's arguments (the program first, when the caller has it):
    the value of an option named for a credential (``--token VALUE``, ``--api-key=VALUE``,
    ``API_KEY=VALUE``), of a header given as one argument (``Authorization: Bearer TOKEN``),
    the credentials of a URL, and the passwords known programs take in options
    (:func:`program_passwords`)."""
    found: list[str] = []
    for position, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        header, colon, field = arg.partition(":")
        if equals and " " not in name and ":" not in name:  # --api-key=VALUE, API_KEY=VALUE
            found += named_credentials([(name.lstrip("-"), value)])
        elif colon and " " not in header.strip() and not header.startswith("-"):
            found += named_credentials([(header, field)])  # Authorization: Bearer TOKEN
        elif arg.startswith("-") and position + 1 < len(args):  # --token VALUE
            found += named_credentials([(arg.lstrip("-"), args[position + 1])])
        found += url_passwords(arg)
    found += program_passwords(args)
    return list(dict.fromkeys(found))


def command_credentials(command: str) -> list[str]:
    """The credentials in a shell command line (a command hook's): its words as the shell
    splits them (at blanks, when its quotes do not close), judged as a command's arguments
    (:func:`argument_credentials`: ``--token VALUE``, ``GITHUB_TOKEN=VALUE``,
    ``curl -H "Authorization: Bearer TOKEN"``, ``mysql -pVALUE``)."""
    # The shell's operators are words of their own (``--token=abc&&x``, ``KEY=abc;``), so a
    # value is recorded as the shell passes it, not with the operator after it.
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # a comment is quoted with the command all the same
    try:
        words = list(lexer)
    except ValueError:
        words = command.split()
    return argument_credentials(words)


_ATTACHED: Final = "attached"
"""The password only written onto the option (``-pVALUE``): apart, the next argument is
something else (``mysql -p DATABASE`` prompts for the password)."""
_VALUE: Final = "value"
"""The password onto the option or as the next argument (``-p VALUE``, ``-pVALUE``,
``--pass VALUE``, ``--pass=VALUE``)."""
_USER_PASSWORD: Final = "user:password"
"""As ``_VALUE``, a ``user:password`` pair: the part after the first colon."""
_USER_PERCENT_PASSWORD: Final = "user%password"
"""As ``_VALUE``, a ``user%password`` pair (Samba's): the part after the first ``%``."""

_MYSQL: Final = {"-p": _ATTACHED}
_WRAPPER: Final = {"-p": _VALUE}
"""``sshpass``'s: its options end where the command it runs begins (``sshpass -p PASSWORD
ssh -p PORT host``)."""
_MONGO: Final = {"-p": _VALUE}
_LDAP: Final = {"-w": _VALUE}
_SQL_SERVER: Final = {"-P": _VALUE}
PROGRAM_PASSWORD_OPTIONS: Final[Mapping[str, Mapping[str, str]]] = {
    **dict.fromkeys(
        ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck"), _MYSQL
    ),
    **dict.fromkeys(("mariadb", "mariadb-dump", "mariadb-admin"), _MYSQL),
    **dict.fromkeys(
        ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"), _MONGO
    ),
    **dict.fromkeys(
        ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd"), _LDAP
    ),
    **dict.fromkeys(("sqlcmd", "bcp"), _SQL_SERVER),
    "sshpass": _WRAPPER,
    "redis-cli": {"-a": _VALUE, "--pass": _VALUE},
    "curl": {
        "-u": _USER_PASSWORD,
        "--user": _USER_PASSWORD,
        "-U": _USER_PASSWORD,
        "--proxy-user": _USER_PASSWORD,
    },
    "wget": {"--user": _USER_PASSWORD},  # its passwords are --password and --*-password
    "smbclient": {"-U": _USER_PERCENT_PASSWORD, "--user": _USER_PERCENT_PASSWORD},
}
"""The options known programs take a password in where no credential's name says so, and how
(``htpasswd -b`` takes it as an argument: :func:`_htpasswd_password`). A program is known by its
name as the command or an argument (``sudo mysql -p...``, ``docker exec db mysql -p...``),
whatever folder it is in; its options are judged up to the next known program's name."""


def program_passwords(args: Sequence[str]) -> list[str]:
    """The passwords known programs take in options (:data:`PROGRAM_PASSWORD_OPTIONS`) in a
    command's arguments, and ``htpasswd -b``'s."""
    found: list[str] = []
    options: Mapping[str, str] = {}
    for position, arg in enumerate(args):
        program = _program_name(arg)
        if program in PROGRAM_PASSWORD_OPTIONS:
            options = PROGRAM_PASSWORD_OPTIONS[program]
        elif program == "htpasswd":
            options = {}
            found += _htpasswd_password(args[position + 1 :])
        elif options and arg.startswith("-"):
            following = args[position + 1] if position + 1 < len(args) else None
            found += _option_password(arg, following, options)
        elif options is _WRAPPER and not _takes(args[position - 1], options):
            options = {}  # the command it runs: its options are its own
    return [value for value in found if value]


def _program_name(arg: str) -> str:
    """The program an argument names, when it is one: its file name without a folder or a
    Windows ``.exe``."""
    name = arg.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    return name[:-4] if name.lower().endswith(".exe") else name


def _takes(arg: str, options: Mapping[str, str]) -> bool:
    """Whether ``arg`` is one of ``options`` that takes the next argument as its value."""
    return options.get(arg, _ATTACHED) != _ATTACHED


def _option_password(arg: str, following: str | None, options: Mapping[str, str]) -> list[str]:
    """The password ``arg`` (with the argument ``following`` it) gives, by ``options``."""
    for option, form in options.items():
        if arg == option:
            value = None if form == _ATTACHED else following
        elif option.startswith("--") and arg.startswith(f"{option}="):
            value = arg[len(option) + 1 :]
        elif not option.startswith("--") and arg.startswith(option) and len(arg) > len(option):
            value = arg[len(option) :]  # -pVALUE
        else:
            continue
        if value is None:
            return []
        if form == _USER_PASSWORD:
            return [value.partition(":")[2]]
        if form == _USER_PERCENT_PASSWORD:
            return [value.partition("%")[2]]
        return [value]
    return []


def _htpasswd_password(args: Sequence[str]) -> list[str]:
    """The password ``htpasswd`` takes as an argument with ``-b``: ``htpasswd -b FILE USER
    PASSWORD``, or ``htpasswd -nb USER PASSWORD`` (no file)."""
    flags = "".join(arg[1:] for arg in args if arg.startswith("-") and not arg.startswith("--"))
    if "b" not in flags:
        return []
    positional = [arg for arg in args if not arg.startswith("-")]
    at = 1 if "n" in flags else 2
    return [positional[at]] if len(positional) > at else []


def without_passwords(text: str, url: str) -> str:
    """``text`` (``url`` itself, or an error about it) with the passwords of ``url`` hidden."""
    return hidden(text, url_passwords(url))


def hidden(text: str, credentials: Iterable[str]) -> str:
    """``text`` with each of ``credentials`` shown as ``***`` (the longest first, so one
    holding another is hidden whole)."""
    for credential in sorted(filter(None, credentials), key=len, reverse=True):
        text = text.replace(credential, HIDDEN)
    return text
