"""benchmarks/scale_corpus.py and its package `corpus_growth`: consistent renaming in LaTeX and MathML, distinct and
well-formed output that the project's papers reader takes, the same bytes for the same seed, clear errors, nothing
left behind by an interrupted run, and distributions near the real papers' on a small run."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from corpus_growth.compare import compare_collections
from corpus_growth.generate import GrowthConfig, grow
from corpus_growth.symbols import latex_symbols, mathml_symbols, top_level_children
from corpus_growth.variants import (
    exchange_fraction_part,
    exchange_right_hand_side,
    formula_hash,
    fraction_parts,
    paper_notation,
    rank_letters,
    right_hand_side,
    vary,
)
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index.documents import inline_indexable
from eqsearch.engine.model.structure import formula_structure
from eqsearch.ingest.records import Paper, read_papers

PAPERS = Path(__file__).parent / "data" / "scale_papers.jsonl"
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scale_corpus.py"


def _formula(latex: str) -> tuple[str, str]:
    for record in read_papers(PAPERS):
        for section in record["sections"]:
            for formula in [*section["equations"], *section["inline"]]:
                if formula["latex"] == latex:
                    return formula["latex"], formula["mathml"]
    raise KeyError(latex)


def _grow(tmp_path: Path, name: str = "out.jsonl", **options) -> tuple[Path, object]:
    config = GrowthConfig(inputs=(PAPERS,), out=tmp_path / name, **{"equations": 300, **options})
    return config.out, grow(config)


def _formulas(path: Path) -> list[dict]:
    return [f for r in read_papers(path) for s in r["sections"] for f in [*s["equations"], *s["inline"]]]


def test_the_symbols_of_the_latex_are_those_in_math_positions():
    symbols = latex_symbols(r"\frac{x}{\text{xy}} + \alpha_2 = \mathrm{d} y^{3} \label{eq:a1}")
    assert [p.text for p in symbols.letters] == ["x", "α", "y"]
    assert [p.text for p in symbols.numbers] == ["2", "3"]
    assert len(symbols.equals) == 1 and not symbols.aligned
    assert not latex_symbols(r"\left( a = b \right) c").equals
    assert latex_symbols(r"a &= b \\ c &= d").aligned


def test_a_word_in_math_italic_is_not_a_set_of_letters():
    mathml = (
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow><msub><mi>L</mi><mrow><mi>a</mi><mi>b</mi><mi>c</mi>'
        '</mrow></msub><mo>=</mo><mi>a</mi><mi mathvariant="normal">Γ</mi><mi mathvariant="normal">d</mi></mrow></math>'
    )
    symbols = mathml_symbols(mathml)
    assert [p.text for p in symbols.letters] == ["L", "a", "Γ"]  # not the word's letters, not the upright d
    assert {"L", "a", "Γ", "d"} <= symbols.present and "b" not in symbols.present


def test_renaming_is_consistent_in_latex_and_mathml():
    latex, mathml = _formula(r"\partial_t u = \Delta u + f(x, t)")
    notation = {"u": "w", "x": "y", "t": "s", "f": "g", "Δ": "Δ"}
    variant = vary(latex, mathml, notation, random.Random(0), constant_share=0.0)
    assert variant.latex == r"\partial_s w = \Delta w + g(y, s)"
    assert variant.mathml == mathml.replace("<mi>u</mi>", "<mi>w</mi>").replace("<mi>x</mi>", "<mi>y</mi>").replace(
        "<mi>t</mi>", "<mi>s</mi>"
    ).replace("<mi>f</mi>", "<mi>g</mi>")
    assert variant.renamed == 4


def test_a_swap_of_two_letters_renames_both_at_once():
    latex, mathml = _formula(r"\partial_t u = \Delta u + f(x, t)")
    variant = vary(latex, mathml, {"x": "t", "t": "x"}, random.Random(0), constant_share=0.0)
    assert variant.latex == r"\partial_x u = \Delta u + f(t, x)"
    assert formula_structure(variant.mathml).size == formula_structure(mathml).size


def test_a_letter_a_macro_hides_is_left_alone_and_nothing_merges_with_it():
    latex, mathml = _formula(r"\x + y = 2")  # \x is x_0: the MathML has an x the LaTeX does not show
    variant = vary(latex, mathml, {"x": "z", "y": "x"}, random.Random(0), constant_share=0.0)
    # x cannot be renamed, so y may not become x either: both stay
    assert (variant.latex, variant.mathml, variant.renamed) == (latex, mathml, 0)
    variant = vary(latex, mathml, {"x": "z", "y": "w"}, random.Random(0), constant_share=0.0)
    assert variant.latex == r"\x + w = 2" and "<mi>w</mi>" in variant.mathml and "<mi>x</mi>" in variant.mathml


def test_greek_is_renamed_to_greek_in_both_texts():
    latex, mathml = _formula(r"\delta A_\mu = \partial_\mu \theta")
    variant = vary(latex, mathml, {"μ": "ν", "θ": "χ", "A": "B"}, random.Random(0), constant_share=0.0)
    assert variant.latex == r"\delta B_\nu = \partial_\nu \chi"
    assert "<mi>ν</mi>" in variant.mathml and "<mi>χ</mi>" in variant.mathml and "μ" not in variant.mathml


def test_constants_change_alike_in_both_texts_and_zero_and_one_stay():
    latex, mathml = _formula(
        r"\partial_\mu j^\mu = \frac{1}{16 \pi^2} \epsilon^{\mu\nu\rho\sigma} F_{\mu\nu} F_{\rho\sigma}"
    )
    variant = vary(latex, mathml, {}, random.Random(3), constant_share=1.0)
    assert variant.constants == 2
    new = [p.text for p in latex_symbols(variant.latex).numbers]
    assert new[0] == "1" and len(new[1]) == 2 and new[2] not in ("2", "1", new[1])
    assert [p.text for p in mathml_symbols(variant.mathml).numbers] == new


def test_a_right_hand_side_travels_with_its_mathml():
    latex, mathml = _formula(r"\delta A_\mu = \partial_\mu \theta")
    donor = right_hand_side(*_formula(r"Q = \int d^3 x \, j^0"), frozenset())
    assert donor is not None and donor.latex == r"\int d^3 x \, j^0"
    new_latex, new_mathml = exchange_right_hand_side(latex, mathml, donor, frozenset())
    assert new_latex == r"\delta A_\mu = \int d^3 x \, j^0"
    assert top_level_children(new_mathml) is not None and new_mathml.count("<mo>=</mo>") == 1
    assert exchange_right_hand_side(latex, mathml, donor, frozenset({"int"})) is None  # the paper redefines \int


def test_a_fraction_part_travels_with_its_mathml_and_only_where_both_texts_agree():
    latex, mathml = _formula(r"\frac{d}{dt} E(t) = -2 \int_{\Omega} |\Delta u|^2 \, dx")
    parts = fraction_parts(*_formula(r"T_p = \frac{1}{(2\pi)^p g_s \ell_s^{p+1}}"), frozenset())
    assert [p.latex for p in parts] == ["1", r"(2\pi)^p g_s \ell_s^{p+1}"]
    new_latex, new_mathml = exchange_fraction_part(latex, mathml, parts[1], frozenset(), random.Random(1))
    assert new_latex in (
        r"\frac{(2\pi)^p g_s \ell_s^{p+1}}{dt} E(t) = -2 \int_{\Omega} |\Delta u|^2 \, dx",
        r"\frac{d}{(2\pi)^p g_s \ell_s^{p+1}} E(t) = -2 \int_{\Omega} |\Delta u|^2 \, dx",
    )
    assert new_mathml.count("<mfrac>") == 1 and parts[1].mathml in new_mathml and new_mathml.endswith("</math>")
    # scripts put the subscript's fraction first in the MathML: the parts disagree, so nothing is exchanged
    swapped = r"x^{\frac{a}{b}}_{\frac{c}{d}}"
    swapped_mathml = (
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow><msubsup><mi>x</mi><mfrac><mi>c</mi><mi>d</mi>'
        "</mfrac><mfrac><mi>a</mi><mi>b</mi></mfrac></msubsup></mrow></math>"
    )
    assert exchange_fraction_part(swapped, swapped_mathml, parts[0], frozenset(), random.Random(0)) is None


def test_a_paper_notation_is_a_bijection_among_letters_of_like_frequency():
    ranked = rank_letters({"x": 100, "y": 90, "z": 5})
    notation = paper_notation(ranked, random.Random(1))
    for kind in ranked:
        assert sorted(notation[ch] for ch in kind) == sorted(kind)
        for rank, ch in enumerate(kind):
            assert abs(kind.index(notation[ch]) - rank) < 4


def test_the_collection_is_distinct_well_formed_and_read_by_the_papers_reader(tmp_path):
    out, report = _grow(tmp_path)
    formulas = _formulas(out)
    assert len(formulas) == report.equations == 300
    hashes = [formula_hash(f["mathml"]) for f in formulas]
    assert len(set(hashes)) == len(hashes)
    assert len({f["latex"] for f in formulas}) == len(formulas)
    papers = [Paper.from_json(record) for record in read_papers(out)]
    assert len({p.key for p in papers}) == len(papers) == report.papers
    for paper in papers:
        for eq in paper.equations():
            assert eq.latex and eq.mathml and eq.status in ("ok", "approximate")
            assert eq.mathml.startswith("<math") and formula_structure(eq.mathml).size > 0
        for formula in paper.inline_formulas():
            assert formula.mathml and inline_indexable(formula.latex)
    assert report.rounds > 1 and report.original_equations < 60
    assert not (tmp_path / "out.jsonl.partial").exists()
    assert json.loads((tmp_path / "out.jsonl.stats.json").read_text())["equations"] == 300


def test_the_same_seed_gives_the_same_bytes_and_another_seed_others(tmp_path):
    first, _ = _grow(tmp_path, "a.jsonl", seed=7)
    second, _ = _grow(tmp_path, "b.jsonl", seed=7)
    third, _ = _grow(tmp_path, "c.jsonl", seed=8)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != third.read_bytes()


def test_a_variant_paper_keeps_its_papers_sections_and_renames_within_a_formula_alike(tmp_path):
    out, _ = _grow(tmp_path, equations=120)
    records = {r["id"]: r for r in read_papers(out)}
    variant, real = records["g1/2101.00001"], records["2101.00001"]
    assert [s["title"] for s in variant["sections"]] == [s["title"] for s in real["sections"]]
    assert variant["metadata"]["categories"] == ["math.AP"] and variant["macros"] == real["macros"]
    for formula in _formulas_of(variant):
        letters = {p.text for p in latex_symbols(formula["latex"]).letters}
        assert letters <= mathml_symbols(formula["mathml"]).present | {"x"}  # \x's x_0 is in the MathML only


def _formulas_of(record: dict) -> list[dict]:
    return [f for s in record["sections"] for f in [*s["equations"], *s["inline"]]]


def test_bad_inputs_are_refused_with_what_was_received(tmp_path):
    with pytest.raises(EqsearchError, match="no such file"):
        grow(GrowthConfig(inputs=(tmp_path / "missing.jsonl",), out=tmp_path / "o.jsonl", equations=5))
    other = tmp_path / "other.jsonl"
    other.write_text('{"topic": 1}\n')
    with pytest.raises(EqsearchError, match="not papers JSONL"):
        grow(GrowthConfig(inputs=(other,), out=tmp_path / "o.jsonl", equations=5))
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n")
    with pytest.raises(EqsearchError, match="not valid JSON"):
        grow(GrowthConfig(inputs=(broken,), out=tmp_path / "o.jsonl", equations=5))
    assert not (tmp_path / "o.jsonl").exists()


def test_the_command_line_says_what_is_wrong(tmp_path, capsys):
    import scale_corpus

    assert (
        scale_corpus.main(["generate", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o"), "--equations", "3"])
        == 1
    )
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        scale_corpus.main(["generate", str(PAPERS), "--out", str(PAPERS), "--equations", "3"])
    assert "must not be one of the inputs" in capsys.readouterr().err


def test_an_interrupted_run_leaves_nothing_behind(tmp_path):
    def interrupt(written: int) -> None:
        if written > 50:
            raise KeyboardInterrupt

    config = GrowthConfig(inputs=(PAPERS,), out=tmp_path / "out.jsonl", equations=300)
    with pytest.raises(KeyboardInterrupt):
        grow(config, interrupt)
    assert list(tmp_path.iterdir()) == []


def test_the_generated_distributions_stay_near_the_real_ones(tmp_path):
    out, _ = _grow(tmp_path, equations=400, originals=False)
    figures = compare_collections([PAPERS], out, [400], variants_only=True)
    real, generated = figures["real"], figures["generated 400"]
    for name in ("terms_per_equation", "size_symbols", "context_chars", "equations_per_paper"):
        assert 0.6 < generated[name]["mean"] / real[name]["mean"] < 1.6, name
    assert generated["distinct_terms"] > real["distinct_terms"]  # new formulas bring new terms


@pytest.mark.slow
def test_katex_gives_the_generated_mathml_for_the_generated_latex(tmp_path, capsys):
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed")
    from corpus_growth.check import check_sample

    out, _ = _grow(tmp_path, equations=200)
    assert check_sample(out, 200, 0, 1, 5) == 0, capsys.readouterr().out
    assert "agreement 100.0%" in capsys.readouterr().out


def test_the_index_writers_make_one_equation_document_per_generated_formula(tmp_path):
    from eqsearch.engine.index.documents import paper_documents

    out, report = _grow(tmp_path, equations=150)
    ids = []
    for record in read_papers(out):
        paper = Paper.from_json(record)
        _, equations = paper_documents(paper, job_id="t", indexed_at="2026-12-03T00:00:00Z", vectors={})
        assert all(doc["mathml"] and doc["latex"] for doc in equations)
        ids += [doc["eq_id"] for doc in equations]
    assert len(ids) == len(set(ids)) == report.equations == 150


def test_letters_under_a_font_switch_or_in_a_user_macro_are_left_alone():
    from corpus_growth.symbols import hidden_symbols

    assert [p.text for p in latex_symbols(r"{\cal A}_{\rm DMF} + B").letters] == ["B"]
    macros = {"req": (1, None, r"\text{(#1)}"), "DlogM": (0, None, r"\Delta \log M"), "mA": (0, None, "A")}
    assert hidden_symbols(r"\req{eq:2} = q + 3", macros) == {"e", "q", "2"}
    assert hidden_symbols(r"\DlogM = \mA + x", macros) == {"M", "A", "Δ"}
    assert hidden_symbols("x + y", macros) == frozenset()
    # a macro without arguments standing for a command that takes one (\bb = \boldsymbol): its group is hidden
    assert hidden_symbols(r"\bb{\Gamma} + x", {"bb": (0, None, r"\boldsymbol")}) == {"Γ"}
    # \mathrm{\Gamma} is an upright capital Greek, as KaTeX writes \Gamma: never renamed in that formula
    assert latex_symbols(r"\mathrm{\Gamma}_u + \Gamma").elsewhere == {"Γ"}
    latex = r"\req{eq:2} = q + 3 + z"
    mathml = (
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow><mtext>(eq:2)</mtext><mo>=</mo><mi>q</mi><mo>+</mo>'
        "<mn>3</mn><mo>+</mo><mi>z</mi></mrow></math>"
    )
    variant = vary(latex, mathml, {"q": "p", "z": "w"}, random.Random(0), 1.0, hidden_symbols(latex, macros))
    assert variant.latex.startswith(r"\req{eq:2} = q + ") and variant.latex.endswith("+ w")


def test_a_paper_given_twice_is_written_under_two_ids(tmp_path):
    config = GrowthConfig(inputs=(PAPERS, PAPERS), out=tmp_path / "out.jsonl", equations=300)
    report = grow(config)
    records = list(read_papers(config.out))
    assert len({r["id"] for r in records}) == len({r["key"] for r in records}) == len(records) == report.papers
    assert "g1/2101.00001~2" in {r["id"] for r in records}
    ids = [f["id"] for r in records for s in r["sections"] for f in [*s["equations"], *s["inline"]]]
    assert len(ids) == len(set(ids)) == 300
