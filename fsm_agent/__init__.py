"""fsm_agent: an LLM agent loop run as an explicit finite-state machine with replayable traces.

The public names are listed in ``__all__``. They are loaded on first use, so ``import
fsm_agent`` stays cheap (the anthropic SDK alone takes about two seconds to import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fsm_agent.lazy_exports import lazy_exports

__version__ = "0.1.0"

_PUBLIC = {
    "AgentCore": "fsm_agent.core.agent_core",
    "Step": "fsm_agent.core.step",
    "TransitionTaken": "fsm_agent.core.step",
    "LoopConfig": "fsm_agent.core.config",
    "ToolSpec": "fsm_agent.core.tool_spec",
    "Phase": "fsm_agent.core.tables",
    "Terminal": "fsm_agent.core.tables",
    "ContinueReason": "fsm_agent.core.tables",
    "normalize_for_api": "fsm_agent.core.normalize",
    "analyse_command": "fsm_agent.core.shell_commands",
    "CommandAnalysis": "fsm_agent.core.shell_commands",
    "CommandPart": "fsm_agent.core.shell_commands",
    "Redirect": "fsm_agent.core.shell_commands",
    "judge_read_only": "fsm_agent.core.read_only_commands",
    "ReadOnlyVerdict": "fsm_agent.core.read_only_commands",
    "Agent": "fsm_agent.runtime.agent",
    "RunResult": "fsm_agent.runtime.agent",
    "Session": "fsm_agent.runtime.session",
    "Attachment": "fsm_agent.runtime.attachments",
    "AttachmentProvider": "fsm_agent.runtime.attachments",
    "AttachmentRequest": "fsm_agent.runtime.attachments",
    "AttachmentTiming": "fsm_agent.runtime.attachments",
    "ChangedFiles": "fsm_agent.runtime.file_changes",
    "RelevantMemory": "fsm_agent.runtime.prefetch_providers",
    "SkillDiscovery": "fsm_agent.runtime.prefetch_providers",
    "ToolProvider": "fsm_agent.runtime.tool_providers",
    "AnthropicModel": "fsm_agent.runtime.models",
    "Model": "fsm_agent.runtime.models",
    "Thinking": "fsm_agent.runtime.models",
    "TokenCounter": "fsm_agent.runtime.models",
    "ServerTool": "fsm_agent.runtime.server_tools",
    "McpServer": "fsm_agent.runtime.mcp_tools",
    "Hooks": "fsm_agent.runtime.hooks",
    "HookMatcher": "fsm_agent.runtime.hook_spec",
    "HookInput": "fsm_agent.runtime.hook_spec",
    "CommandHook": "fsm_agent.runtime.hook_spec",
    "HookOutcome": "fsm_agent.core.events",
    "HookDecision": "fsm_agent.core.events",
    "HookEvent": "fsm_agent.core.effects",
    "PermissionPolicy": "fsm_agent.runtime.permissions",
    "PermissionMode": "fsm_agent.runtime.permissions",
    "PermissionAnswer": "fsm_agent.runtime.permissions",
    "PermissionRequest": "fsm_agent.runtime.permissions",
    "Rule": "fsm_agent.core.permission_rules",
    "RuleBehavior": "fsm_agent.core.permission_rules",
    "RuleSource": "fsm_agent.core.permission_rules",
    "parse_rule": "fsm_agent.core.permission_rules",
    "Settings": "fsm_agent.runtime.settings",
    "load_settings": "fsm_agent.runtime.settings",
    "Tool": "fsm_agent.runtime.tool",
    "tool": "fsm_agent.runtime.tool",
    "SubagentDefinition": "fsm_agent.runtime.subagents",
    "SubagentLimits": "fsm_agent.runtime.subagents",
    "replay": "fsm_agent.trace.replay",
    "fork": "fsm_agent.trace.replay",
    "resume": "fsm_agent.trace.replay",
    "read_trace": "fsm_agent.trace.reader",
    "open_store": "fsm_agent.store.opening",
    "RunQuery": "fsm_agent.store.query",
    "TransitionCount": "fsm_agent.store.query",
    "RunStore": "fsm_agent.store.sql_store",
    "StoredRun": "fsm_agent.store.summary",
    "wait_for_store_writes": "fsm_agent.store.background",
    "Update": "fsm_agent.runtime.agent",
    "TextDelta": "fsm_agent.runtime.agent",
    "MessageUpdate": "fsm_agent.runtime.agent",
    "TransitionUpdate": "fsm_agent.runtime.agent",
    "ToolProgress": "fsm_agent.runtime.agent",
    "ModelFailed": "fsm_agent.runtime.agent",
    "RetryScheduled": "fsm_agent.runtime.agent",
    "RunFinished": "fsm_agent.runtime.agent",
    "ModelPrice": "fsm_agent.core.pricing",
    "Telemetry": "fsm_agent.telemetry.config",
    "flush_telemetry": "fsm_agent.telemetry.config",
    "export_trace": "fsm_agent.telemetry.export",
    "PermissionCheck": "fsm_agent.runtime.tool",
    "ToolContext": "fsm_agent.runtime.tool",
    "ToolOutput": "fsm_agent.runtime.tool",
    "ForkPoint": "fsm_agent.trace.replay",
    "ResumePoint": "fsm_agent.trace.replay",
    "InFlight": "fsm_agent.trace.replay",
    "ReplayResult": "fsm_agent.trace.replay",
    "FsmAgentError": "fsm_agent.errors",
    "ConfigError": "fsm_agent.errors",
    "UsageError": "fsm_agent.errors",
    "TraceError": "fsm_agent.errors",
    "TraceDivergence": "fsm_agent.errors",
}

__all__ = [
    "Agent",
    "AgentCore",
    "AnthropicModel",
    "Attachment",
    "AttachmentProvider",
    "AttachmentRequest",
    "AttachmentTiming",
    "ChangedFiles",
    "CommandAnalysis",
    "CommandHook",
    "CommandPart",
    "ConfigError",
    "ContinueReason",
    "ForkPoint",
    "FsmAgentError",
    "HookDecision",
    "HookEvent",
    "HookInput",
    "HookMatcher",
    "HookOutcome",
    "Hooks",
    "InFlight",
    "LoopConfig",
    "McpServer",
    "MessageUpdate",
    "Model",
    "ModelFailed",
    "ModelPrice",
    "PermissionAnswer",
    "PermissionCheck",
    "PermissionMode",
    "PermissionPolicy",
    "PermissionRequest",
    "Phase",
    "ReadOnlyVerdict",
    "Redirect",
    "RelevantMemory",
    "ReplayResult",
    "ResumePoint",
    "RetryScheduled",
    "Rule",
    "RuleBehavior",
    "RuleSource",
    "RunFinished",
    "RunQuery",
    "RunResult",
    "RunStore",
    "ServerTool",
    "Session",
    "Settings",
    "SkillDiscovery",
    "Step",
    "StoredRun",
    "SubagentDefinition",
    "SubagentLimits",
    "Telemetry",
    "Terminal",
    "TextDelta",
    "Thinking",
    "TokenCounter",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolProgress",
    "ToolProvider",
    "ToolSpec",
    "TraceDivergence",
    "TraceError",
    "TransitionCount",
    "TransitionTaken",
    "TransitionUpdate",
    "Update",
    "UsageError",
    "__version__",
    "analyse_command",
    "export_trace",
    "flush_telemetry",
    "fork",
    "judge_read_only",
    "load_settings",
    "normalize_for_api",
    "open_store",
    "parse_rule",
    "read_trace",
    "replay",
    "resume",
    "tool",
    "wait_for_store_writes",
]

if TYPE_CHECKING:
    from fsm_agent.core.agent_core import AgentCore
    from fsm_agent.core.config import LoopConfig
    from fsm_agent.core.effects import HookEvent
    from fsm_agent.core.events import HookDecision, HookOutcome
    from fsm_agent.core.normalize import normalize_for_api
    from fsm_agent.core.permission_rules import Rule, RuleBehavior, RuleSource, parse_rule
    from fsm_agent.core.pricing import ModelPrice
    from fsm_agent.core.read_only_commands import ReadOnlyVerdict, judge_read_only
    from fsm_agent.core.shell_commands import (
        CommandAnalysis,
        CommandPart,
        Redirect,
        analyse_command,
    )
    from fsm_agent.core.step import Step, TransitionTaken
    from fsm_agent.core.tables import ContinueReason, Phase, Terminal
    from fsm_agent.core.tool_spec import ToolSpec
    from fsm_agent.errors import (
        ConfigError,
        FsmAgentError,
        TraceDivergence,
        TraceError,
        UsageError,
    )
    from fsm_agent.runtime.agent import (
        Agent,
        MessageUpdate,
        ModelFailed,
        RetryScheduled,
        RunFinished,
        RunResult,
        TextDelta,
        ToolProgress,
        TransitionUpdate,
        Update,
    )
    from fsm_agent.runtime.attachments import (
        Attachment,
        AttachmentProvider,
        AttachmentRequest,
        AttachmentTiming,
    )
    from fsm_agent.runtime.file_changes import ChangedFiles
    from fsm_agent.runtime.hook_spec import CommandHook, HookInput, HookMatcher
    from fsm_agent.runtime.hooks import Hooks
    from fsm_agent.runtime.mcp_tools import McpServer
    from fsm_agent.runtime.models import AnthropicModel, Model, Thinking, TokenCounter
    from fsm_agent.runtime.permissions import (
        PermissionAnswer,
        PermissionMode,
        PermissionPolicy,
        PermissionRequest,
    )
    from fsm_agent.runtime.prefetch_providers import RelevantMemory, SkillDiscovery
    from fsm_agent.runtime.server_tools import ServerTool
    from fsm_agent.runtime.session import Session
    from fsm_agent.runtime.settings import Settings, load_settings
    from fsm_agent.runtime.subagents import SubagentDefinition, SubagentLimits
    from fsm_agent.runtime.tool import PermissionCheck, Tool, ToolContext, ToolOutput, tool
    from fsm_agent.runtime.tool_providers import ToolProvider
    from fsm_agent.store.background import wait_for_store_writes
    from fsm_agent.store.opening import open_store
    from fsm_agent.store.query import RunQuery, TransitionCount
    from fsm_agent.store.sql_store import RunStore
    from fsm_agent.store.summary import StoredRun
    from fsm_agent.telemetry.config import Telemetry, flush_telemetry
    from fsm_agent.telemetry.export import export_trace
    from fsm_agent.trace.reader import read_trace
    from fsm_agent.trace.replay import (
        ForkPoint,
        InFlight,
        ReplayResult,
        ResumePoint,
        fork,
        replay,
        resume,
    )


__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, globals())
