"""Engine output (token ids) -> OpenAI responses, one shot or one chunk at a time."""
