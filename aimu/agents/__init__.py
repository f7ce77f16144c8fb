"""Agents: a model, tools and the loop between them."""

from aimu.agents.agent import Agent
from aimu.agents.loop import AgentCore

__all__ = ["Agent", "AgentCore"]
