"""The deploy files say what an operator relies on: a non-root image with a health check, a
Deployment whose readiness is /health and whose stream-state key comes from a Secret, and a
package whose Mistral support is an extra."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent


def test_dockerfile_is_slim_non_root_with_a_health_check():
    text = (ROOT / "Dockerfile").read_text()
    assert "-slim" in text
    users = [line.split()[1] for line in text.splitlines() if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    assert "HEALTHCHECK" in text and "/health" in text


def test_kubernetes_deployment_and_service():
    docs = {d["kind"]: d for d in yaml.safe_load_all((ROOT / "deploy" / "kubernetes" / "tokenbridge.yaml").read_text())}
    assert docs["Service"]["spec"]["type"] == "ClusterIP"
    pod = docs["Deployment"]["spec"]["template"]
    assert docs["Service"]["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    env = {e["name"]: e for e in container["env"]}
    assert "secretKeyRef" in env["TOKENBRIDGE_STATE_KEY"]["valueFrom"]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


def test_mistral_common_is_an_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("mistral-common") for d in project["dependencies"])
    assert any(d.startswith("mistral-common") for d in project["optional-dependencies"]["mistral"])
    assert project["license"] == "Apache-2.0" and (ROOT / "LICENSE").read_text().count("Apache License") >= 1
