"""The ``ecml19-cnn`` rankers end to end: the bitmap bundle ingests and searches a small collection through the
production ingest job and search service on the real node; a contradicting ``--bundle`` is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.index import IndexAdmin
from eqsearch.engine.latex import KatexConverter
from eqsearch.engine.model import default_bundle_path, shipped_bundle_path
from eqsearch.engine.search import get_ranker
from eqsearch.evaluation.formulas import evaluate_formulas, ranking_bundle, ranking_encoder
from eqsearch.evaluation.trec import read_qrels
from eqsearch.main import main
from formula_collection import BROKEN, FORMULAS, numbered, write_formula_files
from hashing_encoder import HashingEncoder

BITMAP_BUNDLE = default_bundle_path().parent / "bitmap-bundle"
needs_bundle = pytest.mark.skipif(
    not (BITMAP_BUNDLE / "manifest.json").is_file(), reason="no engine/model/bitmap-bundle yet"
)

COLLECTION = numbered(*FORMULAS, BROKEN)  # KaTeX refuses formula 7: no MathML, so no bitmap
TOPICS = {"T.1": r"y = \frac{x^2 + x + c}{x^2 + 2x + c}", "T.2": r"\sum_{k=0}^{n}\binom{n}{k}k"}
QRELS = [("T.1", "1", 3), ("T.1", "2", 3), ("T.1", "6", 0), ("T.2", "3", 2), ("T.2", "4", 3), ("T.2", "6", 0)]


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    return write_formula_files(tmp_path, COLLECTION, TOPICS, QRELS)


def test_the_bitmap_rankers_name_their_bundle_and_refuse_another() -> None:
    for name in ("ecml19-cnn", "structure+ecml19-cnn+rerank"):
        ranking = get_ranker(name)
        assert ranking.bundle == "bitmap-bundle" and ranking.embedding > 0
    assert get_ranker("embedding").bundle is None
    assert ranking_bundle(get_ranker("embedding")) is None
    assert ranking_bundle(get_ranker("embedding"), "some/bundle") == Path("some/bundle")
    if not (BITMAP_BUNDLE / "manifest.json").is_file():
        return
    ranking = get_ranker("ecml19-cnn")
    assert ranking_bundle(ranking) == shipped_bundle_path("bitmap-bundle") == ranking_bundle(ranking, BITMAP_BUNDLE)
    with pytest.raises(EqsearchError, match="searches the vectors of its own bundle"):
        ranking_bundle(ranking, default_bundle_path())


@needs_bundle
def test_evaluate_refuses_a_contradicting_bundle_and_another_models_encoder(tmp_path: Path, capsys) -> None:
    collection, topics, qrels = _files(tmp_path)
    args = ["evaluate", "formulas", "--collection", str(collection), "--topics", str(topics), "--qrels", str(qrels)]
    assert main([*args, "--ranker", "ecml19-cnn", "--bundle", str(default_bundle_path())]) != 0
    assert "searches the vectors of its own bundle (bitmap-bundle" in capsys.readouterr().err
    with pytest.raises(EqsearchError, match="needs the encoder of bitmap-bundle"):
        evaluate_formulas(
            None, HashingEncoder(), None, collection, topics, read_qrels(qrels), ranking=get_ranker("ecml19-cnn")
        )  # type: ignore[arg-type]


@needs_bundle
@pytest.mark.es
def test_the_bitmap_ranker_runs_through_the_production_path(es_client, index_name, tmp_path: Path) -> None:
    collection, topics, qrels = _files(tmp_path)
    ranking = get_ranker("ecml19-cnn")
    encoder = ranking_encoder(ranking)
    with KatexConverter() as converter:
        evaluation = evaluate_formulas(
            es_client, encoder, converter, collection, topics, read_qrels(qrels), ranking=ranking, depth=20,
            index_prefix=index_name,
        )  # fmt: skip
    summary = evaluation.to_json()
    assert summary["topics"] == 2 and summary["collection_size"] == 7
    assert evaluation.ingest["errors_by_reason"] == {"convert:parse-error": 1}
    assert evaluation.ingest["counts"]["equations_with_vector"] == 6  # every formula with MathML got a bitmap
    assert len(evaluation.run["T.1"]) == 6 and "7" not in {doc for doc, _ in evaluation.run["T.1"]}  # kNN only
    assert evaluation.run["T.1"][0][0] == "2"  # the same picture, up to the spaces KaTeX ignores
    assert IndexAdmin(es_client, index_name).list() == []
    encoder.close()


@needs_bundle
@pytest.mark.es
def test_an_equation_that_does_not_render_is_counted_and_indexed_without_a_vector(es_client, index_name, tmp_path):
    import json

    from eqsearch.ingest.jobs import IngestJob, IngestJobConfig

    good = '<math display="block"><mrow><msup><mi>a</mi><mn>2</mn></msup><mo>+</mo><mi>b</mi></mrow></math>'
    bad = "<math><mrow><mfoo>x</mfoo></mrow></math>"  # well-formed XML, but not MathML: MathJax refuses it
    papers = tmp_path / "papers.jsonl"
    records = [
        {
            "format_version": 1,
            "id": f"p{i}",
            "kind": "formula",
            "source": f"test:{i}",
            "sections": [{"equations": [{"latex": "a^2+b", "environment": "equation", "status": "ok", "mathml": m}]}],
        }
        for i, m in enumerate([good, bad, good])
    ]
    papers.write_text("".join(json.dumps(r) + "\n" for r in records))
    encoder = ranking_encoder(get_ranker("ecml19-cnn"))
    config = IngestJobConfig(sources=(str(papers),), index_prefix=index_name, kind="papers")
    with KatexConverter() as converter:
        report = IngestJob(es_client, encoder, config, converter=converter).run()
    assert report.state == "finished" and report.errors_by_reason == {"encode:BitmapRenderError": 1}
    # the job retried the batch one by one; the encoder kept the batch's renderings, so nothing rendered twice
    assert report.counts["equations_with_vector"] == 2 and encoder.failures == {"mathml-error": 1}
    assert encoder.renderer.rendered == 2
    encoder.close()
