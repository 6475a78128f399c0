"""WSGI entry point for production servers: `gunicorn eqsearch.webui.wsgi:app` (`eqsearch serve --production`, `make
run` and docker/Dockerfile serve it so).

The app is built at import, from `EQSEARCH_*` variables; with gunicorn's ``preload_app`` that happens once, before the
workers fork, and each worker opens its own resources on first use (`eqsearch.webui.services`).
"""

from eqsearch.webui.app import create_app

app = create_app()
