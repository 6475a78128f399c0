"""eqsearch.webui: the Flask app (search UI, JSON API, admin pages)."""

from eqsearch.webui.app import create_app

__all__ = ["create_app"]
