"""How the test doubles answer ``count_tokens``: a rough figure, the same everywhere.

The fake server's ``POST /v1/messages/count_tokens`` and ``ScriptedModel.count_tokens`` both
answer with this, so a run gets the same counts (and so the same decisions and trace) whether
its model is scripted in-process or served over HTTP.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["estimated_input_tokens"]


def estimated_input_tokens(body: Any) -> int:
    """Characters / 4 of a request body's ``system``, ``messages`` and ``tools`` as JSON
    (at least 1; a body that is not an object counts 1)."""
    if not isinstance(body, dict):
        return 1
    counted = {key: body.get(key) for key in ("system", "messages", "tools") if key in body}
    return max(1, math.ceil(len(json.dumps(counted, ensure_ascii=False)) / 4))
