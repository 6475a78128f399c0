from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from eqsearch.webui.query import QueryError, parse_query, query_string
from werkzeug.datastructures import MultiDict


def parse(**kwargs):
    return parse_query(MultiDict(kwargs), page_size=10)


def test_the_query_string_round_trips():
    args = MultiDict([("latex", r"\sum x_i"), ("q", "sum"), ("w", "0.7"), ("cat", "math.PR cs.LG"), ("from", "2019"),
                      ("page", "2")])  # fmt: skip
    query = parse_query(args, page_size=10)
    assert query.categories == ("math.PR", "cs.LG")
    assert (query.formula_weight, query.year_from, query.page) == (0.7, 2019, 2)
    again = parse_query(MultiDict(parse_qsl(query_string(query))), page_size=10)
    assert again == query
    only = parse(latex="x+y", inline="only")
    assert only.inline == "only" and "inline=only" in query_string(only)
    assert parse(latex="x+y").inline == "include" and "inline" not in query_string(parse(latex="x+y"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"w": "2"}, "'w'"),
        ({"w": "heavy"}, "'w'"),
        ({"page": "0"}, "'page'"),
        ({"from": "2020", "to": "2019"}, "reversed"),
        ({"fusion": "max"}, "'fusion'"),
        ({"inline": "some"}, "'inline'"),
        ({"latex": "x" * 5000}, "characters"),
    ],
)
def test_bad_parameters_say_what_was_received(args, message):
    with pytest.raises(QueryError, match=message):
        parse(**args)
