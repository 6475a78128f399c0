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
    assert options["bind"] == "127.0.0.1:5000"
    assert options["worker_class"] == "eqsearch.webui.gunicorn_worker.JsonErrorWorker"  # gthread, errors in JSON
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
        refusals = _refusals_in_json(f"http://127.0.0.1:{port}")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        output, _ = server.communicate(timeout=30)
    assert "with gunicorn, 2 workers" in output
    assert "development server" not in output and "WARNING" not in output
    assert output.count("Booting worker") == 2
    # a 5,000-row array: too long for a URL (gunicorn's request-line limit), too long a formula by POST, and a body
    # over the app's limit: each answered in the API's JSON error format
    assert refusals["get"][0] == 414 and refusals["get"][1]["code"] == "request_line_too_long"
    assert "POST /api/search" in refusals["get"][1]["message"]
    assert refusals["post"] == (400, refusals["post"][1]) and "the limit is 4,000" in refusals["post"][1]["message"]
    assert refusals["body"][0] == 413 and refusals["body"][1]["code"] == "request_entity_too_large"


def _refusals_in_json(base: str) -> dict[str, tuple[int, dict]]:
    """Status and JSON error of an over-long GET, an over-long formula by POST and an over-large POST body."""
    import urllib.error
    from urllib.parse import quote

    def array(rows: int) -> str:
        return r"\begin{pmatrix}" + r" \\ ".join(f"{i} & {i + 1}" for i in range(rows)) + r"\end{pmatrix}"

    def post(latex: str) -> urllib.request.Request:
        body = json.dumps({"latex": latex}).encode()
        return urllib.request.Request(f"{base}/api/search", data=body, headers={"Content-Type": "application/json"})

    requests = {
        "get": urllib.request.Request(f"{base}/api/search?latex={quote(array(5000))}"),
        "post": post(array(2000)),  # ~29,000 characters: under the body limit, over the formula limit
        "body": post(array(5000)),  # ~73,000 characters: over the 64 KiB body limit
    }
    out = {}
    for name, request in requests.items():
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                out[name] = (response.status, json.load(response))
        except urllib.error.HTTPError as error:
            out[name] = (error.code, json.load(error)["error"])
    return out
