"""The planner layer: the Planner protocol, offline rule planners, the ChatModel interface and LLM planners."""
