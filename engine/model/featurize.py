"""MathML -> graph arrays: the one featurizer that training and the runtime share (KDD'20 §3.2).

An equation's Presentation MathML tree becomes a graph whose nodes are the XML elements and whose edges go
from parent to child. Each node carries three categorical features looked up in a `Vocabulary`
(`engine.model.vocabulary`, built from the corpus counts that `count_features` makes with these same rules) and
its position among its parent's children. The arrays follow `engine.model.graph.GraphArrays`:

==============  =========  ==============================================================================
array           shape      meaning
==============  =========  ==============================================================================
``tag``         ``[N]``    tag index in ``[0, n_tags)``; ``n_tags - 1`` = unknown tag
``attr``        ``[N]``    attribute index in ``[0, n_attrs]``; 0 = none, ``n_attrs`` = unknown attribute
``char``        ``[N]``    character index in ``[0, n_chars]``; 0 = none, ``n_chars`` = unknown character
``pos``         ``[N]``    index of the node among its parent's children (0 for the root)
``edge_index``  ``[2, E]`` parent -> child edges (``E = N - num_graphs``); row 0 parent, row 1 child
``graph``       ``[N]``    index of the equation a node belongs to (non-decreasing)
==============  =========  ==============================================================================

All arrays are int64 and C-contiguous. Nodes of one equation are contiguous and in document order (pre-order
depth-first): the ``<math>`` root comes first, every parent precedes its children. There is one edge per non-root
node, in node order (``edge_index[1]`` is strictly increasing), so ``parent[child] = edge_index[0]``.

How MathML maps to nodes (decided here, and the same for vocabulary counting and featurization):

- **Tags** are local names (the MathML namespace is dropped): ``math``, ``mrow``, ``mi``, ...
- **Dropped**: ``<annotation>`` and ``<annotation-xml>`` with their subtrees (KaTeX puts the LaTeX source
  there), comments and processing instructions. ``<semantics>`` itself is dropped and its remaining children
  take its place in its parent, so KaTeX's ``math > semantics > mrow`` becomes ``math > mrow``.
- **Attributes**: only the keys in ``Vocabulary.attribute_keys`` count (by default the ones that change meaning
  or font: ``mathvariant``, ``stretchy``, ``fence``, ``accent``, ``linethickness``, ``notation``, ...); spacing,
  sizes, colours, ``display`` and table layout are ignored. A node's kept attributes form ONE item,
  ``key=value`` pairs sorted by key and joined by ``;`` (``mathvariant=bold``, ``accent=true``,
  ``fence=true;stretchy=false``), because the paper gives each node one attribute slot.
- **Text** (leading and trailing XML whitespace stripped; internal spaces and no-break spaces are characters):
  a single character is the node's own ``char`` feature (``<mi>x</mi>`` is one node). Text of several
  characters (``<mi>sin</mi>``, ``<mn>123</mn>``, ``<mtext>if x</mtext>``) gives the element ``char = 0`` and one
  child node per Unicode code point, each with the element's tag and attribute, positions 0, 1, 2, ...: the
  paper-faithful choice, and it makes ``\\operatorname{sin}`` and ``\\mathrm{sin}`` look alike.
- Empty elements (``<mrow/>``) are nodes with ``char = 0``.

Malformed input (not XML, no ``<math>`` element, text mixed with child elements) raises `MathMLError`.

Speed: lxml parses in C; one explicit-stack walk appends integers to flat lists that become numpy arrays
once per batch (`featurize_many` does one conversion for the whole batch). Lookups are cached per vocabulary
on the raw lxml keys (namespaced tag, attribute item tuple, character), so steady state does no string work.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.graph import GraphArrays
from lxml import etree

if TYPE_CHECKING:
    from eqsearch.engine.model.vocabulary import Vocabulary

__all__ = [
    "DEFAULT_ATTRIBUTE_KEYS",
    "FeatureCounts",
    "FeatureLookup",
    "MathMLError",
    "count_features",
    "featurize_many",
    "featurize_mathml",
]

#: Attributes that change what a token means or how it looks as a glyph; everything else is layout.
DEFAULT_ATTRIBUTE_KEYS: tuple[str, ...] = (
    "accent",
    "accentunder",
    "close",
    "fence",
    "form",
    "largeop",
    "linethickness",
    "mathvariant",
    "movablelimits",
    "notation",
    "open",
    "separator",
    "stretchy",
    "symmetric",
)

_DROPPED_TAGS = frozenset({"annotation", "annotation-xml"})
_XML_WHITESPACE = " \t\n\r"


class MathMLError(EqsearchError):
    """The MathML given to the featurizer is not usable; the message names the problem."""


def _local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if tag.startswith("{") else tag


def _attribute_item(items: Sequence[tuple[str, str]], keys: frozenset[str]) -> str | None:
    kept = sorted((_local_name(k), v.strip()) for k, v in items if _local_name(k) in keys)
    return ";".join(f"{k}={v}" for k, v in kept) if kept else None


# --------------------------------------------------------------------------------------------------------------
# The walk shared by counting and featurizing.


class FeatureLookup:
    """Raw lxml keys -> integer ids, cached; misses go through `resolve_*` (closed: unknown slot; open: new id).

    `Vocabulary` holds a closed one (known items and unknown slots); `count_features` an open one that numbers
    every new item. The walk reads the caches directly and calls `tag`, `attr` or `char` only on a miss.

    Args:
        resolve_tag: tag local name -> id.
        resolve_attr: attribute item (``key=value[;key=value]``, None for none) -> id.
        resolve_char: one character -> id.
        attribute_keys: attribute names that form attribute items.
    """

    def __init__(
        self,
        resolve_tag: Callable[[str], int],
        resolve_attr: Callable[[str | None], int],
        resolve_char: Callable[[str], int],
        attribute_keys: frozenset[str],
    ) -> None:
        self.tags: dict[str, int] = {}
        self.attrs: dict[tuple[tuple[str, str], ...], int] = {(): resolve_attr(None)}
        self.chars: dict[str, int] = {}
        self.resolve_tag = resolve_tag
        self.resolve_attr = resolve_attr
        self.resolve_char = resolve_char
        self.attribute_keys = attribute_keys

    def tag(self, raw: object) -> int:
        """Id of a raw lxml tag (namespaced), resolved and cached."""
        if not isinstance(raw, str):  # an entity reference left by resolve_entities=False
            raise MathMLError("MathML contains an XML entity reference or other non-element node")
        index = self.resolve_tag(_local_name(raw))
        self.tags[raw] = index
        return index

    def attr(self, raw: tuple[tuple[str, str], ...]) -> int:
        """Id of an element's raw attribute pairs, reduced to its attribute item, resolved and cached."""
        index = self.resolve_attr(_attribute_item(raw, self.attribute_keys))
        self.attrs[raw] = index
        return index

    def char(self, raw: str) -> int:
        """Id of one character, resolved and cached."""
        index = self.resolve_char(raw)
        self.chars[raw] = index
        return index


class _Columns:
    """Flat per-node integer lists for one batch (no per-node objects)."""

    __slots__ = ("attr", "char", "child", "graph", "parent", "pos", "tag")

    def __init__(self) -> None:
        self.tag: list[int] = []
        self.attr: list[int] = []
        self.char: list[int] = []
        self.pos: list[int] = []
        self.parent: list[int] = []
        self.child: list[int] = []
        self.graph: list[int] = []

    def to_graph_arrays(self, num_graphs: int) -> GraphArrays:
        def column(values: list[int]) -> np.ndarray:
            return np.fromiter(values, dtype=np.int64, count=len(values))

        edge_index = np.empty((2, len(self.parent)), dtype=np.int64)
        edge_index[0] = self.parent
        edge_index[1] = self.child
        return GraphArrays(
            tag=column(self.tag),
            attr=column(self.attr),
            char=column(self.char),
            pos=column(self.pos),
            edge_index=edge_index,
            graph=column(self.graph),
            num_graphs=num_graphs,
        )


_parsers = threading.local()


def _parser() -> etree.XMLParser:
    parser = getattr(_parsers, "parser", None)
    if parser is None:
        parser = etree.XMLParser(
            resolve_entities=False, no_network=True, remove_comments=True, remove_pis=True, huge_tree=False
        )
        _parsers.parser = parser
    return parser


def _parse_math(mathml: str | bytes) -> etree._Element:
    if isinstance(mathml, str):
        try:
            mathml = mathml.encode("utf-8")
        except UnicodeEncodeError as error:
            raise MathMLError(f"MathML text holds a character that is not valid Unicode: {error.reason}") from None
    if not mathml.strip():
        raise MathMLError("empty MathML: expected a <math> element, got an empty string")
    try:
        root = etree.fromstring(mathml, _parser())
    except etree.XMLSyntaxError as error:
        snippet = mathml[:80].decode("utf-8", "replace")
        raise MathMLError(
            f"MathML is not well-formed XML ({error.msg}, line {error.lineno} column {error.offset}): {snippet!r}",
            hint="pass the <math> element produced by engine.latex",
        ) from None
    if _local_name(root.tag) != "math":
        found = next((el for el in root.iter() if isinstance(el.tag, str) and _local_name(el.tag) == "math"), None)
        if found is None:
            raise MathMLError(
                f"no <math> element in the MathML: the root is <{_local_name(root.tag)}>",
                hint="pass the <math> element produced by engine.latex",
            )
        root = found
    return root


_MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"
#: Raw lxml tags whose presence among an element's children needs the slow path (drop or splice).
_SPECIAL_TAGS = frozenset(
    prefix + name for prefix in ("", _MATHML_NS) for name in ("annotation", "annotation-xml", "semantics")
)


def _content_children(element: etree._Element) -> list[etree._Element]:
    """Element children with annotations removed and <semantics> spliced into its parent (the slow path)."""
    children: list[etree._Element] = []
    for child in element:
        name = _local_name(child.tag) if isinstance(child.tag, str) else ""
        if name == "semantics":
            children.extend(_content_children(child))
        elif name not in _DROPPED_TAGS:
            children.append(child)
    return children


def _walk(root: etree._Element, lookup: FeatureLookup, out: _Columns, graph_id: int) -> None:
    """Append the nodes and edges of one <math> tree to `out` (pre-order, document order).

    Each non-root node gets its parent edge when it is appended, so edges come sorted by child index.
    """
    tags, attrs, chars, poss, parents, childs, graphs = (
        out.tag,
        out.attr,
        out.char,
        out.pos,
        out.parent,
        out.child,
        out.graph,
    )
    tag_ids, attr_ids, char_ids = lookup.tags, lookup.attrs, lookup.chars
    special = _SPECIAL_TAGS
    whitespace = _XML_WHITESPACE
    stack: list[tuple[etree._Element, object, int, int]] = [(root, root.tag, -1, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        element, raw_tag, parent, pos = pop()
        tag = tag_ids.get(raw_tag)  # type: ignore[arg-type]
        if tag is None:
            tag = lookup.tag(raw_tag)
        items = element.items()
        if items:
            raw_attr = tuple(items)
            attr = attr_ids.get(raw_attr)
            if attr is None:
                attr = lookup.attr(raw_attr)
        else:
            attr = 0
        index = len(tags)
        if parent >= 0:
            parents.append(parent)
            childs.append(index)
        tags.append(tag)
        attrs.append(attr)
        poss.append(pos)
        graphs.append(graph_id)
        text = element.text
        if text is not None:
            text = text.strip(whitespace)
        count = len(element)
        if count:
            chars.append(0)
            if text:
                raise MathMLError(
                    f"mixed content in <{_local_name(raw_tag)}>: text {text[:20]!r} next to child elements, "
                    "which Presentation MathML does not allow"
                )
            mark = len(stack)
            i = count
            for child in element.iterchildren(reversed=True):
                i -= 1
                child_tag = child.tag
                if child_tag in special:
                    del stack[mark:]
                    children = _content_children(element)
                    for j in range(len(children) - 1, -1, -1):
                        push((children[j], children[j].tag, index, j))
                    break
                push((child, child_tag, index, i))
        elif not text:
            chars.append(0)
        elif len(text) == 1:
            char = char_ids.get(text)
            chars.append(char if char is not None else lookup.char(text))
        else:
            chars.append(0)
            for i, c in enumerate(text):
                char = char_ids.get(c)
                parents.append(index)
                childs.append(len(tags))
                tags.append(tag)
                attrs.append(attr)
                chars.append(char if char is not None else lookup.char(c))
                poss.append(i)
                graphs.append(graph_id)


# --------------------------------------------------------------------------------------------------------------
# Counting (what a vocabulary is built from)


@dataclass(frozen=True)
class FeatureCounts:
    """How often each tag, attribute item and character occurs as a node feature in a corpus.

    Counts from corpus shards can be merged with `merge` before building one `Vocabulary`.
    """

    tags: Counter[str] = field(default_factory=Counter)
    attributes: Counter[str] = field(default_factory=Counter)
    characters: Counter[str] = field(default_factory=Counter)
    equations: int = 0
    skipped: int = 0

    def merge(self, other: FeatureCounts) -> FeatureCounts:
        """The sum of two counts."""
        return FeatureCounts(
            tags=self.tags + other.tags,
            attributes=self.attributes + other.attributes,
            characters=self.characters + other.characters,
            equations=self.equations + other.equations,
            skipped=self.skipped + other.skipped,
        )


def count_features(
    mathml: Iterable[str | bytes],
    *,
    attribute_keys: Sequence[str] = DEFAULT_ATTRIBUTE_KEYS,
    skip_malformed: bool = False,
) -> FeatureCounts:
    """Count node features over a corpus with exactly the node rules of `featurize_mathml`.

    Args:
        mathml: MathML strings (a `<math>` element each).
        attribute_keys: attribute names that count (see module docstring).
        skip_malformed: count malformed MathML in ``skipped`` instead of raising.

    Returns:
        The counts; ``equations`` is the number featurized, ``skipped`` the number left out.

    Raises:
        MathMLError: malformed MathML when ``skip_malformed`` is False.
    """
    tag_table: dict[str, int] = {}
    attr_table: dict[str | None, int] = {}
    char_table: dict[str, int] = {}
    lookup = FeatureLookup(
        lambda key: tag_table.setdefault(key, len(tag_table)),
        lambda key: attr_table.setdefault(key, len(attr_table)),
        lambda key: char_table.setdefault(key, len(char_table) + 1),  # 0 is "no character" in the walk
        frozenset(attribute_keys),
    )
    totals = {"tag": np.zeros(0, np.int64), "attr": np.zeros(0, np.int64), "char": np.zeros(0, np.int64)}

    def flush(columns: _Columns) -> None:
        for name in totals:
            ids = np.asarray(getattr(columns, name), dtype=np.int64)
            counts = np.bincount(ids) if ids.size else np.zeros(0, np.int64)
            size = max(len(counts), len(totals[name]))
            merged = np.zeros(size, np.int64)
            merged[: len(counts)] += counts
            merged[: len(totals[name])] += totals[name]
            totals[name] = merged

    columns = _Columns()
    equations = skipped = 0
    for number, item in enumerate(mathml):
        mark = len(columns.tag), len(columns.parent)
        try:
            _walk(_parse_math(item), lookup, columns, 0)
        except MathMLError as error:
            if not skip_malformed:
                raise MathMLError(f"equation {number}: {error.message}", hint=error.hint) from None
            _truncate(columns, *mark)
            skipped += 1
            continue
        equations += 1
        if len(columns.tag) > 1_000_000:  # bounded memory on big corpora
            flush(columns)
            columns = _Columns()
    flush(columns)

    def counter(table: dict, totals_of: np.ndarray, drop: object = _NOTHING) -> Counter[str]:
        return Counter(
            {
                key: int(totals_of[index])
                for key, index in table.items()
                if key is not drop and index < len(totals_of) and totals_of[index] > 0
            }
        )

    return FeatureCounts(
        tags=counter(tag_table, totals["tag"]),
        attributes=counter(attr_table, totals["attr"], drop=None),
        characters=counter(char_table, totals["char"]),
        equations=equations,
        skipped=skipped,
    )


_NOTHING = object()


def _truncate(columns: _Columns, nodes: int, edges: int) -> None:
    for name in ("tag", "attr", "char", "pos", "graph"):
        del getattr(columns, name)[nodes:]
    del columns.parent[edges:]
    del columns.child[edges:]


# --------------------------------------------------------------------------------------------------------------
# Featurization


def featurize_mathml(mathml: str | bytes, vocab: Vocabulary) -> GraphArrays:
    """One equation's MathML -> `GraphArrays` with ``num_graphs == 1``.

    Args:
        mathml: a ``<math>`` element (a wrapper such as KaTeX's ``<span class="katex">`` is tolerated).
        vocab: the vocabulary (the model bundle's, at runtime).

    Returns:
        The graph; conventions in the module docstring.

    Raises:
        MathMLError: not well-formed XML, no ``<math>`` element, or mixed content.
    """
    columns = _Columns()
    _walk(_parse_math(mathml), vocab.lookup, columns, 0)
    return columns.to_graph_arrays(1)


def featurize_many(mathml: Iterable[str | bytes], vocab: Vocabulary) -> GraphArrays:
    """A batch of equations -> one concatenated `GraphArrays` (graph ``i`` = the i-th input).

    Faster than `concatenate_graphs` over `featurize_mathml`: one set of arrays is filled for the whole batch.

    Raises:
        MathMLError: naming the index of the first malformed equation.
    """
    columns = _Columns()
    lookup = vocab.lookup
    count = 0
    for count, item in enumerate(mathml, start=1):
        try:
            _walk(_parse_math(item), lookup, columns, count - 1)
        except MathMLError as error:
            raise MathMLError(f"equation {count - 1} of the batch: {error.message}", hint=error.hint) from None
    return columns.to_graph_arrays(count)
