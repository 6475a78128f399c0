"""The web app's security: response headers, logins that redirect only within the site, the CSRF token and the
admin token, and the login attempts limited per client and window."""

from __future__ import annotations

import logging

from .conftest import ADMIN_TOKEN, csrf_of, dead_app, login


def test_login_needs_the_csrf_token_and_the_right_token(caplog):
    client = dead_app().test_client()
    assert client.post("/admin/login", data={"token": ADMIN_TOKEN}).status_code == 403
    client.get("/admin/login")
    with caplog.at_level(logging.DEBUG):
        refused = client.post("/admin/login", data={"token": "wrong-token-123", "csrf_token": csrf_of(client)})
    assert refused.status_code == 401 and b"not the admin token" in refused.data
    assert "wrong-token-123" not in caplog.text
    before = csrf_of(client)
    login(client)
    assert csrf_of(client) != before  # a fresh token after login


def test_admin_login_attempts_are_limited_per_client_and_window():
    app = dead_app(LOGIN_ATTEMPTS=3, LOGIN_WINDOW_S=60)
    now = [1000.0]
    app.extensions["eqsearch.login_limiter"].clock = lambda: now[0]
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = "203.0.113.7"
    client.get("/admin/login")
    for _ in range(3):
        wrong = client.post("/admin/login", data={"token": "wrong-token-123", "csrf_token": csrf_of(client)})
        assert wrong.status_code == 401
    # the fourth try within the window is refused, even with the right token, before the token is looked at
    refused = client.post("/admin/login", data={"token": ADMIN_TOKEN, "csrf_token": csrf_of(client)})
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "60"
    assert b"Too many login attempts" in refused.data
    as_json = client.post(
        "/admin/login",
        data={"token": ADMIN_TOKEN, "csrf_token": csrf_of(client)},
        headers={"Accept": "application/json"},
    )
    assert as_json.status_code == 429 and as_json.get_json()["error"]["code"] == "too_many_attempts"
    # another client is not held back by this one's tries
    other = app.test_client()
    other.environ_base["REMOTE_ADDR"] = "198.51.100.2"
    login(other)
    # once the first tries leave the window, the client may try again
    now[0] += 61
    login(client)


def test_login_redirects_only_within_the_site():
    client = dead_app().test_client()
    client.get("/admin/login")
    response = client.post(
        "/admin/login", data={"token": ADMIN_TOKEN, "csrf_token": csrf_of(client), "next": "//evil.example/x"}
    )
    assert response.headers["Location"] == "/admin/"


def test_security_headers():
    response = dead_app().test_client().get("/")
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
