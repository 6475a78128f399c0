"""`eqsearch serve --production`: gunicorn with several worker processes serves the app (what `make run` does)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from eqsearch.commands.serve import gunicorn_options


def test_production_settings_are_threaded_workers_sized_to_the_cores():
    options = gunicorn_options("127.0.0.1", 5000)
    assert options["bind"] == "127.0.0.1:5000" and options["worker_class"] == "gthread"
    assert options["workers"] >= 1 and options["preload_app"] is True
    assert gunicorn_options("::1", 8000, workers=3)["bind"] == "[::1]:8000"


@pytest.mark.es
@pytest.mark.slow
def test_gunicorn_workers_answer_the_api(es_config, index_name):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "EQSEARCH_INDEX_PREFIX": index_name}
    server = subprocess.Popen(
        [sys.executable, "-m", "eqsearch", "serve", "--production", "--workers", "2", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        answers = []
        while time.monotonic() < deadline and len(answers) < 10:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/openapi.json", timeout=5) as response:
                    answers.append((response.status, json.load(response)["info"]["title"]))
            except OSError:
                time.sleep(0.5)
        assert len(answers) == 10 and all(status == 200 for status, _ in answers), answers
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
    assert "with gunicorn, 2 workers" in output
    assert "development server" not in output and "WARNING" not in output
    assert output.count("Booting worker") == 2
