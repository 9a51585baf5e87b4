"""The OpenAI frontend over a token-in/token-out engine: render, the engine wire, derender in memory."""
