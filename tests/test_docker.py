"""docker/: what can be checked without a Docker engine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from eqsearch.engine.es.distribution import PINNED

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker" / "compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def test_compose_runs_the_pinned_elasticsearch_version():
    image = re.search(r"image: docker.elastic.co/elasticsearch/elasticsearch:(\S+)", COMPOSE.read_text())
    assert image is not None
    assert image.group(1) == PINNED.version
    client_pin = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    client = next(dep for dep in client_pin if dep.startswith("elasticsearch=="))
    assert client.split("==")[1].split(".")[0] == PINNED.version.split(".")[0]


def test_image_installs_the_way_the_readme_does():
    text = DOCKERFILE.read_text()
    assert "make setup" in text, "the image must install with the README's command"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(dep.startswith("gunicorn==") for dep in extras["server"])
    assert "eqsearch.webui.wsgi:app" in text
    assert "make setup" in (ROOT / "README.md").read_text()


@pytest.mark.skipif(not (shutil.which("docker-compose") or shutil.which("docker")), reason="no Docker client")
def test_compose_file_is_valid_for_the_docker_client():
    env = {**os.environ, "ELASTIC_PASSWORD": "x", "EQSEARCH_ADMIN_TOKEN": "y", "EQSEARCH_SECRET_KEY": "z"}
    command = ["docker-compose"] if shutil.which("docker-compose") else ["docker", "compose"]
    result = subprocess.run(
        [*command, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    no_plugin = ("unknown command", "is not a docker command", "unknown shorthand flag")
    if command[0] == "docker" and any(text in result.stderr for text in no_plugin):
        pytest.skip("the Docker client has no compose plugin")
    assert result.returncode == 0, result.stderr
