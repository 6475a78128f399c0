"""gunicorn's threaded worker, answering requests it cannot read in the API's JSON error format.

gunicorn refuses a request line longer than ``limit_request_line`` (4,094 bytes: a formula of a few thousand
characters in a URL) or oversized headers before the app sees them, with an HTML page. A client of the JSON API
then gets a page it cannot parse; this worker writes ``{"error": {"code", "message"}}`` instead, with the same
status gunicorn would give (414 for the request line, 431 for headers, 400 for a malformed request), and a message
that says what to do. Everything else is gunicorn's ``gthread`` worker unchanged. Only loaded by gunicorn
(``eqsearch serve --production``, the Docker image), which the ``server`` extra installs.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util
from gunicorn.http import errors
from gunicorn.workers.gthread import ThreadWorker

#: The dotted path gunicorn's ``worker_class`` setting takes.
WORKER_CLASS = "eqsearch.webui.gunicorn_worker.JsonErrorWorker"

_UNREADABLE = (
    errors.InvalidRequestLine,
    errors.InvalidRequestMethod,
    errors.InvalidHTTPVersion,
    errors.InvalidHeader,
    errors.InvalidHeaderName,
    errors.ObsoleteFolding,
    errors.InvalidSchemeHeaders,
    errors.InvalidProxyLine,
)


def json_error(exc: BaseException, limit_request_line: int) -> tuple[int, str, str, str] | None:
    """``(status, reason, code, message)`` for a request gunicorn could not read, or None for other errors."""
    if isinstance(exc, errors.LimitRequestLine):
        return (
            414,
            "URI Too Long",
            "request_line_too_long",
            f"The request line is longer than this server's limit of {limit_request_line:,} bytes; send a long "
            'formula by POST /api/search with a JSON body ({"latex": "...", "q": "..."}).',
        )
    if isinstance(exc, errors.LimitRequestHeaders):
        return 431, "Request Header Fields Too Large", "headers_too_large", "The request's headers are too large."
    if isinstance(exc, _UNREADABLE):
        return 400, "Bad Request", "bad_request", f"The server could not read this HTTP request ({exc})."
    return None


class JsonErrorWorker(ThreadWorker):
    """gunicorn's ``gthread`` worker whose refusals of unreadable requests are JSON."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        answer = json_error(exc, self.cfg.limit_request_line)
        if answer is None:
            super().handle_error(req, client, addr, exc)
            return
        status, reason, code, message = answer
        self.log.info("refused a request from %s: %s", (addr or ("",))[0], exc)
        body = json.dumps({"error": {"code": code, "message": message}}).encode("utf-8")
        head = (
            f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        try:
            util.write_nonblock(client, head + body)
        except OSError:
            self.log.debug("could not send the error answer")
