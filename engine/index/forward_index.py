"""The forward index of an equation: its structural terms, hashed, with their counts, in one binary doc value.

The structural list's rescore window gets the BM25 of the query's terms (`engine.search.structure_query`). Walking
the terms' posting lists for 300 candidates costs ~2.7 ms of node CPU at a million equations; eqsearch's plugin
(``es-plugin/``, ``eqsearch_bm25``) instead reads each candidate's terms from this value and scores them with the
field's own BM25 (``docs/decisions/forward-index.md``). The value holds the distinct terms of the structural field
*as its analyzer makes them* (Elasticsearch's ``whitespace`` analyzer: `analysed_terms`), so that a candidate's counts
are the postings' frequencies; each term as the first 8 bytes of its UTF-8 bytes' SHA-256 (`term_hash`, the one
definition here and in ``es-plugin/.../ForwardIndex.java``; tested for parity on a real node), with its count.

Layout (base64 in the document, as Elasticsearch's ``binary`` field takes it): a format byte, then per term by hash
ascending the 8 hash bytes and the count as a varint (7 bits a byte, low first): ~9 bytes a distinct term.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from collections import Counter
from collections.abc import Iterable

__all__ = [
    "FORWARD_INDEX_FORMAT",
    "MAX_TOKEN_LENGTH",
    "analysed_terms",
    "forward_index_value",
    "read_forward_index",
    "term_hash",
]

#: The layout's first byte (``ForwardIndex.FORMAT`` in the plugin).
FORWARD_INDEX_FORMAT = 1
#: Lucene's whitespace tokenizer cuts a token at this many UTF-16 code units (``CharTokenizer``'s default).
MAX_TOKEN_LENGTH = 255

#: Java's ``Character.isWhitespace``: the Unicode space, line and paragraph separators but the no-break spaces, and
#: the ASCII controls tab to carriage return and the four information separators.
_JAVA_WHITESPACE = re.compile(
    "[\t\n\u000b\f\r\u001c\u001d\u001e\u001f \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]+"
)


@functools.lru_cache(maxsize=1 << 18)
def term_hash(term: str) -> bytes:
    """A term's 8-byte hash: the first 8 bytes of the SHA-256 of its UTF-8 bytes (read big-endian by the plugin).
    Cached: the terms of a collection repeat (``=``, ``V:x``)."""
    return hashlib.sha256(term.encode("utf-8")).digest()[:8]


def _cut(token: str) -> list[str]:
    """A token cut as the tokenizer cuts it: a piece ends once it holds `MAX_TOKEN_LENGTH` UTF-16 code units or more
    (a character outside the BMP counts two, and may take a piece to 256)."""
    if len(token) < MAX_TOKEN_LENGTH // 2 or (len(token) < MAX_TOKEN_LENGTH and token.isascii()):
        return [token]
    pieces: list[str] = []
    start = units = 0
    for i, char in enumerate(token):
        units += 2 if ord(char) > 0xFFFF else 1
        if units >= MAX_TOKEN_LENGTH:
            pieces.append(token[start : i + 1])
            start, units = i + 1, 0
    if start < len(token):
        pieces.append(token[start:])
    return pieces


def analysed_terms(text: str) -> list[str]:
    """The terms Elasticsearch's ``whitespace`` analyzer makes of ``text``: split at Java's whitespace, each token
    cut into pieces of at most `MAX_TOKEN_LENGTH` code units; in order, repeats kept."""
    return [piece for token in _JAVA_WHITESPACE.split(text) if token for piece in _cut(token)]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def forward_index_value(terms: Iterable[str]) -> str:
    """The forward index of analysed terms (`analysed_terms`), as the base64 the binary field takes."""
    counts = Counter(terms)
    by_hash = sorted((term_hash(term), count) for term, count in counts.items())
    blob = bytearray([FORWARD_INDEX_FORMAT])
    for digest, count in by_hash:
        blob += digest
        blob += _varint(count)
    return base64.b64encode(bytes(blob)).decode("ascii")


def read_forward_index(value: str) -> dict[bytes, int]:
    """A stored value read back: hash -> count.

    Raises:
        ValueError: not base64, another format, or a value cut short.
    """
    blob = base64.b64decode(value, validate=True)
    if not blob or blob[0] != FORWARD_INDEX_FORMAT:
        raise ValueError(f"not a forward index of format {FORWARD_INDEX_FORMAT}")
    counts: dict[bytes, int] = {}
    at = 1
    while at < len(blob):
        if at + 8 >= len(blob):
            raise ValueError(f"a forward index cut short at byte {at}")
        digest = blob[at : at + 8]
        at += 8
        count = shift = 0
        while True:
            if at >= len(blob):
                raise ValueError(f"a forward index cut short at byte {at}")
            byte = blob[at]
            at += 1
            count |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        counts[digest] = count
    return counts
