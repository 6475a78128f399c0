"""Fixtures of the ingest job tests: papers JSONL files to ingest, and a look at the equation ids indexed.

Sources are papers JSONL files (the ingest format's minimal input form); LaTeX goes through the real KaTeX
converter; vectors come from the tests' `HashingEncoder` (an honest stand-in for the trained model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

HASHING_ENCODER_FILE = Path(__file__).resolve().parents[2] / "hashing_encoder.py"


class JobPapers:
    """Papers for ingest jobs, written under one test's temporary folder.

    `N_PAPERS` papers of `EQS_PER_PAPER` equations each, ``2401.00000`` to ``2401.00023``; each cites the next
    one; paper 3's last equation does not parse.
    """

    N_PAPERS = 24
    EQS_PER_PAPER = 5

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def record(
        cls,
        p: int,
        *,
        version: int = 1,
        equations: int | None = None,
        bad_title: bool = False,
        failed: bool = False,
        inline: list[str] | None = None,
    ) -> dict[str, Any]:
        """Paper ``p`` in the papers JSONL form (``EQS_PER_PAPER`` equations unless told; ``inline``: the LaTeX of the
        inline formulas of its "Main" section, none unless told)."""
        count = cls.EQS_PER_PAPER if equations is None else equations
        latex = [f"x_{{{p}}}^{{{k}}} + \\frac{{a_{k}}}{{b_{p}}} = {k} + {version}" for k in range(count)]
        if p == 3 and latex:
            latex[-1] = r"\frac{1}{"
        record: dict[str, Any] = {
            "id": f"2401.{p:05d}",
            "version": version,
            "title": {"not": "a string"} if bad_title else f"On the sums of paper {p}",
            "abstract": "We study sums.",
            "authors": ["A. Author"],
            "metadata": {"categories": ["math.CO"], "published": "Mon, 1 Jan 2024 00:00:00 GMT"},
            "citations": [f"2401.{(p + 1) % cls.N_PAPERS:05d}"],
            "sections": [
                {"title": "Intro", "equations": []},
                {"title": "Main", "equations": [{"latex": x, "context_before": f"lemma {k} of paper {p}"}
                                                for k, x in enumerate(latex)]},
            ],
        }  # fmt: skip
        if inline:
            record["sections"][1]["inline"] = [{"latex": x} for x in inline]
        if failed:
            record.update(status="failed", error={"reason": "timeout", "message": "over the time budget"}, sections=[])
        return record

    def write(self, name: str, records: list[dict[str, Any]]) -> Path:
        """A papers JSONL file of ``records`` in the test's folder."""
        path = self.folder / name
        path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
        return path

    def write_all(self, name: str = "papers.jsonl", *, bad_title_paper: int | None = None) -> Path:
        """All `N_PAPERS` papers (one of them with a title Elasticsearch refuses, when asked)."""
        return self.write(name, [self.record(p, bad_title=p == bad_title_paper) for p in range(self.N_PAPERS)])

    @staticmethod
    def ids_of(p: int, version: int, equations: int) -> set[str]:
        """The equation ids of version ``version`` of paper ``p`` with ``equations`` equations."""
        return {f"2401.{p:05d}v{version}:{k}" for k in range(equations)}

    @staticmethod
    def equation_ids(es_client: Any, prefix: str) -> list[str]:
        """The ids in the deployment's equations index, sorted (after a refresh)."""
        es_client.indices.refresh(index=f"{prefix}-equations")
        hits = es_client.search(index=f"{prefix}-equations", size=1000, source=["eq_id"], sort=[{"eq_id": "asc"}])
        return [hit["_id"] for hit in hits["hits"]["hits"]]


@pytest.fixture
def papers(tmp_path: Path) -> JobPapers:
    """Papers for ingest jobs, written under the test's temporary folder (see `JobPapers`)."""
    return JobPapers(tmp_path)
