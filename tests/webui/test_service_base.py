"""The four errors the web pages know (`webui/service_base.py`): what each declares (the HTTP status and code an
`InvalidRequestError` answers with, the exit code of a backend that does not answer), that `webui/services.py` hands
out the same classes, and that the app answers each, raised by a view, with what it declares."""

from __future__ import annotations

import eqsearch.webui.services as services_module
import pytest
from eqsearch.engine.errors import EqsearchError
from eqsearch.webui.service_base import (
    BackendUnavailableError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    NotIndexedError,
    PathForbiddenError,
    PathMissingError,
)

from .conftest import dead_app

REQUEST_ERRORS = {
    InvalidRequestError: (400, "invalid_request"),
    ConflictError: (409, "conflict"),
    PathForbiddenError: (403, "path_forbidden"),
    PathMissingError: (422, "path_not_found"),
}


def test_each_error_declares_its_answer_and_the_services_hand_out_the_same_classes():
    for error, (status, code) in REQUEST_ERRORS.items():
        assert issubclass(error, InvalidRequestError) and (error.http_status, error.error_code) == (status, code)
    for error in (BackendUnavailableError, NotIndexedError, NotFoundError, *REQUEST_ERRORS):
        assert issubclass(error, EqsearchError)
        assert getattr(services_module, error.__name__) is error
    assert BackendUnavailableError("down").exit_code == 5
    assert str(NotFoundError("no such job", hint="list the jobs")) == "no such job\n  hint: list the jobs"


@pytest.mark.parametrize("error", list(REQUEST_ERRORS))
def test_the_api_answers_a_request_error_with_its_status_and_code(error):
    app = dead_app()

    def refuse():
        raise error("the server says no")

    app.add_url_rule("/api/refuse", "refuse", refuse)
    response = app.test_client().get("/api/refuse")
    assert (response.status_code, response.get_json()["error"]["code"]) == REQUEST_ERRORS[error]
    assert response.get_json()["error"]["message"] == "the server says no"


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [(NotFoundError, 404, "not_found"), (BackendUnavailableError, 503, "backend_unavailable"),
     (NotIndexedError, 503, "not_indexed")],
)  # fmt: skip
def test_the_api_answers_the_other_three_with_theirs(error, status, code):
    app = dead_app()

    def fail():
        raise error("what happened")

    app.add_url_rule("/api/fail", "fail", fail)
    response = app.test_client().get("/api/fail")
    assert response.status_code == status and response.get_json()["error"]["code"] == code
