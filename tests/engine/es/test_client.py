"""The client and its clear connection errors (`engine/es/client.py`): an unreachable node, refused credentials on a
secured node, a server of another major version, and one client of several node URLs, on real nodes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from eqsearch.engine.es.client import (
    AuthenticationFailedError,
    ElasticsearchUnavailableError,
    VersionMismatchError,
    check_cluster,
    connect,
    make_client,
)
from eqsearch.engine.es.config import EsConfig
from eqsearch.engine.es.distribution import PINNED, Distribution
from eqsearch.engine.es.local_node import LocalNode
from local_nodes import MAIN, free_port, node_config

# Elasticsearch 8.19.21's minimal distribution on Maven Central; SHA-256 measured when this test was written.
ES8 = Distribution("8.19.21", "215d5f3dbf0609a149f6218a9e47b6ae2df34ebbff3c5754e35f15a5e5393c8a")


def test_unreachable_node_is_a_clear_error():
    port = free_port()
    with pytest.raises(ElasticsearchUnavailableError, match=rf"not reachable at http://127.0.0.1:{port}") as caught:
        check_cluster(EsConfig(url=f"http://127.0.0.1:{port}"))
    assert "EQSEARCH_ES_URL" in str(caught.value)
    local = EsConfig(local=replace(MAIN, port=port))
    with pytest.raises(ElasticsearchUnavailableError, match="eqsearch es start"):
        check_cluster(local)


@pytest.mark.es
@pytest.mark.slow
def test_wrong_credentials_on_a_secured_node():
    port = free_port()
    node = LocalNode(node_config("secured", port), security=True, superuser=("eqadmin", "right-password-42"))
    try:
        node.start()
        url = f"http://127.0.0.1:{port}"
        client, info = connect(EsConfig(url=url, username="eqadmin", password="right-password-42"))
        assert info.version == PINNED.version
        assert client.cluster.health()["status"] in ("green", "yellow")
        with pytest.raises(AuthenticationFailedError, match="refused the credentials") as caught:
            check_cluster(EsConfig(url=url, username="eqadmin", password="wrong"))
        assert "wrong" not in str(caught.value), "a password must never appear in an error"
        with pytest.raises(AuthenticationFailedError):
            check_cluster(EsConfig(url=url))
        with pytest.raises(AuthenticationFailedError):
            check_cluster(EsConfig(url=url, api_key="bm90LWEta2V5Om5vcGU="))
    finally:
        node.stop()


@pytest.mark.es
@pytest.mark.slow
def test_client_server_major_mismatch_with_a_real_8x_node():
    port = free_port()
    config = node_config("es8", port, ES8)
    node = LocalNode(config, distribution=ES8)
    try:
        node.start()
        with pytest.raises(VersionMismatchError, match=r"is version 8\.19\.21, but eqsearch's client is 9\."):
            check_cluster(EsConfig(url=f"http://127.0.0.1:{port}"))
    finally:
        node.stop()


def test_several_urls_make_one_client_of_several_nodes():
    config = EsConfig(url=" http://a:9200, http://b:9201 ,http://c:9202")
    assert config.effective_urls == ("http://a:9200", "http://b:9201", "http://c:9202")
    client = make_client(config)
    try:
        assert len(client.transport.node_pool.all()) == 3
    finally:
        client.close()


def test_none_of_several_urls_answering_names_them_all():
    urls = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    with pytest.raises(ElasticsearchUnavailableError) as caught:
        check_cluster(EsConfig(url=",".join(urls)))
    assert f"not reachable at {','.join(urls)}" in str(caught.value)


@pytest.mark.es
def test_a_dead_first_url_is_passed_over(es_config):
    dead = f"http://127.0.0.1:{free_port()}"
    info = check_cluster(replace(es_config, url=f"{dead},{es_config.effective_urls[0]}"))
    assert info.major == 9
