"""gunicorn's refusals in the API's JSON error format (`eqsearch.webui.gunicorn_worker`); the worker under a real
gunicorn is tested in tests/cli/test_serve.py."""

from __future__ import annotations

from eqsearch.webui.gunicorn_worker import WORKER_CLASS, JsonErrorWorker, json_error
from gunicorn.http import errors
from gunicorn.util import load_class


def test_each_refusal_gets_its_status_and_a_code():
    status, _, code, message = json_error(errors.LimitRequestLine(9000, 4094), 4094)
    assert (status, code) == (414, "request_line_too_long") and "4,094 bytes" in message and "POST" in message
    assert json_error(errors.LimitRequestHeaders("too many"), 4094)[:3] == (
        431,
        "Request Header Fields Too Large",
        "headers_too_large",
    )
    assert json_error(errors.InvalidRequestLine("GARBAGE"), 4094)[2] == "bad_request"
    assert json_error(ValueError("a bug"), 4094) is None  # left to gunicorn (a 500, logged)


def test_gunicorn_loads_the_worker_by_its_dotted_path():
    assert load_class(WORKER_CLASS) is JsonErrorWorker
