"""The vocabulary: built from corpus counts (most frequent first), its canonical file, and the errors it raises."""

from __future__ import annotations

import json

import pytest
from eqsearch.engine.model.featurize import featurize_mathml
from eqsearch.engine.model.vocabulary import Vocabulary, VocabularyError, build_vocabulary


def test_build_vocabulary_most_frequent_first_ties_by_text_and_truncated():
    corpus = ["<math><mi>b</mi><mi>a</mi><mn>1</mn><mi>c</mi><mi>c</mi></math>"]
    vocab = build_vocabulary(corpus, n_tags=3, n_attrs=2, n_chars=3)
    assert vocab.tags == ("mi", "math")  # mi 4, then math 1 vs mn 1: tie broken by text
    assert vocab.characters == ("c", "1")  # c 2, then 1/a/b with 1 each: "1" sorts first
    assert vocab.attributes == ()
    graph = featurize_mathml(corpus[0], vocab)
    assert graph.tag.tolist() == [1, 0, 0, 2, 0, 0]  # mn -> unknown tag 2
    assert graph.char.tolist() == [0, 3, 3, 2, 1, 1]  # a, b -> unknown char 3


def test_vocabulary_round_trip_is_canonical(tmp_path):
    vocab = build_vocabulary(
        ['<math><mi mathvariant="bold">\u03b1</mi><mo stretchy="false">(</mo><mn>3</mn></math>'] * 2
    )
    path = vocab.save(tmp_path / "vocabulary.json")
    loaded = Vocabulary.load(path)
    assert loaded == vocab
    assert loaded.checksum() == vocab.checksum()
    text = path.read_text(encoding="ascii")
    assert text == loaded.to_json_text()  # byte-identical after a round trip
    data = json.loads(text)
    assert data["format"] == "eqsearch-vocabulary" and data["version"] == 1
    assert data["sizes"] == {"tags": 32, "attributes": 32, "characters": 192}
    assert "\u03b1" in data["characters"]


def test_vocabulary_load_errors(tmp_path):
    with pytest.raises(VocabularyError, match="not found"):
        Vocabulary.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(VocabularyError, match="not valid JSON"):
        Vocabulary.load(bad)
    data = build_vocabulary(["<math><mi>x</mi></math>"]).to_json() | {"version": 99}
    with pytest.raises(VocabularyError, match="version 99"):
        Vocabulary.from_json(data)
    with pytest.raises(VocabularyError, match="not an eqsearch vocabulary"):
        Vocabulary.from_json({"format": "other"})


def test_vocabulary_rejects_too_many_items():
    with pytest.raises(VocabularyError, match="do not fit"):
        Vocabulary(tags=("a", "b"), attributes=(), characters=(), n_tags=2)
