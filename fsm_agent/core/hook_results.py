"""How a hook outcome becomes messages: context for the model, notices for the user.

SPEC §6.1/§6.2: a hook's ``additionalContext`` reaches the model as an attachment (sent as
``<system-reminder>`` text with the next user turn); its ``systemMessage``, and the warnings
about hooks that failed, are for the user only, so they are system messages, never sent.
"""

from __future__ import annotations

from collections.abc import Callable

from fsm_agent.core.events import HookOutcome
from fsm_agent.core.messages import AttachmentKind, AttachmentMessage, Message, SystemMessage

HOOK_NOTICE = "hook_notice"
"""Subtype of the system messages that carry hooks' notices to the user."""


def context_and_notices(outcome: HookOutcome, new_uuid: Callable[[], str]) -> list[Message]:
    """The attachments (context) and system messages (notices) of one outcome, in that order."""
    if not (outcome.additional_context or outcome.system_messages):
        return []  # most outcomes: nothing to build
    messages: list[Message] = [
        AttachmentMessage(uuid=new_uuid(), kind=AttachmentKind.HOOK_ADDITIONAL_CONTEXT, text=text)
        for text in outcome.additional_context
    ]
    messages.extend(
        SystemMessage(uuid=new_uuid(), subtype=HOOK_NOTICE, text=text)
        for text in outcome.system_messages
    )
    return messages
