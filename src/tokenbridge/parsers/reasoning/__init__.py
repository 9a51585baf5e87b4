"""Reasoning parser families; each module registers its names."""
