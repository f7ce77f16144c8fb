"""Agents: a model, tools and the loop between them, and what a run can be given:
compaction policies, an inbox for mid-run messages, event sinks, sub-agents."""

from aimu.agents.agent import Agent
from aimu.agents.compaction import CompactionError, drop_old_tool_results, keep_last
from aimu.agents.events import Event, EventSink, JsonLinesSink, OpenTelemetrySink
from aimu.agents.inbox import Inbox
from aimu.agents.loop import AgentCore
from aimu.agents.structured import StructuredOutputError

__all__ = [
    "Agent",
    "AgentCore",
    "CompactionError",
    "Event",
    "EventSink",
    "Inbox",
    "JsonLinesSink",
    "OpenTelemetrySink",
    "StructuredOutputError",
    "drop_old_tool_results",
    "keep_last",
]
