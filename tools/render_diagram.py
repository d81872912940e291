"""Render the machine tables as mermaid into README.md, or check that the README is current.

python tools/render_diagram.py          # rewrite the block between the markers
python tools/render_diagram.py --check  # exit 1 if the README's diagram is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fsm_agent.core.diagram import render_markdown, replace_block

README = Path(__file__).resolve().parent.parent / "README.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if README.md is stale")
    parser.add_argument("--readme", type=Path, default=README)
    args = parser.parse_args(argv)
    current = args.readme.read_text(encoding="utf-8")
    wanted = replace_block(current, render_markdown())
    if args.check:
        if wanted != current:
            print(f"{args.readme}: the diagram is stale; run python tools/render_diagram.py")
            return 1
        print(f"{args.readme}: the diagram is current")
        return 0
    args.readme.write_text(wanted, encoding="utf-8")
    print(f"wrote the diagram into {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
