"""The search page's paper cards: which of a paper's matching equations a card shows, and what it says of the rest.

The engine returns, per paper on the page, every equation of it that its ranked lists found, best first. A card
shows the best `CARD_EQUATIONS` and says how many more matched ("N more from this paper", a link to the same
search within that paper). An inline formula found by the words alone (a page's ``h_{ii}`` matched because the page
mentions regression) says nothing about the query: it stays off the card unless the search asked for inline formulas
only; the card counts what it left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqsearch.engine.search.results import EquationHit, PaperGroup
from eqsearch.webui.provenance import Provenance, provenance, source_version

#: Equations a paper card shows.
CARD_EQUATIONS = 3
#: The channels that compare formulas (the others, ``text`` and ``context``, compare words).
FORMULA_CHANNELS = frozenset({"structure", "embedding"})


@dataclass(frozen=True)
class PaperCard:
    """One paper on the search page.

    Args:
        group: the paper and all its matching equations, best first.
        equations: the equations the card shows.
        more: how many other equations of the paper matched and are not shown (the card links to them).
        words_only_inline: inline formulas matched by the words alone, left out of the card.
        provenance: where the paper comes from.
    """

    group: PaperGroup
    equations: list[EquationHit]
    more: int
    words_only_inline: int
    provenance: Provenance


def matched_by_formula(hit: EquationHit) -> bool:
    """Whether a formula channel found the hit (not the words alone)."""
    if hit.channels:
        return bool(FORMULA_CHANNELS.intersection(hit.channels))
    return hit.matched in ("formula", "both")


def paper_cards(groups: list[PaperGroup], inline: str = "include", limit: int = CARD_EQUATIONS) -> list[PaperCard]:
    """The cards of a page of paper groups.

    Args:
        groups: the page's paper groups, best first.
        inline: the query's inline choice; with ``only`` inline formulas found by words stay on the cards.
        limit: equations per card.
    """
    cards = []
    for group in groups:
        kept = [h for h in group.equations if inline == "only" or not h.inline or matched_by_formula(h)]
        first = group.equations[0] if group.equations else None
        version = source_version(group.paper_id, first.eq_id if first else None)
        cards.append(
            PaperCard(
                group=group,
                equations=kept[:limit],
                more=max(0, len(kept) - limit),
                words_only_inline=len(group.equations) - len(kept),
                provenance=provenance(group.paper_id, version),
            )
        )
    return cards
