"""`/api/openapi.json` held to the server by schemathesis: every check, against a live server over the real test index.

Clients are generated from the document, so what it says must be what the server does. schemathesis reads the
document the live server serves, generates requests from it (valid ones, invalid ones, undeclared methods, requests
without or with wrong credentials; fixed seed, a bounded number of examples per operation) and checks every answer
against it: no server error, only declared statuses, content types, headers and bodies, schema-valid requests
accepted and schema-violating ones refused, 405 with ``Allow`` for an undeclared method, admin operations refusing
missing or wrong credentials, and the rest of schemathesis's checks (`ALL_CHECKS`; ``max_response_time`` with a
limit only a hung request passes). Two runs: one with the admin token (the admin operations' answers are checked too,
and each is probed without and with a wrong token), one without it (they must refuse).

The app shares the index of `indexed_app`, with ``EQSEARCH_INGEST_ROOT`` set to a folder that does not exist: no
generated ``POST /api/jobs`` can start an ingest job (they end as 403 or 422), while the corpus's finished job is there
to read and to refuse to resume (409).

One check is narrowed, on the search only, for a documented reason: `positive_data_acceptance` expects no 400 for a
schema-valid request, but the search refuses three things no JSON Schema keyword can say for query parameters (and two
of them for a body either): a reversed year range, a malformed query variable, and a GET with neither ``latex`` nor
``q``. The document says so in the 400's description; here 400 is allowed on the search, and `documented_refusals_only`
fails any 400 to a schema-valid search whose message is not one of those three. Likewise ``POST /api/jobs`` may
answer 422 to a schema-valid path that does not exist on the server (a fact about the server, as 404 and 409 are).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import schemathesis
from flask import Flask
from schemathesis.engine import events

from .conftest import ADMIN_TOKEN, LiveServer, make_app

SEED = 1
#: Generated examples per operation and phase: ~1,250 requests over the two runs, ~20 s on 2 idle cores.
EXAMPLES = 25
#: Every check schemathesis 4 has (`schemathesis.config.ChecksConfig`), all on.
ALL_CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "positive_data_acceptance",
    "negative_data_rejection",
    "use_after_free",
    "ensure_resource_availability",
    "missing_required_header",
    "ignored_auth",
    "object_level_authorization",
    "unsupported_method",
    "allow_header_conformance",
    "max_response_time",
)
#: Seconds: only a hung request takes longer (a search here takes well under one).
MAX_RESPONSE_S = 30.0
#: The search's refusals of schema-valid requests, as the document's 400 describes them (messages of
#: `eqsearch.webui.query.parse_query`, `eqsearch.engine.model.patterns` and `eqsearch.webui.api.search`).
SEARCH_REFUSALS = (
    re.compile(r"the year range is reversed: from \d+ to \d+"),
    re.compile(r"query variable|variable name|'\?"),
    re.compile(r"give a formula \('latex'\) or keywords \('q'\)"),
)
#: Values from the test corpus, which generated ones are mixed with so that the answers with content are checked too.
EQUATIONS = ["2002.00002:2", "2003.00003:i1", "2001.00001:0", "2004.66666:0"]
PAPERS = ["2002.00002", "2003.00003", "2004.66666"]
FORMULAS = [r"\sum_{i=1}^n x_i^2", r"?a^2 + ?b^2 = ?c^2", r"e^{i\pi} + 1 = 0", r"\frac{x", "E = mc^2"]
WORDS = ["gradient iteration", "Cauchy inequality", "energy"]


@schemathesis.check
def documented_refusals_only(ctx: schemathesis.CheckContext, response: schemathesis.Response, case) -> bool | None:
    """A schema-valid search refused with 400 must be refused for one of the reasons its 400 documents."""
    meta = case.meta
    if case.operation.path != "/api/search" or response.status_code != 400 or meta is None:
        return None
    if not meta.generation.mode.is_positive:
        return None
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text
    if not any(refusal.search(message) for refusal in SEARCH_REFUSALS):
        raise AssertionError(f"a schema-valid search was refused for a reason the document does not give: {message}")
    return None


@dataclass
class Outcome:
    """What one schemathesis run found: its failures and errors as lines of a report, and how many requests it sent."""

    requests: int = 0
    by_operation: Counter[str] = field(default_factory=Counter)
    failures: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    stop_reason: str = ""

    def report(self) -> str:
        counts = ", ".join(f"{label} {count}" for label, count in sorted(self.by_operation.items()))
        lines = [f"{self.requests} requests ({counts}), stopped: {self.stop_reason}"]
        for (operation, title), found in sorted(self.failures.items()):
            lines.append(f"- {operation}: {title} ({len(found)}x)")
            lines.extend("    " + line for line in found[0].splitlines()[:12])
        lines.extend(f"- error: {error}" for error in self.errors)
        return "\n".join(lines)


def run_schemathesis(url: str, *, token: str | None, job_id: str, only: str | None = None) -> Outcome:
    """Run every phase of schemathesis's engine against the document at `url` and collect what it found.

    Args:
        url: the server's base URL.
        token: the admin token to authenticate with (None: none).
        job_id: a job the server knows, mixed into the generated job ids.
        only: a regular expression of the paths to test (None: all).
    """
    checks: dict[str, object] = {name: {"enabled": True} for name in ALL_CHECKS if name != "max_response_time"}
    checks["max_response_time"] = MAX_RESPONSE_S
    checks["documented_refusals_only"] = {"enabled": True}
    accepted = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]  # schemathesis's default for valid requests
    config: dict[str, object] = {
        "seed": SEED,
        "generation": {"max-examples": EXAMPLES, "database": "none"},  # no examples replayed from earlier runs
        "checks": checks,
        "dictionaries": {
            "equations": {"values": EQUATIONS},
            "papers": {"values": PAPERS},
            "jobs": {"values": [job_id]},
            "formulas": {"values": FORMULAS},
            "words": {"values": WORDS},
        },
        "parameters": {
            "path.eq_id": {"dictionary": "equations", "probability": 0.5},
            "path.paper_id": {"dictionary": "papers", "probability": 0.5},
            "path.job_id": {"dictionary": "jobs", "probability": 0.5},
            "query.latex": {"dictionary": "formulas", "probability": 0.3},
            "body.latex": {"dictionary": "formulas", "probability": 0.3},
            "query.q": {"dictionary": "words", "probability": 0.3},
        },
        "operations": [
            {  # what the search refuses that no schema can say; `documented_refusals_only` checks each such 400
                "include-path": "/api/search",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*accepted, "400"]}},
            },
            {  # a well-formed path may not exist on the server: 422, as a missing resource is a 404
                "include-path": "/api/jobs",
                "include-method": "POST",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*accepted, "422"]}},
            },
        ],
    }
    if token is not None:
        config["auth"] = {"openapi": {"bearerAuth": {"bearer": token}}}
    if only is not None:  # an entry that turns off what `only` does not match (`schema.include` yields to entries)
        config["operations"].append({"exclude-path-regex": only, "enabled": False})  # type: ignore[attr-defined]
    schema = schemathesis.openapi.from_url(f"{url}/api/openapi.json", config=schemathesis.Config.from_dict(config))
    outcome = Outcome()
    for event in schemathesis.engine.from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished):
            recorder = event.recorder
            outcome.requests += len(recorder.interactions)
            outcome.by_operation[recorder.label] += len(recorder.interactions)
            for checks_of_case in recorder.checks.values():
                for check in checks_of_case:
                    if check.failure_info is None:
                        continue
                    failure = check.failure_info.failure
                    key = (failure.operation or recorder.label, f"{check.name}: {failure.title}")
                    outcome.failures.setdefault(key, []).append(f"{failure.message}\n{check.failure_info.code_sample}")
        elif isinstance(event, events.NonFatalError):
            outcome.errors.append(f"{event.label}: {event.info.format()}")
        elif isinstance(event, events.FatalError):
            outcome.errors.append(f"fatal: {event.exception!r}")
        elif isinstance(event, events.EngineFinished):
            outcome.stop_reason = event.stop_reason.value
            for failure in event.failures:
                outcome.failures.setdefault((failure.operation or "run", failure.title), []).append(failure.message)
    return outcome


@pytest.fixture(scope="module")
def contract_server(es_config, indexed_app: Flask, tmp_path_factory) -> Iterator[tuple[LiveServer, str]]:
    """The app over `indexed_app`'s index, ingest limited to a folder that does not exist; and the corpus's job id."""
    services = indexed_app.extensions["eqsearch.services"]
    app = make_app(es_config, services.prefix, INGEST_ROOT=str(tmp_path_factory.mktemp("contract") / "none"))
    services.client.indices.refresh(index=services.alias("jobs"))  # the corpus's job, listed
    server = LiveServer(app)
    try:
        yield server, services.jobs()[0]["job_id"]
    finally:
        server.stop()
        app.extensions["eqsearch.services"].close()


@pytest.mark.es
@pytest.mark.slow
def test_the_server_keeps_to_its_openapi_document(contract_server):
    server, job_id = contract_server
    with_token = run_schemathesis(server.url, token=ADMIN_TOKEN, job_id=job_id)
    without_token = run_schemathesis(server.url, token=None, job_id=job_id, only="^/api/jobs")
    report = f"with the admin token: {with_token.report()}\n\nwithout it: {without_token.report()}"
    print(report)  # the request counts, with -s
    assert not with_token.failures and not with_token.errors, report
    assert not without_token.failures and not without_token.errors, report
    assert with_token.stop_reason == without_token.stop_reason == "completed", report
    assert with_token.requests >= 500 and without_token.requests >= 50, report  # the runs reached the server
