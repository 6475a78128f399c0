"""Fixtures of the web tests: an app over a real index built by a real ingest job, a live server, a browser.

The corpus (`corpus/papers.jsonl`: four papers, one of them hostile; `corpus/latex/`: one LaTeX paper; and for the
rendering, provenance and card tests `corpus/showcase.jsonl`: four documents of four kinds) goes through the
same ingest job the admin pages start (`ingest.jobs.job.IngestJob`): KaTeX converts it, Elasticsearch indexes it under a
prefix of its own, deleted afterwards. The formula encoder is the tests' `HashingEncoder` (tests/hashing_encoder.py), a
stand-in for the model with the same `Encoder` protocol, so that exact rankings do not move when the shipped bundle is
retrained: identical formulas get identical vectors, formulas sharing symbols get close ones."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from eqsearch.engine.es.config import EsConfig
from eqsearch.webui import create_app
from flask import Flask
from hashing_encoder import HashingEncoder

CORPUS = Path(__file__).parent / "corpus"
ADMIN_TOKEN = "test-admin-token-0123456789"
#: A cluster nobody answers on, and the admin's bearer header.
DEAD = replace(EsConfig(), url="http://127.0.0.1:1")
BEARER = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
DETERMINANT = r"\det(AB) = \det(A)\det(B)"  # stated only inline in 2003.00003; its "$\omega$" is too small to index
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
CHROMIUM = Path(os.environ.get("EQSEARCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def make_app(es_config, prefix: str, **extra: object) -> Flask:
    """An app on the real cluster, its indices under `prefix`."""
    config = {
        "TESTING": True,
        "ES_CONFIG": replace(es_config, index_prefix=prefix),
        "ADMIN_TOKEN": ADMIN_TOKEN,
        "SECRET_KEY": "test-secret-key",
        "ENCODER": HashingEncoder(),
        **extra,
    }
    return create_app(config)


def drop_prefix(es_client, prefix: str) -> None:
    """Delete every index under `prefix`."""
    for name in es_client.indices.get(index=f"{prefix}-*", expand_wildcards="all", ignore_unavailable=True):
        es_client.indices.delete(index=name, ignore_unavailable=True)


@pytest.fixture(scope="session")
def indexed_app(es_config, es_client) -> Iterator[Flask]:
    """An app whose index holds the test corpus (ingested once per session)."""
    prefix = f"eqsearch-test-web-{uuid.uuid4().hex[:8]}"
    app = make_app(es_config, prefix)
    services = app.extensions["eqsearch.services"]
    job = services.start_job(str(CORPUS / "papers.jsonl"), wait=True)
    assert job["state"] == "finished", job
    try:
        yield app
    finally:
        services.close()
        drop_prefix(es_client, prefix)


@pytest.fixture
def client(indexed_app: Flask):
    return indexed_app.test_client()


@pytest.fixture
def admin_client(indexed_app: Flask):
    """A test client logged in through the login form."""
    client = indexed_app.test_client()
    login(client)
    return client


def login(client) -> None:
    """Log in through the form (fetching its CSRF token first)."""
    client.get("/admin/login")
    with client.session_transaction() as session:
        token = session["csrf_token"]
    response = client.post("/admin/login", data={"token": ADMIN_TOKEN, "csrf_token": token})
    assert response.status_code == 302, response.data


def csrf_of(client) -> str:
    with client.session_transaction() as session:
        return session["csrf_token"]


@pytest.fixture
def fresh_app(es_config, es_client):
    """An app with its own indices (the admin tests change them)."""
    prefix = f"eqsearch-test-web-{uuid.uuid4().hex[:8]}"
    app = make_app(es_config, prefix)
    yield app
    app.extensions["eqsearch.services"].close()
    drop_prefix(es_client, prefix)


class LiveServer:
    """The app on a free loopback port, served by werkzeug in a thread (stopped by `stop`)."""

    def __init__(self, app: Flask) -> None:
        from werkzeug.serving import make_server

        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="live-server", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def live_server(indexed_app: Flask) -> Iterator[LiveServer]:
    server = LiveServer(indexed_app)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def showcase_server(es_config, es_client) -> Iterator[LiveServer]:
    """The app over `corpus/showcase.jsonl` (its own prefix) on a loopback port: a paper on Bayes' theorem (arXiv-style
    id, version 2), a statsmodels-like regression page with inline formulas that only its words match, a
    scikit-learn-like Gaussian process page and scipy.stats docstrings; a dozen typical formulas in all."""
    prefix = f"eqsearch-test-show-{uuid.uuid4().hex[:8]}"
    app = make_app(es_config, prefix)
    services = app.extensions["eqsearch.services"]
    job = services.start_job(str(CORPUS / "showcase.jsonl"), wait=True)
    assert job["state"] == "finished", job
    server = LiveServer(app)
    try:
        yield server
    finally:
        server.stop()
        services.close()
        drop_prefix(es_client, prefix)


@pytest.fixture(scope="session")
def browser():
    """Debian's headless Chromium driven by Playwright (Playwright never downloads a browser of its own)."""
    if not CHROMIUM.exists():
        message = f"browser tests need Chromium at {CHROMIUM}: apt-get install -y chromium (make test does)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message + " (CI=true: browser tests never skip)", pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, request):
    """A fresh browser page that fails the test on any dialog and records console errors."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.dialogs = []  # type: ignore[attr-defined]

    def on_dialog(dialog) -> None:
        page.dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield page
    context.close()


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot under artifacts/screenshots/ (git-ignored test artifacts)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def dead_app(**extra: object) -> Flask:
    """The app over `DEAD`, admin on."""
    return create_app({"ES_CONFIG": DEAD, "TESTING": True, "ADMIN_TOKEN": ADMIN_TOKEN, **extra})
