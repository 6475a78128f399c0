"""Random hostile searches against the real app and node: never a 5xx, never an exception, always JSON or a page.

Each request is built from fixed-seed draws of LaTeX fragments (unbalanced groups, TeX primitives, query variables,
control and bidi characters, surrogates' neighbours), keyword fragments (Lucene query syntax, huge tokens, markup) and
search parameters with malformed values; they go to the JSON API (GET and POST, bodies of the wrong shape included),
the search page and the LaTeX preview. A malformed request must be a 400 that says what is wrong; everything else a
200. The seeds are fixed, so a failure names the request that caused it and reproduces.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

pytestmark = pytest.mark.es

LATEX = ["\\frac", "{", "}", "\\left(", "\\right)", "^", "_", "x", "\\sum", "\\int", "&", "\\\\", "\\begin{array}",
         "\\end{array}", "\\begin{pmatrix}", "?a", "?", "\\", "%", "$", "$$", "#", "#1", "\\def\\x{", "\\newcommand",
         "\\over", "\\text{", "é", "∑", "\x00", "\ud7ff", "\U0001f600", "\u202e", "<script>", "&amp;", '"', "'",
         "\\href{javascript:alert(1)}{x}", "\\color{red}", "\\rule{1000em}{1000em}", "\\kern-1000em", "\\sqrt[", "]",
         "\\limits", "=", "+", "1", "\\alpha", "\\mathbb{R}", "\\tag{1}", "\\label{x}", "\\input{/etc/passwd}",
         "\\verb|x|", "\\[", "\\]", "^^", "\\csname", "\\catcode", "\t", "\n", " ", "{{{{{{{{", "}}}}}}}}"]  # fmt: skip
WORDS = ["bayes", "AND", "OR", "NOT", "(", ")", '"', "*", "?", "~2", "^3", "title:", "field:x", "\\", "/", "[", "]",
         "{", "}", ":", "!", "+", "-", "&&", "||", "é", "∑", "\x00", "<b>", "%", "a" * 300, "energy", "\U0001f600",
         "NaN", "1e309", "\u202e", "\ufffd", "..."]  # fmt: skip
PARAMETERS = ["w", "cat", "from", "to", "page", "size", "fusion", "inline", "paper", "group"]
VALUES = ["", "0", "1", "-1", "0.5", "nan", "inf", "1e9", "abc", "2020", "9" * 20, "rrf", "linear", "evidence", "only",
          "exclude", "include", "cs.LG", "é", "\x00", " ", "[]"]  # fmt: skip
BAD_BODIES: list[Any] = [[1], "x", None, {"latex": 5}, {"q": ["a"]}, {"latex": {"a": 1}}, {"cat": 3, "q": "x"}]


def _draw(rng: random.Random, pool: list[str], most: int, sep: str = "") -> str:
    return sep.join(rng.choice(pool) for _ in range(rng.randint(0, most)))


def _request(rng: random.Random) -> tuple[str, str, dict[str, Any], Any]:
    """(method, path, query string, JSON body) of one random request."""
    params: dict[str, Any] = {}
    if rng.random() < 0.8:
        params["latex"] = _draw(rng, LATEX, 12)
    if rng.random() < 0.7:
        params["q"] = _draw(rng, WORDS, 8, " ")
    for _ in range(rng.randint(0, 3)):
        params[rng.choice(PARAMETERS)] = rng.choice(VALUES)
    kind = rng.random()
    if kind < 0.4:
        return "GET", "/api/search", params, None
    if kind < 0.55:
        return "POST", "/api/search", {}, params if rng.random() < 0.8 else rng.choice(BAD_BODIES)
    if kind < 0.85:
        return "GET", "/", params, None
    return "GET", "/api/render", {"latex": params.get("latex", "")}, None


@pytest.mark.parametrize("seed", [1, 2])
def test_random_hostile_searches_are_answered_never_a_server_error(client, seed):
    rng = random.Random(seed)
    statuses: Counter[tuple[str, int]] = Counter()
    for number in range(150):
        method, path, query, body = _request(rng)
        response = client.open(path, method=method, query_string=query, json=body)
        where = f"request {number} of seed {seed}: {method} {path} {query!r} {body!r}"
        statuses[(path, response.status_code)] += 1
        assert response.status_code in (200, 400), f"{response.status_code} for {where}"
        if path.startswith("/api/"):
            data = response.get_json()
            assert isinstance(data, dict), where
            if response.status_code == 400:
                assert data["error"]["message"], where
        else:
            assert response.mimetype == "text/html", where
    # the draws reach the search itself, not only the parameter checks
    assert statuses[("/api/search", 200)] >= 20 and statuses[("/", 200)] >= 10, statuses
