"""The featurizer on tiny hand-checked trees, feature counting, and malformed input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from eqsearch.engine.model.featurize import MathMLError, count_features, featurize_many, featurize_mathml
from eqsearch.engine.model.graph import concatenate_graphs
from eqsearch.engine.model.vocabulary import Vocabulary

NS = 'xmlns="http://www.w3.org/1998/Math/MathML"'

# unknown tag = 7, attributes: 0 none, 1 bold, 2 fence;stretchy, 4 unknown; chars: 0 none, x=1, 2=2, +=3, 6 unknown
VOCAB = Vocabulary(
    tags=("math", "mrow", "mi", "mo", "mn"),
    attributes=("mathvariant=bold", "fence=true;stretchy=false"),
    characters=("x", "2", "+"),
    n_tags=8,
    n_attrs=4,
    n_chars=6,
)


def assert_graph(graph, *, tag, attr, char, pos, edges, graph_ids=None, num_graphs=1):
    graph.validate()
    np.testing.assert_array_equal(graph.tag, tag)
    np.testing.assert_array_equal(graph.attr, attr)
    np.testing.assert_array_equal(graph.char, char)
    np.testing.assert_array_equal(graph.pos, pos)
    np.testing.assert_array_equal(graph.edge_index, np.array(edges, dtype=np.int64).reshape(2, -1))
    np.testing.assert_array_equal(graph.graph, graph_ids if graph_ids is not None else [0] * len(tag))
    assert graph.num_graphs == num_graphs
    for name in ("tag", "attr", "char", "pos", "edge_index", "graph"):
        array = getattr(graph, name)
        assert array.dtype == np.int64 and array.flags.c_contiguous


def test_small_tree_exact_arrays():
    mathml = '<math><mrow><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><mi mathvariant="bold">y</mi></mrow></math>'
    assert_graph(
        featurize_mathml(mathml, VOCAB),
        # math mrow msup(unknown) mi:x mn:2 mo:+ mi:y(bold, unknown char)
        tag=[0, 1, 7, 2, 4, 3, 2],
        attr=[0, 0, 0, 0, 0, 0, 1],
        char=[0, 0, 0, 1, 2, 3, 6],
        pos=[0, 0, 0, 0, 1, 1, 2],
        edges=[[0, 1, 2, 2, 1, 1], [1, 2, 3, 4, 5, 6]],
    )


def test_katex_shape_semantics_spliced_annotation_dropped_multichar_text_split():
    mathml = (
        f'<math {NS} display="block"><semantics><mrow><mi>sin</mi><mn>12</mn></mrow>'
        '<annotation encoding="application/x-tex">\\sin 12</annotation></semantics></math>'
    )
    assert_graph(
        featurize_mathml(mathml, VOCAB),
        # math mrow mi("sin") s i n mn("12") 1 2 -- the characters inherit the tag of their element
        tag=[0, 1, 2, 2, 2, 2, 4, 4, 4],
        attr=[0] * 9,
        char=[0, 0, 0, 6, 6, 6, 0, 6, 2],
        pos=[0, 0, 0, 0, 1, 2, 1, 0, 1],
        edges=[[0, 1, 2, 2, 2, 1, 6, 6], [1, 2, 3, 4, 5, 6, 7, 8]],
    )


def test_semantics_children_take_its_place_among_siblings():
    mathml = "<math><semantics><mi>x</mi><mo>+</mo><annotation>x+</annotation></semantics><mn>2</mn></math>"
    graph = featurize_mathml(mathml, VOCAB)
    np.testing.assert_array_equal(graph.tag, [0, 2, 3, 4])
    np.testing.assert_array_equal(graph.pos, [0, 0, 1, 2])
    np.testing.assert_array_equal(graph.edge_index, [[0, 0, 0], [1, 2, 3]])


def test_attributes_only_meaningful_keys_sorted_into_one_item():
    mathml = (
        '<math display="block"><mo stretchy="false" fence="true" lspace="0em">x</mo><mspace width="1em"/>'
        '<mi mathcolor="red">x</mi><mi mathvariant="script">x</mi></math>'
    )
    graph = featurize_mathml(mathml, VOCAB)
    # math: display ignored; mo: fence;stretchy known; mspace: width ignored; mathcolor ignored; script unknown
    np.testing.assert_array_equal(graph.attr, [0, 2, 0, 0, 4])
    assert VOCAB.attr_index("fence=true;stretchy=false") == 2
    assert VOCAB.attr_index(None) == 0


def test_whitespace_and_empty_elements():
    graph = featurize_mathml("<math>\n  <mrow/>\n  <mtext> x </mtext>\n  <mtext>a\u00a0b</mtext>\n</math>", VOCAB)
    # mrow: no char; " x " stripped to one char; "a\u00a0b": the no-break space is a character
    np.testing.assert_array_equal(graph.tag, [0, 1, 7, 7, 7, 7, 7])
    np.testing.assert_array_equal(graph.char, [0, 0, 1, 0, 6, 6, 6])
    np.testing.assert_array_equal(graph.pos, [0, 0, 1, 2, 0, 1, 2])


def test_unknown_slots():
    graph = featurize_mathml('<math><mglyph/><mi mathvariant="fraktur">\u2135</mi></math>', VOCAB)
    assert graph.tag.tolist() == [0, VOCAB.unknown_tag, 2]
    assert graph.attr.tolist() == [0, 0, VOCAB.unknown_attr]
    assert graph.char.tolist() == [0, 0, VOCAB.unknown_char]
    assert (VOCAB.unknown_tag, VOCAB.unknown_attr, VOCAB.unknown_char) == (7, 4, 6)
    assert VOCAB.tag_index("mi") == 2 and VOCAB.char_index("+") == 3 and VOCAB.char_index("?") == 6


def test_featurize_many_equals_concatenated_singles():
    items = [
        "<math><mi>x</mi></math>",
        f"<math {NS}><semantics><mrow><mn>22</mn><mo>+</mo></mrow><annotation>22+</annotation></semantics></math>",
        "<math><mfrac><mi>x</mi><mn>2</mn></mfrac></math>",
    ]
    batch = featurize_many(items, VOCAB)
    expected = concatenate_graphs([featurize_mathml(m, VOCAB) for m in items])
    batch.validate()
    for name in ("tag", "attr", "char", "pos", "edge_index", "graph"):
        np.testing.assert_array_equal(getattr(batch, name), getattr(expected, name))
    assert batch.num_graphs == 3
    assert featurize_many([], VOCAB).num_graphs == 0


def test_bytes_input_and_katex_wrapper_tolerated():
    wrapped = '<span class="katex"><math><mi>x</mi></math></span>'
    assert featurize_mathml(wrapped, VOCAB).tag.tolist() == [0, 2]
    assert featurize_mathml(b"<math><mi>x</mi></math>", VOCAB).char.tolist() == [0, 1]


@pytest.mark.parametrize(
    ("mathml", "needle"),
    [
        ("", "empty"),
        ("<math><mi>x</mi>", "not well-formed"),
        ("<div><p>x</p></div>", "no <math> element"),
        ("<math><mrow>a<mi>x</mi></mrow></math>", "mixed content"),
        ("<math><mi>&nbsp;</mi></math>", "not well-formed"),
        ("<math><mi>\udcff</mi></math>", "not valid Unicode"),
    ],
)
def test_malformed_mathml_raises_naming_the_problem(mathml, needle):
    with pytest.raises(MathMLError, match=needle):
        featurize_mathml(mathml, VOCAB)


def test_featurize_many_names_the_bad_equation():
    with pytest.raises(MathMLError, match="equation 1 of the batch"):
        featurize_many(["<math><mi>x</mi></math>", "<math>"], VOCAB)


def test_counts_follow_featurizer_rules_and_skip_malformed():
    counts = count_features(
        [
            f"<math {NS}><semantics><mi>ab</mi><annotation>ab</annotation></semantics></math>",
            '<math><mi mathvariant="bold">a</mi></math>',
            "<math>",
        ],
        skip_malformed=True,
    )
    assert counts.tags == {"math": 2, "mi": 4}
    assert counts.attributes == {"mathvariant=bold": 1}
    assert counts.characters == {"a": 2, "b": 1}
    assert (counts.equations, counts.skipped) == (2, 1)
    with pytest.raises(MathMLError, match="equation 1"):
        count_features(["<math/>", "not xml"])


def test_runtime_modules_do_not_import_torch():
    code = (
        "import sys, eqsearch.engine.model.featurize, eqsearch.engine.latex.converter; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
