"""Connecting to Elasticsearch, with errors that say exactly what is wrong.

Every part of eqsearch gets its client from `connect`, which checks once that the cluster answers, that the
credentials work, and that the server's major version is the client's. Given several nodes of one cluster, the
check asks the first that answers, and the client spreads requests over all of them: a request that meets a dead
node (refused, reset) is sent again to another one, so losing a node costs no request.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from urllib.parse import urlsplit

import elastic_transport
from elasticsearch import AuthenticationException, AuthorizationException, Elasticsearch
from elasticsearch import __versionstr__ as CLIENT_VERSION
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.es.config import EsConfig

CLIENT_MAJOR = int(CLIENT_VERSION.split(".")[0])


class ElasticsearchUnavailableError(EqsearchError):
    """The cluster does not answer."""

    exit_code = 5


class AuthenticationFailedError(EqsearchError):
    """The cluster refused the credentials."""

    exit_code = 6


class VersionMismatchError(EqsearchError):
    """The server's major version differs from the client's."""

    exit_code = 7


@dataclass(frozen=True)
class ClusterInfo:
    url: str
    version: str
    cluster_name: str
    build_flavor: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


def make_client(config: EsConfig) -> Elasticsearch:
    """An `Elasticsearch` client for `config`, without contacting the server."""
    kwargs: dict[str, object] = {"request_timeout": config.request_timeout}
    if config.api_key:
        kwargs["api_key"] = config.api_key
    elif config.username:
        kwargs["basic_auth"] = (config.username, config.password or "")
    if config.ca_file:
        kwargs["ca_certs"] = str(config.ca_file)
    if not config.verify_certs:
        kwargs["verify_certs"] = False
        kwargs["ssl_show_warn"] = False
    return Elasticsearch(list(config.effective_urls), **kwargs)


class _HttpStatusError(Exception):
    def __init__(self, status: int, body: object) -> None:
        super().__init__(f"HTTP {status}: {str(body)[:300]}")
        self.status = status


def _probe(config: EsConfig, url: str) -> dict:
    """Who answers at `url`: GET / without the client's compatibility header, so that any major answers."""
    scheme, host, port = _split_url(url)
    ca_certs = str(config.ca_file) if config.ca_file else None
    node = elastic_transport.NodeConfig(
        scheme, host, port, ca_certs=ca_certs, verify_certs=config.verify_certs, ssl_show_warn=False
    )
    transport = elastic_transport.Transport([node], max_retries=0)
    headers = {"accept": "application/json"}
    if config.api_key:
        headers["authorization"] = f"ApiKey {config.api_key}"
    elif config.username:
        token = base64.b64encode(f"{config.username}:{config.password or ''}".encode()).decode()
        headers["authorization"] = f"Basic {token}"
    timeout = min(config.request_timeout, 10.0)

    def get(path: str) -> object:
        response = transport.perform_request("GET", path, headers=headers, request_timeout=timeout)
        if response.meta.status >= 300:
            raise _HttpStatusError(response.meta.status, response.body)
        return response.body

    try:
        try:
            return get("/")
        except _HttpStatusError as error:
            if error.status not in (404, 405):
                raise
        # A cluster without the rest-root module (Elasticsearch's minimal distribution) has no `GET /`.
        body = get("/_nodes/_local?filter_path=cluster_name,nodes.*.version,nodes.*.build_flavor")
    finally:
        transport.close()
    node_info = next(iter(body.get("nodes", {}).values()), {}) if isinstance(body, dict) else {}
    if not node_info:
        return body
    version = {"number": node_info.get("version", "0"), "build_flavor": node_info.get("build_flavor", "?")}
    return {"cluster_name": body.get("cluster_name", "?"), "version": version}


def _split_url(url: str) -> tuple[str, str, int]:

    parts = urlsplit(url if "://" in url else f"http://{url}")
    scheme = parts.scheme or "http"
    port = parts.port or (443 if scheme == "https" else 9200)
    return scheme, parts.hostname or "localhost", port


def check_cluster(config: EsConfig) -> ClusterInfo:
    """Contact the cluster once and check reachability, credentials and the major version.

    Given several node URLs, they are tried in order and the first that answers is checked: a cluster with a node
    down still passes.

    Raises:
        ElasticsearchUnavailableError: nothing answers at any URL (or not an Elasticsearch).
        AuthenticationFailedError: the credentials were refused (401) or lack rights (403).
        VersionMismatchError: the server's major version is not the client's.
    """
    urls = config.effective_urls
    for url in urls[:-1]:
        try:
            return _check_one(config, url)
        except ElasticsearchUnavailableError:
            continue
    return _check_one(config, urls[-1], everywhere=len(urls) > 1)


def _check_one(config: EsConfig, url: str, *, everywhere: bool = False) -> ClusterInfo:
    """`check_cluster` on one node URL (`everywhere`: the last of several, so none answered)."""
    local_hint = (
        "start the managed local node with: eqsearch es start"
        if config.uses_local_node
        else "check EQSEARCH_ES_URL, or unset it to use the managed local node"
    )
    where = config.effective_url if everywhere else url
    try:
        body = _probe(config, url)
    except elastic_transport.TlsError as error:
        raise ElasticsearchUnavailableError(
            f"TLS handshake with {url} failed: {error}",
            hint="set EQSEARCH_ES_CA_FILE to the cluster's CA certificate",
        ) from error
    except elastic_transport.ConnectionError as error:
        raise ElasticsearchUnavailableError(f"Elasticsearch is not reachable at {where}", hint=local_hint) from error
    except elastic_transport.ConnectionTimeout as error:
        raise ElasticsearchUnavailableError(
            f"Elasticsearch at {where} did not answer in time", hint=local_hint
        ) from error
    except _HttpStatusError as error:
        status = error.status
        if status in (401, 403):
            raise AuthenticationFailedError(
                f"Elasticsearch at {url} refused the credentials (HTTP {status}) given as {config.describe()}",
                hint="check EQSEARCH_ES_API_KEY, or EQSEARCH_ES_USERNAME and EQSEARCH_ES_PASSWORD",
            ) from error
        raise ElasticsearchUnavailableError(
            f"{url} answered HTTP {status}; it may not be Elasticsearch: {error}", hint=local_hint
        ) from error
    return _cluster_info(url, body)


def _cluster_info(url: str, body: object) -> ClusterInfo:
    if not isinstance(body, dict) or "version" not in body:
        raise ElasticsearchUnavailableError(f"{url} answered, but it is not Elasticsearch: {str(body)[:200]}")
    version = body["version"]
    info = ClusterInfo(
        url, str(version.get("number", "0")), str(body.get("cluster_name", "?")), str(version.get("build_flavor", "?"))
    )
    if info.major != CLIENT_MAJOR:
        raise VersionMismatchError(
            f"Elasticsearch at {url} is version {info.version}, but eqsearch's client is {CLIENT_VERSION} "
            f"(major {CLIENT_MAJOR}); client and server majors must match",
            hint=f"use an Elasticsearch {CLIENT_MAJOR}.x cluster (the managed local node is one)",
        )
    return info


def connect(config: EsConfig) -> tuple[Elasticsearch, ClusterInfo]:
    """A checked client: `check_cluster`, then `make_client`, then one authenticated call through the client."""
    info = check_cluster(config)
    client = make_client(config)
    try:
        client.cluster.health()
    except (AuthenticationException, AuthorizationException) as error:
        raise AuthenticationFailedError(
            f"Elasticsearch at {info.url} refused the credentials for cluster calls: {error}",
            hint="the user or API key needs the 'monitor' and index privileges on eqsearch-* indices",
        ) from error
    return client, info
