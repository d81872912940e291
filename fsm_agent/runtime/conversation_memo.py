"""What a conversation's user turns hand on to the next, so a turn does not cost more as the
conversation grows (DESIGN §7: "nothing does O(history) work per turn").

Each part is a cache: what it gives equals a fresh computation over the whole transcript, so
every turn's trace still replays (the replaying core and writer start cold and write the same
bytes).
"""

from __future__ import annotations

import attrs

from fsm_agent.core.request_history import RequestHistory
from fsm_agent.trace.message_dumps import TranscriptJson

__all__ = ["ConversationMemo"]


@attrs.define
class ConversationMemo:
    """Kept by a :class:`~fsm_agent.runtime.session.Session` over its turns.

    Attributes:
        request_history: the API form of the conversation, normalized a little at a time.
        transcript: the serialized transcript the last turn's trace started from.
    """

    request_history: RequestHistory
    transcript: TranscriptJson = attrs.field(factory=TranscriptJson)
