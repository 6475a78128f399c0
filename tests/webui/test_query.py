from __future__ import annotations

import re
from urllib.parse import parse_qsl

import pytest
from eqsearch.webui.query import QueryError, parse_query, query_string, search_args_of_body
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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"page": "1_0"}, "'page' must be a whole number"),  # int() would take these; the document's integer does not
        ({"from": "\u0662\u0660\u0662\u0660"}, "'from' must be a whole number"),
        ({"w": "nan"}, "'w'"),
        ({"w": "0_5"}, "'w'"),
        ({"group": "maybe"}, "'group' must be true or false"),
        ({"highlight": "2"}, "'highlight' must be true or false"),
        ({"fusion": " rrf"}, "'fusion' must be one of"),  # an enumeration's value exactly
        ({"inline": "ONLY"}, "'inline' must be one of"),
        ({"latex": "x" + " " * 4000}, "characters"),  # the limit counts what was sent, before trimming
        ({"q": "a" * 1001}, "keywords"),
    ],
)
def test_values_are_read_as_strictly_as_the_document_types_them(args, message):
    with pytest.raises(QueryError, match=message):
        parse(latex="x", **args) if "latex" not in args else parse(**args)


def test_what_the_document_types_allow_is_read():
    query = parse(latex="x", w="1e-1", page="+2", group="YES", highlight="0", fusion="rrf", inline="only", to="2020")
    assert (query.formula_weight, query.page, query.group_by_paper, query.highlight) == (0.1, 2, True, False)
    assert (query.fusion, query.inline, query.year_to) == ("rrf", "only", 2020)
    assert parse(latex="x", w="", page="", fusion="").fusion == "evidence"  # empty: the default


def test_a_search_body_takes_each_parameter_with_its_json_type():
    args = search_args_of_body(
        {"latex": "x", "w": 1, "page": 2.0, "group": True, "cat": ["a", "b"], "paper": None, "highlight": False}
    )
    query = parse_query(args, page_size=10)
    assert (query.formula_weight, query.page, query.group_by_paper, query.highlight) == (1.0, 2, True, False)
    assert query.categories == ("a", "b") and query.paper_id is None
    for body, message in [
        ({"w": "0.5"}, "'w' must be a number, got a JSON string"),
        ({"page": "2"}, "'page' must be an integer, got a JSON string"),
        ({"page": 1.5}, "'page' must be an integer, got a JSON number"),
        ({"size": True}, "'size' must be an integer, got a JSON boolean"),
        ({"group": "true"}, "'group' must be a boolean, got a JSON string"),
        ({"latex": 5}, "'latex' must be a string, got a JSON number"),
        ({"cat": ["a", None]}, "'cat' must be a string or a list of strings"),
        ({"w": float("nan")}, "'w'"),
    ]:
        with pytest.raises(QueryError, match=re.escape(message)):
            parse_query(search_args_of_body(body), page_size=10)


def test_the_api_reads_each_parameter_once_and_a_typed_one_as_it_is_meant():
    def strict(*pairs: tuple[str, str]):
        return parse_query(MultiDict(pairs), page_size=10, strict=True)

    for pairs, message in [
        ((("latex", "x"), ("size", ""), ("size", "false")), "'size' is given 2 times"),
        ((("latex", "x"), ("size", "")), "'size' is empty"),
        ((("latex", "x"), ("inline", "")), "'inline' is empty"),
        ((("latex", "x"), ("page", " 2")), "'page' must be a whole number"),
        ((("latex", "x"), ("latex", "y")), "'latex' is given 2 times"),
    ]:
        with pytest.raises(QueryError, match=message):
            strict(*pairs)
    query = strict(("latex", " x "), ("q", ""), ("paper", ""), ("cat", "a"), ("cat", "b"), ("group", "1"))
    assert (query.latex, query.keywords, query.paper_id, query.categories) == ("x", None, None, ("a", "b"))
    assert query.group_by_paper is True
    lenient = parse_query(MultiDict([("latex", "x"), ("size", ""), ("page", " 2"), ("from", "")]), page_size=10)
    assert (lenient.size, lenient.page, lenient.year_from) == (10, 2, None)  # the search page's forms
