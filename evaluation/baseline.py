"""Lexical baselines: the bag-of-words of KDD'20 §6.3, and tf-idf over LaTeX tokens and bigrams.

Bag of words: the sum of the one-hot node features of an equation, compared by cosine. With categorical features the
one-hot vector of a node is ``[tag one-hot | attribute one-hot | character one-hot]`` (``n_tags + n_attrs + n_chars``
slots; "no attribute" / "no character" is an all-zero segment), so the sum over the nodes is three histograms side by
side.

tf-idf (`latex_tfidf`): the strongest lexical baseline a labelled set is judged against: an equation's LaTeX split
into tokens (a control word, a control symbol, a letter, a number, any other character; grouping braces kept), each
token and each pair of adjacent tokens a term, weighed ``(1 + ln tf) · ln(N / df)`` with the statistics of the
compared equations, compared by cosine.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
from eqsearch.engine.model.graph import GraphArrays


def bag_of_words(graphs: Sequence[GraphArrays], n_tags: int, n_attrs: int, n_chars: int) -> np.ndarray:
    """One ``n_tags + n_attrs + n_chars`` count vector per equation.

    Shapes:
        returns ``[len(graphs), n_tags + n_attrs + n_chars]`` float32.
    """
    width = n_tags + n_attrs + n_chars
    out = np.zeros((len(graphs), width), dtype=np.float32)
    for i, g in enumerate(graphs):
        row = out[i]
        np.add.at(row, g.tag, 1.0)
        attr = g.attr[g.attr > 0]
        np.add.at(row, n_tags + attr - 1, 1.0)
        char = g.char[g.char > 0]
        np.add.at(row, n_tags + n_attrs + char - 1, 1.0)
    return out


_LATEX_TOKEN = re.compile(r"\\[A-Za-z@]+|\\.|[0-9]+(?:\.[0-9]+)?|\S")


def latex_tokens(latex: str) -> list[str]:
    """An equation's LaTeX as tokens (module docstring); spacing commands are tokens like any other."""
    return _LATEX_TOKEN.findall(latex)


def latex_terms(latex: str) -> Counter[str]:
    """The tf-idf baseline's terms of one equation with their counts: its tokens and its adjacent token pairs."""
    tokens = latex_tokens(latex)
    terms = Counter(tokens)
    terms.update(f"{a} {b}" for a, b in pairwise(tokens))
    return terms


def latex_tfidf(latex: Sequence[str]) -> np.ndarray:
    """Unit tf-idf vectors of equations over their LaTeX tokens and bigrams (module docstring); a term in every
    equation weighs 0, an equation without terms is a zero row.

    Shapes: returns ``[len(latex), distinct terms]`` float32.
    """
    counts = [latex_terms(text) for text in latex]
    df: Counter[str] = Counter()
    for terms in counts:
        df.update(terms.keys())
    column = {term: k for k, term in enumerate(sorted(df))}
    out = np.zeros((len(counts), len(column)), dtype=np.float32)
    n = len(counts)
    for row, terms in enumerate(counts):
        for term, tf in terms.items():
            out[row, column[term]] = (1.0 + math.log(tf)) * math.log(n / df[term])
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)
