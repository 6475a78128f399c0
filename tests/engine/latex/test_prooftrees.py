"""Proof trees (ebproof, bussproofs) rewritten as nested fractions."""

from eqsearch.engine.latex.prooftrees import rewrite_proof_trees


def test_ebproof_stack_with_arity_label_and_options():
    tree = r"\begin{prooftree}\Hypo{A}\Hypo{B}\Infer[double]2[cut]{C}\Infer[left label={$\ell$}]1{D}\end{prooftree}"
    assert rewrite_proof_trees(tree) == r"{\text{$\ell$}\;\dfrac{\dfrac{A \qquad B}{C}\;\text{cut}}{D}}"


def test_bussproofs_text_mode_formulas_and_labels():
    tree = r"\begin{prooftree}\AxiomC{$A$}\AxiomC{$B$}\RightLabel{$\wedge$I}\BinaryInfC{$A \wedge B$}\end{prooftree}"
    assert rewrite_proof_trees(tree) == r"{\dfrac{\text{$A$} \qquad \text{$B$}}{\text{$A \wedge B$}}\;\text{$\wedge$I}}"


def test_ellipsis_several_trees_and_text_without_trees():
    tree = (
        r"\begin{prooftree}\hypo{\Gamma}\ellipsis{}{\Delta}\end{prooftree}"
        r" \quad \begin{prooftree}\hypo{x}\end{prooftree}"
    )
    assert rewrite_proof_trees(tree) == r"{\begin{gathered}\Gamma\\ \vdots\\ \Delta\end{gathered}} \quad {x}"
    assert rewrite_proof_trees("a + b") == "a + b"


def test_bussproofs_without_an_environment_and_mathpartir_rules():
    bare = r"\AxiomC{$A$}\AxiomC{$B$}\RightLabel{$\wedge I$}\BinaryInfC{$A \wedge B$}\DisplayProof \quad x"
    assert rewrite_proof_trees(bare) == (
        r"{\dfrac{\text{$A$} \qquad \text{$B$}}{\text{$A \wedge B$}}\;\text{$\wedge I$}} \quad x"
    )
    rule = r"\inferrule*[right=$\mathsf{Cut}$, vcenter]{\Gamma \vdash A \\ \Delta, A \vdash B}{\Gamma, \Delta \vdash B}"
    assert rewrite_proof_trees(rule) == (
        r"{\dfrac{\Gamma \vdash A  \qquad  \Delta, A \vdash B}{\Gamma, \Delta \vdash B}\;\text{$\mathsf{Cut}$}}"
    )
    assert rewrite_proof_trees(r"\inferrule{ }{x \and y}") == r"{\dfrac{}{x \and y}}"


def test_proof_sty_deduce_and_the_double_and_dashed_rules(converter):
    """proof.sty's ``\\deduce`` (premises over a conclusion, no line) inside an ``\\infer`` with ``&`` between its
    premises, and ``\\infer=``/``\\infer-`` (double and dashed lines, proof-dashed.sty): read as ``\\infer``."""
    latex = r"\infer-[\eta^+]{\Gamma \vdash A}{\deduce{\Gamma \vdash B}{\mathcal D} & \infer={C}{D}}"
    assert rewrite_proof_trees(latex) == (
        r"{\dfrac{{\genfrac{}{}{0pt}{0}{\mathcal D}{\Gamma \vdash B}}  \qquad  {\dfrac{D}{C}}}{\Gamma \vdash A}"
        r"\;{\scriptstyle \eta^+}}"
    )
    result = converter.convert(latex + r" \quad \deduce{\mathstrut}{\Longrightarrow}", "equation")
    assert (result.status, result.reason) == ("ok", None), result.message
    assert result.mathml.count("<mfrac") == 4 and "deduce" not in result.mathml
