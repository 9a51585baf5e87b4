"""Reasoning and tool-call parsers behind one streaming interface."""
