"""Programs that rewrite files in place under the paths they are given: formatters and fixers.

``Edit(./src/**)`` denied, ``black src``, ``prettier --write .``, ``ruff check --fix`` and
``cargo fmt`` rewrite the files under ``src`` as surely as ``sed -i`` does, under names no
word of the command spells (``src`` is a folder, or no path is given and the program works
on the folder it runs in). For the Edit rules (``unnamed_writes``), each known program gives
the trees it rewrites: the words that are not options, or ``.`` when there are none. Some
rewrite only when told to (``prettier --write``, ``eslint --fix``, ``gofmt -w``); without
that option they print, and write nothing. ``gzip -r`` and ``zstd -r`` count too: they put a
compressed file beside each one under the tree (``gzip`` in its place).

A program given by module (``python3 -m black src``) counts as the program; wrappers that
run a program by name (``npx``, ``uvx``, ``poetry run``) are read through by the analysis. A
subcommand counts after the program's own options too (``ruff --config x.toml format``,
``cargo +nightly fmt``); an option that makes the program only report what it would change
(``ruff format --diff``, ``black --check``) leaves it writing nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from fsm_agent.toolbox.program_words import program_words, words_after

_ALWAYS: Final = frozenset[str]()

REWRITERS: Final[dict[tuple[str, ...], frozenset[str]]] = {
    # Python
    ("black",): _ALWAYS,
    ("isort",): _ALWAYS,
    ("pyupgrade",): _ALWAYS,
    ("ruff", "format"): _ALWAYS,
    ("ruff", "check"): frozenset({"--fix", "--unsafe-fixes"}),
    ("autopep8",): frozenset({"-i", "--in-place"}),
    ("autoflake",): frozenset({"-i", "--in-place"}),
    ("yapf",): frozenset({"-i", "--in-place"}),
    ("docformatter",): frozenset({"-i", "--in-place"}),
    # JavaScript and the web
    ("prettier",): frozenset({"-w", "--write"}),
    ("eslint",): frozenset({"--fix"}),
    ("stylelint",): frozenset({"--fix"}),
    ("standard",): frozenset({"--fix"}),
    ("biome", "format"): frozenset({"--write", "--fix", "--apply"}),
    ("biome", "lint"): frozenset({"--write", "--fix", "--apply", "--apply-unsafe"}),
    ("biome", "check"): frozenset({"--write", "--fix", "--apply", "--apply-unsafe"}),
    ("dprint", "fmt"): _ALWAYS,
    ("deno", "fmt"): _ALWAYS,
    ("deno", "lint"): frozenset({"--fix"}),
    # Go, Rust, C and the rest
    ("gofmt",): frozenset({"-w"}),
    ("goimports",): frozenset({"-w"}),
    ("go", "fmt"): _ALWAYS,
    ("go", "fix"): _ALWAYS,
    ("go", "mod", "tidy"): _ALWAYS,
    ("cargo", "fmt"): _ALWAYS,
    ("cargo", "fix"): _ALWAYS,
    ("cargo", "clippy"): frozenset({"--fix"}),
    ("rustfmt",): _ALWAYS,
    ("clang-format",): frozenset({"-i"}),
    ("swift-format",): frozenset({"-i", "--in-place"}),
    ("terraform", "fmt"): _ALWAYS,
    ("mix", "format"): _ALWAYS,
    ("rubocop",): frozenset({"-a", "-A", "--autocorrect", "--autocorrect-all", "-x"}),
    ("shfmt",): frozenset({"-w", "--write"}),
    ("stylua",): _ALWAYS,
    ("ktlint",): frozenset({"-F", "--format"}),
    ("google-java-format",): frozenset({"-i", "--replace"}),
    ("sqlfluff", "fix"): _ALWAYS,
    ("php-cs-fixer", "fix"): _ALWAYS,
    ("dotnet", "format"): _ALWAYS,
    # compressors told to go through a tree
    ("gzip",): frozenset({"-r", "--recursive"}),
    ("zstd",): frozenset({"-r"}),
}
"""Each program (with its subcommand) that rewrites files under its operands, and the options
one of which it needs to write (none: it always does)."""

_CHECKING: Final = frozenset(
    {"--check", "--check-only", "--diff", "-check", "--dry-run", "--verify-no-changes"}
    | {"--check-formatted"}
)
"""Options that make a formatter report what it would change and write nothing (``black
--check``, ``ruff format --diff``, ``cargo fmt --check``, ``terraform fmt -check``); long
ones only (``black -l 100`` sets the line length)."""
_REPORTING_FIXERS: Final[dict[tuple[str, ...], frozenset[str]]] = {
    ("ruff", "check"): frozenset({"--diff"}),
}
"""Options with which a program of :data:`REWRITERS` told to fix only shows the fixes
(``ruff check --fix --diff``)."""


def rewritten_trees(argv: Sequence[str]) -> list[str]:
    """The trees (as written) a part rewrites in place, when its program is one of
    :data:`REWRITERS` told to write (and not told only to check: ``--check``, ``--diff``):
    its words that are not options, ``.`` when there are none (``./...``, Go's "every
    package under", is its folder). Empty for anything else."""
    words = program_words(argv)
    trees: list[str] = []
    for program, needs in REWRITERS.items():
        args = words_after(program, words)
        if args is None:
            continue
        if needs and not any(_given(option, args) for option in needs):
            continue
        if not needs and any(arg.partition("=")[0] in _CHECKING for arg in args):
            continue  # always writes, unless told only to check
        if not _REPORTING_FIXERS.get(program, _ALWAYS).isdisjoint(args):
            continue
        operands = [_tree(word) for word in args if not word.startswith("-")]
        trees += operands or ["."]
    return list(dict.fromkeys(trees))


def _given(option: str, args: Sequence[str]) -> bool:
    """Whether ``option`` is among ``args``: as a word, with a value (``--write=true``), or a
    short one among joined letters (``-wl``)."""
    if option.startswith("--"):
        return any(arg == option or arg.startswith(f"{option}=") for arg in args)
    letter = option[1:]
    return any(
        arg == option or (arg[:1] == "-" and arg[1:2] != "-" and letter in arg[1:]) for arg in args
    )


def _tree(word: str) -> str:
    """An operand as the tree it names: ``./...`` and ``src/...`` (Go's patterns) their
    folder."""
    if word == "..." or word.endswith("/..."):
        return word[: -len("...")].rstrip("/") or "."
    return word
