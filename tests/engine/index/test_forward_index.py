"""The forward index's value, without a node: the analyzer's terms (split at Java's whitespace, cut at 255 UTF-16
code units), the hash (the first 8 bytes of SHA-256, 4 of them written from mapping version 12), both layouts read
back, and a damaged value refused. Its parity with Elasticsearch's analyzer and with the plugin's hash is tested on a
real node (``tests/es_plugin/``)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from eqsearch.engine.index.forward_index import (
    FORWARD_INDEX_FORMAT,
    analysed_terms,
    forward_index_value,
    read_forward_index,
    term_hash,
)


def test_terms_split_at_javas_whitespace_but_not_at_no_break_spaces():
    assert analysed_terms("V:x  N:2\tV:x|N:2|sup\n") == ["V:x", "N:2", "V:x|N:2|sup"]
    assert analysed_terms("a\u00a0b c\u2007d e\u202ff") == ["a\u00a0b", "c\u2007d", "e\u202ff"]
    assert analysed_terms("a\u2003b\u3000c\u001fd") == ["a", "b", "c", "d"]
    assert analysed_terms("   ") == []


def test_a_token_past_255_code_units_is_cut_as_lucenes_tokenizer_cuts_it():
    assert analysed_terms("x" * 600) == ["x" * 255, "x" * 255, "x" * 90]
    # a character outside the BMP is two code units: the piece that reaches 255 or more ends there
    token = "y" * 254 + "\U0001d465" + "z"
    assert analysed_terms(token) == ["y" * 254 + "\U0001d465", "z"]


def test_the_value_holds_each_distinct_term_once_with_its_count_by_hash():
    value = forward_index_value(["V:x", "N:2", "V:x", "V:x"])
    blob = base64.b64decode(value)
    assert blob[0] == FORWARD_INDEX_FORMAT == 2 and len(blob) == 1 + 2 * 5  # 4 hash bytes and a count a term
    assert read_forward_index(value) == {term_hash("V:x")[:4]: 3, term_hash("N:2")[:4]: 1}
    hashes = [blob[1:5], blob[6:10]]
    assert hashes == sorted(hashes)  # ascending, as the plugin reads them (unsigned, big-endian)
    assert term_hash("V:x") == hashlib.sha256(b"V:x").digest()[:8]
    assert read_forward_index(forward_index_value([])) == {}


def test_the_older_layout_of_whole_hashes_is_still_written_and_read():
    value = forward_index_value(["V:x", "N:2", "V:x", "V:x"], layout=1)
    blob = base64.b64decode(value)
    assert blob[0] == 1 and len(blob) == 1 + 2 * 9
    assert read_forward_index(value) == {term_hash("V:x"): 3, term_hash("N:2"): 1}


def test_two_terms_whose_short_hashes_agree_are_one_entry_with_their_counts_added():
    first, second = "V:x114667", "V:x200058"  # found by search: their hashes share the first 4 bytes, not all 8
    assert term_hash(first)[:4] == term_hash(second)[:4] and term_hash(first) != term_hash(second)
    value = forward_index_value([first, second, second, "N:2"])
    assert read_forward_index(value) == {term_hash(first)[:4]: 3, term_hash("N:2")[:4]: 1}
    assert len(read_forward_index(forward_index_value([first, second], layout=1))) == 2


def test_a_count_past_127_takes_two_varint_bytes():
    value = forward_index_value(["a"] * 300)
    assert read_forward_index(value) == {term_hash("a")[:4]: 300}
    assert len(base64.b64decode(value)) == 1 + 4 + 2


@pytest.mark.parametrize(
    "value",
    [
        "not base64!",
        base64.b64encode(b"\x03").decode(),
        base64.b64encode(b"\x01" + b"\x00" * 8).decode(),
        base64.b64encode(b"\x02" + b"\x00" * 4).decode(),
    ],
    ids=["not-base64", "other-format", "cut-short", "cut-short-2"],
)
def test_a_damaged_value_is_refused_when_read_back(value):
    with pytest.raises(ValueError):
        read_forward_index(value)
