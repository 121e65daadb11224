"""Agents that play with a partner: the rule, belief, LLM, OverForge and baseline agents, and the registry."""
