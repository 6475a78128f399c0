"""WSGI entry point for production servers: `gunicorn eqsearch.webui.wsgi:app`."""

from eqsearch.webui.app import create_app

app = create_app()
