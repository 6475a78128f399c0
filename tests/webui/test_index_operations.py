"""Indices and migrations from the admin pages (`webui/index_operations.py`), on a deployment of its own against the
real node: a migration that keeps every document and says so, the plugin's note, an unknown kind refused, and the old
index deleted only with its name typed while a live one never is; and the operations called directly: an index
created and described, an unknown kind or name refused, a live index never deleted."""

from __future__ import annotations

import pytest
from eqsearch.engine.index import MAPPING_VERSIONS
from eqsearch.webui.services import InvalidRequestError, NotFoundError
from markupsafe import escape

from .conftest import CORPUS, csrf_of, login


@pytest.mark.es
def test_migration_from_the_admin_pages_keeps_every_document(fresh_app):
    services = fresh_app.extensions["eqsearch.services"]
    services.start_job(str(CORPUS / "papers.jsonl"), wait=True)
    client = fresh_app.test_client()
    login(client)
    before = {i.name: i.docs for i in services.indices() if i.kind == "equations" and i.alias}
    assert client.get("/admin/kinds/equations/migrate").status_code == 200
    refused = client.post("/admin/kinds/equations/migrate", data={"confirm": "yes"})
    assert refused.status_code == 403  # no CSRF token
    done = client.post("/admin/kinds/equations/migrate", data={"confirm": "yes", "csrf_token": csrf_of(client)})
    assert done.status_code == 302  # at once: the copy runs in the background (a web request may not outlast it)
    services.runner.migrations["equations"].join(timeout=120)
    after = {i.name: i.docs for i in services.indices() if i.kind == "equations" and i.alias}
    page = client.get("/admin/").get_data(as_text=True)
    # 12 displays and 2003.00003's one inline formula of three symbols or more
    assert 'id="last-migrations"' in page and f"13 documents copied; {services.alias('equations')} now reads" in page
    # the plugin's one line, as 'eqsearch es check' prints it (the node here may or may not carry the plugin)
    from eqsearch.engine.search.plugin import detect_plugin

    assert 'id="plugin-note"' in page and escape(detect_plugin(services.client).note) in page
    unknown = client.post(
        "/admin/kinds/nope/migrate", data={"confirm": "yes", "csrf_token": csrf_of(client)}, follow_redirects=True
    )
    assert "Unknown index kind &#39;nope&#39;" in unknown.get_data(as_text=True)
    assert list(after.values()) == list(before.values()) and after.keys() != before.keys()
    old = next(iter(before))
    assert client.get("/api/search?latex=E=mc^2").get_json()["hits"][0]["eq_id"] == "2002.00002:2"  # vectors copied
    # The old index is no longer live: it can be deleted, with its name typed.
    kept = client.post(f"/admin/indices/{old}/delete", data={"confirm_name": "nope", "csrf_token": csrf_of(client)})
    assert kept.status_code == 302 and old in [i.name for i in services.indices()]
    client.post(f"/admin/indices/{old}/delete", data={"confirm_name": old, "csrf_token": csrf_of(client)})
    assert old not in [i.name for i in services.indices()]
    # A live index is never deleted.
    live = next(iter(after))
    client.post(f"/admin/indices/{live}/delete", data={"confirm_name": live, "csrf_token": csrf_of(client)})
    assert live in [i.name for i in services.indices()]


@pytest.mark.es
def test_indices_are_created_listed_and_refused_by_name_and_kind(fresh_app):
    services = fresh_app.extensions["eqsearch.services"]
    assert services.indices() == [] and services.migration() is None and services.last_migrations() == []
    with pytest.raises(InvalidRequestError, match="unknown index kind 'nope'; choose one of"):
        services.create_index("nope")
    with pytest.raises(InvalidRequestError, match="does not exist yet: create the papers index first"):
        services.start_migration("papers")
    name = services.create_index("papers")
    row = services.index_row(name)
    assert (row.kind, row.version, row.alias, row.docs) == ("papers", 1, services.alias("papers"), 0)
    assert row.current_mapping and row.mapping_version == MAPPING_VERSIONS["papers"]
    assert "properties" in services.mapping(name)
    with pytest.raises(InvalidRequestError):
        services.create_index("papers")  # the alias exists: migrate instead
    with pytest.raises(NotFoundError, match="no index named 'missing'"):
        services.index_row("missing")
    with pytest.raises(InvalidRequestError):
        services.delete_index(name)  # live: searches read it
    assert [r.name for r in services.indices()] == [name]
