"""The HTTP tier: a plain ASGI app (no framework) served by uvicorn, one model per process."""
