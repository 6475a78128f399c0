"""The search page's paper cards (`eqsearch.webui.cards`): the best few equations, the rest counted."""

from __future__ import annotations

from eqsearch.engine.search.results import EquationHit, group_hits
from eqsearch.webui.cards import matched_by_formula, paper_cards


def hit(eq_id: str, channels: tuple[str, ...], inline: bool = False) -> EquationHit:
    paper = eq_id.rsplit(":", 1)[0].split("v")[0]
    return EquationHit(eq_id, paper, "x", None, "", "", 1.0, "text", channels=channels, inline=inline, title="T")


def test_a_card_shows_its_best_equations_and_counts_the_others():
    hits = [hit(f"2002.00002v2:{n}", ("structure",)) for n in range(5)] + [hit("2003.00003:0", ("embedding",))]
    first, second = paper_cards(group_hits(hits))
    assert [h.eq_id for h in first.equations] == ["2002.00002v2:0", "2002.00002v2:1", "2002.00002v2:2"]
    assert first.more == 2 and first.words_only_inline == 0
    assert first.provenance.document == "2002.00002v2"
    assert second.more == 0 and len(second.equations) == 1


def test_inline_formulas_matched_by_words_alone_stay_off_unless_asked_for():
    hits = [
        hit("2002.00002:i1", ("text",), inline=True),
        hit("2002.00002:0", ("text",)),
        hit("2002.00002:i2", ("structure", "text"), inline=True),
        hit("2002.00002:i3", ("context",), inline=True),
    ]
    (card,) = paper_cards(group_hits(hits))
    assert [h.eq_id for h in card.equations] == ["2002.00002:0", "2002.00002:i2"]
    assert card.words_only_inline == 2 and card.more == 0
    (only,) = paper_cards(group_hits(hits), inline="only")
    assert len(only.equations) == 3 and only.more == 1 and only.words_only_inline == 0


def test_what_counts_as_a_formula_match():
    assert matched_by_formula(hit("a:0", ("embedding", "text")))
    assert not matched_by_formula(hit("a:0", ("text", "context")))
