"""The Flask application factory."""

from __future__ import annotations

from collections.abc import Mapping

from eqsearch.engine.config import EsConfig
from flask import Flask, jsonify


def create_app(test_config: Mapping[str, object] | None = None) -> Flask:
    """Build the app. Configuration comes from `EQSEARCH_*` variables unless `test_config` is given.

    Args:
        test_config: Flask config values to use instead of the environment (tests).
    """
    app = Flask(__name__)
    if test_config is None:
        app.config.from_prefixed_env("EQSEARCH")
        app.config.setdefault("ES_CONFIG", EsConfig.from_env())
    else:
        app.config.update(test_config)
        app.config.setdefault("ES_CONFIG", EsConfig.from_env({}))

    @app.get("/healthz")
    def healthz():
        from eqsearch.engine.errors import EqsearchError
        from eqsearch.engine.es_client import check_cluster

        try:
            info = check_cluster(app.config["ES_CONFIG"])
        except EqsearchError as error:
            return jsonify(status="unavailable", elasticsearch=error.message), 503
        return jsonify(status="ok", elasticsearch=info.version)

    return app
