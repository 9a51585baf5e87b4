"""``/openapi.json`` and ``/docs``, built once from the msgspec request types of each route."""

from __future__ import annotations

import json

import msgspec

from tokenbridge import VLLM_COMPAT_VERSION, __version__
from tokenbridge.protocol.anthropic import MessagesRequest
from tokenbridge.protocol.engine import DerenderChatRequest, DerenderCompletionRequest
from tokenbridge.protocol.errors import ErrorResponse
from tokenbridge.protocol.openai import ChatCompletionRequest, CompletionRequest, DetokenizeRequest, TokenizeRequest
from tokenbridge.protocol.responses import ResponsesRequest

_POST = {
    "/v1/chat/completions/render": (ChatCompletionRequest, "Chat request to the engine's GenerateRequest"),
    "/v1/completions/render": (CompletionRequest, "Completion request to GenerateRequests, one per prompt"),
    "/v1/messages/render": (MessagesRequest, "Anthropic Messages request to a GenerateRequest"),
    "/v1/responses/render": (ResponsesRequest, "Responses request to a GenerateRequest"),
    "/v1/chat/completions/derender": (DerenderChatRequest, "Engine token ids to a chat completion (or a chunk)"),
    "/v1/completions/derender": (DerenderCompletionRequest, "Engine token ids to a completion (or a chunk)"),
    "/tokenize": (TokenizeRequest, "Text or messages to token ids"),
    "/detokenize": (DetokenizeRequest, "Token ids to text"),
}
_GET = {
    "/v1/models": "The served model names",
    "/health": "200 once serving",
    "/ping": "200 once serving",
    "/version": "The vLLM version this server answers as",
    "/load": "Server load",
    "/metrics": "Prometheus metrics, summed over workers",
}


def document(root_path: str = "") -> dict:
    types = [t for t, _ in _POST.values()] + [ErrorResponse]
    refs, components = msgspec.json.schema_components(types, ref_template="#/components/schemas/{name}")
    error_ref = refs[-1]
    paths: dict = {}
    for (path, (_, summary)), ref in zip(_POST.items(), refs):
        paths[path] = {"post": {
            "summary": summary,
            "requestBody": {"required": True, "content": {"application/json": {"schema": ref}}},
            "responses": {
                "200": {"description": "Successful Response", "content": {"application/json": {"schema": {}}}},
                "400": {"description": "Bad request", "content": {"application/json": {"schema": error_ref}}},
                "404": {"description": "Model not served", "content": {"application/json": {"schema": error_ref}}},
            },
        }}
    for path, summary in _GET.items():
        paths[path] = {"get": {"summary": summary, "responses": {"200": {"description": "Successful Response"}}}}
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "tokenbridge", "version": __version__,
                 "description": f"vLLM {VLLM_COMPAT_VERSION} render server API (render, derender, tokenize)"},
        "paths": paths,
        "components": {"schemas": components},
    }
    if root_path:
        doc["servers"] = [{"url": root_path}]
    return doc


def docs_page(openapi_url: str) -> bytes:
    """Swagger UI from its CDN (as FastAPI's /docs); the spec itself is served locally."""
    return f"""<!DOCTYPE html>
<html><head><title>tokenbridge - Swagger UI</title>
<link type="text/css" rel="stylesheet" href="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css">
</head><body><div id="swagger-ui"></div>
<script src="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({{url: {json.dumps(openapi_url)}, dom_id: "#swagger-ui"}})</script>
</body></html>""".encode()
