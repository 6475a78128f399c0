"""The forward index of an equation: its structural terms, hashed, with their counts, in one binary doc value.

The structural list's rescore window gets the BM25 of the query's terms (`engine.search.structure_query`). Walking
the terms' posting lists for 300 candidates costs ~2.7 ms of node CPU at a million equations; eqsearch's plugin
(``es-plugin/``, ``eqsearch_bm25``) instead reads each candidate's terms from this value and scores them with the
field's own BM25 (``docs/decisions/forward-index.md``). The value holds the distinct terms of the structural field
*as its analyzer makes them* (Elasticsearch's ``whitespace`` analyzer: `analysed_terms`), so that a candidate's counts
are the postings' frequencies; each term as a hash of its UTF-8 bytes (`term_hash`: the first 8 bytes of their SHA-256,
the one definition here and in ``es-plugin/.../ForwardIndex.java``; tested for parity on a real node), with its count.

Layout (base64 in the document, as Elasticsearch's ``binary`` field takes it): a format byte, then per term by hash
ascending the hash and the count as a varint (7 bits a byte, low first). Format 2 (`FORWARD_INDEX_FORMAT`, mapping
version 12 on) keeps each hash's first 4 bytes, ~5 bytes a distinct term; format 1 (versions 7-11) all 8, ~9 bytes.
The plugin reads both, so an index of an older version is searched as before until it is migrated.
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

#: The layout the engine writes: its first byte (``ForwardIndex.SHORT_HASHES`` in the plugin).
FORWARD_INDEX_FORMAT = 2
#: Each format's bytes of a term's hash (1: ``ForwardIndex.LONG_HASHES``).
HASH_BYTES = {1: 8, 2: 4}
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


def forward_index_value(terms: Iterable[str], layout: int = FORWARD_INDEX_FORMAT) -> str:
    """The forward index of analysed terms (`analysed_terms`), as the base64 the binary field takes, in format
    ``layout``. Two terms of one formula whose short hashes agree (about one formula in 3 million) are one entry with
    their counts added: the plugin wants the hashes strictly ascending."""
    width = HASH_BYTES[layout]
    by_hash: Counter[bytes] = Counter()
    for term, count in Counter(terms).items():
        by_hash[term_hash(term)[:width]] += count
    blob = bytearray([layout])
    for digest, count in sorted(by_hash.items()):
        blob += digest
        blob += _varint(count)
    return base64.b64encode(bytes(blob)).decode("ascii")


def read_forward_index(value: str) -> dict[bytes, int]:
    """A stored value read back, of either format: hash (8 or 4 bytes) -> count.

    Raises:
        ValueError: not base64, an unknown format, or a value cut short.
    """
    blob = base64.b64decode(value, validate=True)
    if not blob or blob[0] not in HASH_BYTES:
        raise ValueError(f"not a forward index of format {' or '.join(map(str, HASH_BYTES))}")
    width = HASH_BYTES[blob[0]]
    counts: dict[bytes, int] = {}
    at = 1
    while at < len(blob):
        if at + width >= len(blob):
            raise ValueError(f"a forward index cut short at byte {at}")
        digest = blob[at : at + width]
        at += width
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
