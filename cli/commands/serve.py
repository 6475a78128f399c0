"""`eqsearch serve`: the web UI and API on Flask's development server (production: gunicorn, see docker/)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `serve` command."""
    serve = subparsers.add_parser(
        "serve",
        help="serve the search UI, the JSON API and the admin pages locally",
        description=(
            "Runs the web app on Flask's development server, configured from EQSEARCH_* variables "
            "(EQSEARCH_ES_URL, EQSEARCH_ADMIN_TOKEN, EQSEARCH_SECRET_KEY, ...). For production use gunicorn: "
            "gunicorn 'eqsearch.webui.wsgi:app'."
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=5000, help="TCP port (default 5000)")
    serve.add_argument(
        "--debug", action="store_true", help="reload on code changes and show debug pages (never in production)"
    )
    serve.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise SystemExit(f"eqsearch serve: error: --port must lie in 1..65535, got {args.port}")
    from eqsearch.webui.app import create_app

    app = create_app()
    print(f"eqsearch: serving on http://{args.host}:{args.port}/ (Ctrl-C stops)")
    app.run(host=args.host, port=args.port, debug=args.debug, use_reloader=args.debug, threaded=True)
    return 0
