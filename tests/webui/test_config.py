"""The web app's configuration: an admin token too short is refused, and no secret shows in config pages or
representations."""

from __future__ import annotations

import pytest
from eqsearch.webui import create_app

from .conftest import ADMIN_TOKEN, DEAD, dead_app, login


def test_no_secret_in_config_pages_or_repr(monkeypatch):
    monkeypatch.setenv("EQSEARCH_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("EQSEARCH_ES_PASSWORD", "es-password-123")
    from_env = create_app()
    assert ADMIN_TOKEN not in repr(from_env.config) and "es-password-123" not in repr(from_env.config)
    assert from_env.extensions["eqsearch.config"].admin_token == ADMIN_TOKEN
    app = dead_app(SECRET_KEY="s3cret-key-for-sessions")
    assert ADMIN_TOKEN not in repr(app.config)
    config = app.extensions["eqsearch.config"]
    assert ADMIN_TOKEN not in repr(config) and "s3cret" not in repr(config)
    client = app.test_client()
    login(client)
    assert ADMIN_TOKEN.encode() not in client.get("/").data


def test_a_short_admin_token_is_refused():
    with pytest.raises(ValueError, match="too short"):
        create_app({"ES_CONFIG": DEAD, "TESTING": True, "ADMIN_TOKEN": "short"})


# -- against the real node and the ingested corpus -------------------------------------------------------------
