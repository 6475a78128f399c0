"""Featurized papers for training: paper -> section -> equation graphs, plus citations between papers.

Reads the papers JSONL written by ingest (see ``ingest/FORMAT.md``): one paper per line with an id, sections with
equations (their MathML), and the ids of the papers it cites. Each equation goes through the one featurizer
(``eqsearch.engine.model.featurize``); equations whose MathML is missing or does not featurize are counted and skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.graph import GraphArrays


@dataclass(frozen=True)
class Paper:
    """One document: its id, its sections (each a tuple of equation indices into the corpus) and citations.

    Attributes:
        id: the paper id from the JSONL.
        sections: equation indices grouped by section; sections without equations are dropped.
        cites: indices (into ``Corpus.papers``) of the cited papers that are in the corpus.
    """

    id: str
    sections: tuple[tuple[int, ...], ...]
    cites: tuple[int, ...] = ()

    @property
    def equations(self) -> tuple[int, ...]:
        return tuple(i for section in self.sections for i in section)


@dataclass
class Corpus:
    """Papers and their featurized equations.

    Attributes:
        papers: the papers that have at least one equation.
        graphs: one GraphArrays per equation.
        equation_paper: for each equation, the index of its paper.
        skipped: how many equations could not be featurized, by reason.
    """

    papers: list[Paper]
    graphs: list[GraphArrays]
    equation_paper: np.ndarray
    skipped: dict[str, int] = field(default_factory=dict)

    def cited_by(self) -> list[tuple[int, ...]]:
        """For each paper, the corpus papers that cite it (the reverse citation edges)."""
        incoming: list[list[int]] = [[] for _ in self.papers]
        for i, paper in enumerate(self.papers):
            for j in paper.cites:
                incoming[j].append(i)
        return [tuple(x) for x in incoming]

    def summary(self) -> dict[str, Any]:
        """Counts for the bundle manifest and the logs."""
        n_nodes = [g.num_nodes for g in self.graphs]
        return {
            "papers": len(self.papers),
            "sections": sum(len(p.sections) for p in self.papers),
            "equations": len(self.graphs),
            "citation_edges": sum(len(p.cites) for p in self.papers),
            "nodes_mean": float(np.mean(n_nodes)) if n_nodes else 0.0,
            "skipped": dict(self.skipped),
        }

    def subset(self, paper_indices: Iterable[int]) -> Corpus:
        """A corpus of the given papers only; citations to papers outside it are dropped, equations renumbered."""
        keep = sorted(set(paper_indices))
        new_paper = {old: new for new, old in enumerate(keep)}
        graphs: list[GraphArrays] = []
        owners: list[int] = []
        papers: list[Paper] = []
        for new, old in enumerate(keep):
            paper = self.papers[old]
            sections = []
            for section in paper.sections:
                ids = []
                for eq in section:
                    ids.append(len(graphs))
                    graphs.append(self.graphs[eq])
                    owners.append(new)
                sections.append(tuple(ids))
            cites = tuple(new_paper[c] for c in paper.cites if c in new_paper)
            papers.append(Paper(paper.id, tuple(sections), cites))
        return Corpus(papers, graphs, np.asarray(owners, dtype=np.int64), dict(self.skipped))


def corpus_file(path: str | Path) -> Path:
    """The papers JSONL a training run reads, checked to exist.

    Raises:
        EqsearchError: no such file (the hint says how to write one).
    """
    corpus_path = Path(path)
    if not corpus_path.is_file():
        raise EqsearchError(
            f"the training corpus {corpus_path} does not exist",
            hint="write one with 'eqsearch ingest extract SRC... --out DIR' (ingest/FORMAT.md), or pass --corpus "
            "PAPERS.jsonl",
        )
    return corpus_path


def split_papers(corpus: Corpus, test_fraction: float, seed: int) -> tuple[Corpus, Corpus]:
    """Split by PAPER (never by equation), so that no test equation's paper was seen in training (KDD'20 §5).

    A paper goes to the test side when a hash of ``(seed, paper id)`` falls below ``test_fraction``: the split of a
    paper does not change when other papers are added to the corpus.
    """
    test, train = [], []
    for i, paper in enumerate(corpus.papers):
        digest = hashlib.sha256(f"{seed}:{paper.id}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        (test if u < test_fraction else train).append(i)
    return corpus.subset(train), corpus.subset(test)


def _paper_id(record: dict[str, Any], line_no: int) -> str:
    for key in ("id", "paper_id", "arxiv_id", "doc_id"):
        if record.get(key):
            return str(record[key])
    raise EqsearchError(f"papers JSONL line {line_no}: the paper has no id", hint="see ingest/FORMAT.md")


def _citation_ids(record: dict[str, Any]) -> list[str]:
    ids = []
    for item in record.get("citations") or record.get("cites") or []:
        if isinstance(item, str):
            ids.append(item)
        elif isinstance(item, dict):
            target = item.get("paper_id") or item.get("id") or item.get("arxiv_id") or item.get("target")
            if target:
                ids.append(str(target))
    return ids


def build_corpus(
    records: Iterable[dict[str, Any]],
    featurize: Callable[[str], GraphArrays],
    *,
    min_nodes: int = 2,
    max_nodes: int = 512,
    progress: Callable[[int], None] | None = None,
    inline: bool = False,
) -> Corpus:
    """Featurize the equations of paper records into a Corpus.

    Args:
        records: paper dicts (id, sections with equations carrying ``mathml``, citations).
        featurize: MathML -> GraphArrays (``functools.partial(featurize_mathml, vocab=...)``).
        min_nodes: equations with fewer nodes are skipped (a lone symbol says nothing about its paper).
        max_nodes: equations with more nodes are skipped (keeps batches bounded).
        progress: called with the number of equations handled after each paper.
        inline: keep the inline formulas too (each section's ``inline`` list, and docstrings' ``:math:`` roles),
            beside the displays.
    """
    raw: list[tuple[str, list[tuple[int, ...]], list[str]]] = []
    graphs: list[GraphArrays] = []
    owners: list[int] = []
    skipped: dict[str, int] = {}
    seen_ids: set[str] = set()
    handled = 0
    for record in records:
        pid = _paper_id(record, record.get("_line", 0))
        if pid in seen_ids:
            skipped["duplicate_paper"] = skipped.get("duplicate_paper", 0) + 1
            continue
        seen_ids.add(pid)
        sections: list[tuple[int, ...]] = []
        for section in record.get("sections") or []:
            ids = []
            extra = (section.get("inline") or []) if inline else []
            for equation in [*(section.get("equations") or []), *extra]:
                handled += 1
                if equation.get("display") is False and not inline:  # the paper: display equations only (§3.1)
                    skipped["inline"] = skipped.get("inline", 0) + 1
                    continue
                mathml = equation.get("mathml")
                if not mathml:
                    skipped["no_mathml"] = skipped.get("no_mathml", 0) + 1
                    continue
                try:
                    graph = featurize(mathml)
                except Exception:  # one bad equation must not stop a corpus: count it
                    skipped["featurize_error"] = skipped.get("featurize_error", 0) + 1
                    continue
                if not min_nodes <= graph.num_nodes <= max_nodes:
                    skipped["size"] = skipped.get("size", 0) + 1
                    continue
                ids.append(len(graphs))
                graphs.append(graph)
                owners.append(len(raw))
            if ids:
                sections.append(tuple(ids))
        if sections:
            raw.append((pid, sections, _citation_ids(record)))
        else:
            skipped["paper_without_equations"] = skipped.get("paper_without_equations", 0) + 1
        if progress is not None:
            progress(handled)
    index = {pid: i for i, (pid, _, _) in enumerate(raw)}
    papers = [
        Paper(pid, tuple(sections), tuple(sorted({index[c] for c in cites if c in index and index[c] != i})))
        for i, (pid, sections, cites) in enumerate(raw)
    ]
    return Corpus(papers, graphs, np.asarray(owners, dtype=np.int64), skipped)


def save_corpus(corpus: Corpus, path: Path) -> None:
    """Cache a featurized corpus as one ``.npz`` (graphs concatenated, offsets, papers as JSON)."""
    from eqsearch.engine.model.graph import concatenate_graphs

    batch = concatenate_graphs(corpus.graphs)
    node_counts = np.array([g.num_nodes for g in corpus.graphs], dtype=np.int64)
    edge_counts = np.array([g.edge_index.shape[1] for g in corpus.graphs], dtype=np.int64)
    meta = {
        "papers": [
            {"id": p.id, "sections": [list(s) for s in p.sections], "cites": list(p.cites)} for p in corpus.papers
        ],
        "skipped": corpus.skipped,
    }
    node_offsets = np.concatenate(([0], np.cumsum(node_counts)[:-1])).astype(np.int64)
    local_edges = batch.edge_index - np.repeat(node_offsets, edge_counts)[None, :]
    np.savez_compressed(
        path,
        tag=batch.tag,
        attr=batch.attr,
        char=batch.char,
        pos=batch.pos,
        edge_index=local_edges,
        node_counts=node_counts,
        edge_counts=edge_counts,
        equation_paper=corpus.equation_paper,
        meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
    )


def load_corpus(path: Path) -> Corpus:
    """Read a corpus cached by :func:`save_corpus`."""
    data = np.load(path)
    meta = json.loads(data["meta"].tobytes().decode())
    node_end = np.cumsum(data["node_counts"])
    edge_end = np.cumsum(data["edge_counts"])
    graphs = []
    n0 = e0 = 0
    arrays = {k: data[k] for k in ("tag", "attr", "char", "pos", "edge_index")}
    for n1, e1 in zip(node_end.tolist(), edge_end.tolist(), strict=True):
        n = n1 - n0
        graphs.append(
            GraphArrays(
                tag=arrays["tag"][n0:n1],
                attr=arrays["attr"][n0:n1],
                char=arrays["char"][n0:n1],
                pos=arrays["pos"][n0:n1],
                edge_index=np.ascontiguousarray(arrays["edge_index"][:, e0:e1]),
                graph=np.zeros(n, dtype=np.int64),
                num_graphs=1,
            )
        )
        n0, e0 = n1, e1
    papers = [Paper(p["id"], tuple(tuple(s) for s in p["sections"]), tuple(p["cites"])) for p in meta["papers"]]
    return Corpus(papers, graphs, data["equation_paper"], meta.get("skipped", {}))
