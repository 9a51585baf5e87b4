"""Tool-call parser families; each module registers its names."""
