"""`eqsearch serve`: the web UI and API, on gunicorn (``--production``, what `make run` and the Docker image use) or on
Flask's development server (the default: one process, ``--debug`` reloads on code changes).

Production settings, the same as docker/Dockerfile's: one gunicorn worker process per usable core, each with a few
threads (``gthread``: searches wait on Elasticsearch, so threads overlap them; a long request never stops a worker's
heartbeat), and the app created once before the workers fork (``preload_app``): the workers then share one session key
even when EQSEARCH_SECRET_KEY is unset, and each opens its own resources (the Elasticsearch client, KaTeX workers, the
encoder) on first use, after the fork (`eqsearch.webui.services`).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

#: Threads per gunicorn worker.
THREADS = 4
#: Seconds a worker may go silent before gunicorn replaces it (gthread workers stay in touch while requests run).
WORKER_TIMEOUT = 60


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `serve` command."""
    serve = subparsers.add_parser(
        "serve",
        help="serve the search UI, the JSON API and the admin pages",
        description=(
            "Serves the web app, configured from EQSEARCH_* variables (EQSEARCH_ES_URL, EQSEARCH_ADMIN_TOKEN, "
            "EQSEARCH_SECRET_KEY, ...). By default on Flask's development server (one process, for development); "
            "--production serves it with gunicorn (the 'server' extra), one worker process per core with "
            f"{THREADS} threads each, as `make run` and the Docker image do."
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=5000, help="TCP port (default 5000)")
    mode = serve.add_mutually_exclusive_group()
    mode.add_argument(
        "--production", action="store_true", help="serve with gunicorn: several worker processes, no debug pages"
    )
    mode.add_argument(
        "--debug", action="store_true", help="development server: reload on code changes, debug pages (never public)"
    )
    serve.add_argument(
        "--workers", type=int, help="gunicorn worker processes with --production (default: one per usable core)"
    )
    serve.set_defaults(handler=_serve)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def gunicorn_options(host: str, port: int, workers: int | None = None) -> dict[str, Any]:
    """The gunicorn settings of ``--production`` (docker/Dockerfile passes the same ones on gunicorn's command line)."""
    return {
        "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "workers": workers or usable_cores(),
        # gthread, answering requests it cannot read (an over-long URL) in the API's JSON error format
        "worker_class": "eqsearch.webui.gunicorn_worker.JsonErrorWorker",
        "threads": THREADS,
        "preload_app": True,
        "timeout": WORKER_TIMEOUT,
        "accesslog": "-",
    }


def _serve(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise SystemExit(f"eqsearch serve: error: --port must lie in 1..65535, got {args.port}")
    if args.workers is not None and not args.production:
        raise SystemExit("eqsearch serve: error: --workers needs --production")
    if args.workers is not None and args.workers < 1:
        raise SystemExit(f"eqsearch serve: error: --workers must be 1 or more, got {args.workers}")
    if args.production:
        return _serve_production(args)
    from eqsearch.webui.app import create_app

    app = create_app()
    print(
        f"eqsearch: serving on http://{args.host}:{args.port}/ with Flask's development server "
        "(one process, for development; --production serves with gunicorn) (Ctrl-C stops)"
    )
    app.run(host=args.host, port=args.port, debug=args.debug, use_reloader=args.debug, threaded=True)
    return 0


def _serve_production(args: argparse.Namespace) -> int:
    from eqsearch.engine.errors import EqsearchError

    try:
        from gunicorn.app.base import BaseApplication
    except ImportError:
        raise EqsearchError(
            "--production serves with gunicorn, which is not installed",
            hint="pip install 'eqsearch[server]' (make setup installs it), or serve without --production",
        ) from None
    options = gunicorn_options(args.host, args.port, args.workers)

    class Server(BaseApplication):  # gunicorn's documented way to embed it
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            from eqsearch.webui.wsgi import app

            return app

    print(
        f"eqsearch: serving on http://{args.host}:{args.port}/ with gunicorn, {options['workers']} workers x "
        f"{THREADS} threads (Ctrl-C stops)",
        flush=True,
    )
    Server().run()
    return 0
