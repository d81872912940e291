"""The regex search Grep runs in a child process (``python -I regex_search.py``).

Python's ``re`` holds the GIL while it matches, so a pattern with catastrophic backtracking
run in a thread freezes the whole process: the loop's timers, the idle watchdog and Ctrl-C
all wait for it. Run in a separate process, it can be killed at once, by Grep's timeout or
by cancellation. This file imports only the standard library (it starts in milliseconds).

Protocol: one JSON object on stdin (``pattern``, ``ignore_case``, ``files``, ``max_hits``,
``max_line_chars``, ``sniff_bytes``); one JSON line on stdout per file with a match:
``{"file": <index>, "count": <matching lines>, "hits": [[<line number>, <text>], ...]}``, with
at most ``max_hits`` hits kept over all files. Files are read line by line.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any


def search(request: dict[str, Any]) -> None:
    """Search every file of ``request`` and write one line per matching file."""
    flags = re.IGNORECASE if request["ignore_case"] else 0
    regex = re.compile(request["pattern"], flags)
    room = int(request["max_hits"])
    cut = int(request["max_line_chars"])
    for index, name in enumerate(request["files"]):
        try:
            with open(name, "rb") as handle:  # noqa: PTH123 - the name may hold any bytes
                if b"\0" in handle.read(int(request["sniff_bytes"])):
                    continue  # binary
                handle.seek(0)
                count = 0
                hits = []
                for number, raw in enumerate(handle, start=1):
                    line = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
                    if regex.search(line):
                        count += 1
                        if room > 0:
                            hits.append([number, line[:cut]])
                            room -= 1
        except OSError:
            continue
        if count:
            sys.stdout.write(json.dumps({"file": index, "count": count, "hits": hits}) + "\n")


if __name__ == "__main__":
    search(json.loads(sys.stdin.read()))
