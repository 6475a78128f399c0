"""The production entry point (`webui/wsgi.py`): importing it builds the app from `EQSEARCH_*` variables, with its
blueprints, the admin token it was given and the cluster it names; a malformed variable stops the import, named."""

from __future__ import annotations

import os
import subprocess
import sys

WSGI_CHECK = """
import json, sys
from eqsearch.webui.wsgi import app
client = app.test_client()
print(json.dumps({
    "blueprints": sorted(app.blueprints),
    "healthz": client.get("/healthz").status_code,
    "login": client.get("/admin/login").status_code,
    "torch": "torch" in sys.modules,
}))
"""


def _import_wsgi(**variables: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("EQSEARCH_")}
    env.update(EQSEARCH_ES_URL="http://127.0.0.1:1", EQSEARCH_SECRET_KEY="wsgi-test-secret", **variables)
    return subprocess.run(
        [sys.executable, "-c", WSGI_CHECK], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_importing_the_entry_point_builds_the_app_from_the_environment():
    built = _import_wsgi(EQSEARCH_ADMIN_TOKEN="wsgi-admin-token-0123456789")
    assert built.returncode == 0, built.stderr
    facts = built.stdout.strip().splitlines()[-1]
    assert facts == '{"blueprints": ["admin", "api", "ui"], "healthz": 503, "login": 200, "torch": false}'
    no_admin = _import_wsgi()
    assert no_admin.returncode == 0, no_admin.stderr
    assert '"login": 403' in no_admin.stdout  # without a token the admin pages are off


def test_a_malformed_variable_stops_the_import_naming_it():
    refused = _import_wsgi(EQSEARCH_PAGE_SIZE="twenty")
    assert refused.returncode != 0
    assert "EQSEARCH_PAGE_SIZE must be a whole number" in refused.stderr
