"""Node vectors written at ingest (``ingest run --node-vectors``) on a real node: an option of the equations index
that a deployment keeps once chosen, written by the same documents as the other fields, refused where it would leave
equations without them or mix two encoders' vectors."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from eqsearch.engine.index import NODE_VECTORS_FIELD, IndexAdmin
from eqsearch.engine.index.documents import node_vectors_value
from eqsearch.engine.model.nodes import load_node_encoder
from eqsearch.ingest.jobs import IngestJob, IngestJobConfig, IngestJobError
from hashing_encoder import HashingEncoder


@pytest.fixture(scope="module")
def node_states():
    return load_node_encoder(None, output="node_states")


def _stored(es_client, alias: str) -> dict[str, dict]:
    """Each equation's source with its node vectors, which live in doc values only (not in the source)."""
    es_client.indices.refresh(index=alias)
    hits = es_client.search(
        index=alias,
        size=1000,
        query={"match_all": {}},
        source_excludes=["vector"],
        docvalue_fields=[NODE_VECTORS_FIELD],
    )
    return {
        hit["_id"]: {**hit["_source"], **{name: values[0] for name, values in hit.get("fields", {}).items()}}
        for hit in hits["hits"]["hits"]
    }


def _node_vectors(stored: dict[str, dict]) -> dict[str, str | None]:
    return {eq_id: body.get(NODE_VECTORS_FIELD) for eq_id, body in stored.items()}


def _meta(es_client, alias: str) -> dict:
    return next(iter(es_client.indices.get_mapping(index=alias).values()))["mappings"]["_meta"]


def test_a_job_with_node_vectors_stores_each_formulas_int8_rows_and_the_index_records_whose(
    es_client, index_name, papers, node_states
):
    source = papers.write_all()
    alias = f"{index_name}-equations"
    config = IngestJobConfig(
        sources=(str(source),), index_prefix=index_name, batch_equations=20, node_vectors="node_states"
    )
    report = IngestJob(es_client, HashingEncoder(), config, node_encoder=node_states).run()
    assert report.state == "finished"
    meta = _meta(es_client, alias)
    assert (meta["node_vectors"], meta["node_dims"]) == (node_states.identity, 512)
    assert IndexAdmin(es_client, index_name).options_of("equations").node_vectors == node_states.identity
    stored = _stored(es_client, alias)
    with_nodes = {eq_id: body for eq_id, body in stored.items() if NODE_VECTORS_FIELD in body}
    # every converted formula has them, the one KaTeX refused (paper 3's last) has none
    assert report.counts["equations_with_node_vectors"] == len(with_nodes) == len(stored) - 1
    assert NODE_VECTORS_FIELD not in stored["2401.00003v1:4"]
    for body in list(with_nodes.values())[:5]:  # the same bytes as the sidecar's rows of its MathML, rounded
        assert body[NODE_VECTORS_FIELD] == node_vectors_value(node_states.encode([body["mathml"]])[0])
        raw = base64.b64decode(body[NODE_VECTORS_FIELD])
        nodes = int.from_bytes(raw[1:3], "little")
        assert len(raw) == 5 + nodes * 512 and nodes > 5
    # a later job without the option still writes them: the index holds them, so it stays whole
    later = IngestJob(es_client, HashingEncoder(), IngestJobConfig(**{**config.__dict__, "node_vectors": None,
                                                                      "restart": True}))  # fmt: skip
    assert later.node_encoder is None
    again = later.run()
    assert later.node_encoder is not None and later.node_encoder.identity == node_states.identity
    assert again.counts["equations_with_node_vectors"] == len(with_nodes)
    assert _node_vectors(_stored(es_client, alias)) == _node_vectors(stored)  # the same bytes


def test_without_the_option_nothing_changes_and_adding_them_later_asks_for_a_migration(
    es_client, index_name, papers, node_states
):
    source = papers.write_all()
    alias = f"{index_name}-equations"
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, batch_equations=50)
    report = IngestJob(es_client, HashingEncoder(), config).run()
    assert report.counts["equations_with_node_vectors"] == 0
    mapping = next(iter(es_client.indices.get_mapping(index=alias).values()))["mappings"]
    assert NODE_VECTORS_FIELD not in mapping["properties"] and "node_vectors" not in mapping["_meta"]
    before = _stored(es_client, alias)
    asking = IngestJobConfig(**{**config.__dict__, "node_vectors": "node_states", "restart": True})
    with pytest.raises(IngestJobError, match="without node vectors") as refused:
        IngestJob(es_client, HashingEncoder(), asking, node_encoder=node_states).run()
    assert "index migrate equations --node-vectors" in (refused.value.hint or "")
    assert _stored(es_client, alias) == before  # refused before any write (the same documents, indexed_at too)
    # the migration gives every stored equation its node vectors; the job then writes them too
    IndexAdmin(es_client, index_name).migrate("equations", node_encoder=node_states)
    migrated = _stored(es_client, alias)
    assert sum(NODE_VECTORS_FIELD in body for body in migrated.values()) == len(migrated) - 1
    again = IngestJob(es_client, HashingEncoder(), asking, node_encoder=node_states).run()
    assert again.state == "finished" and _node_vectors(_stored(es_client, alias)) == _node_vectors(migrated)


def test_another_encoders_node_vectors_and_bad_options_are_refused(es_client, index_name, papers, node_states):
    with pytest.raises(ValueError, match="'node_state' is not one of node_states, node_vectors"):
        IngestJobConfig(sources=("x",), node_vectors="node_state")
    source = papers.write("one.jsonl", [papers.record(0)])
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, node_vectors="node_states")
    IngestJob(es_client, HashingEncoder(), config, node_encoder=node_states).run()
    other = IngestJobConfig(**{**config.__dict__, "node_vectors": "node_vectors", "restart": True})
    with pytest.raises(
        IngestJobError, match=r"holds node vectors of \S+/node_states, but .* is \S+/node_vectors"
    ) as refused:
        IngestJob(es_client, HashingEncoder(), other).run()
    assert "--node-output" in (refused.value.hint or "")


def test_int8_rows_keep_the_cosines_of_the_float_ones(node_states):
    rows = node_states.encode(["<math><mfrac><mi>a</mi><mrow><mi>b</mi><mo>+</mo><mn>1</mn></mrow></mfrac></math>"])[0]
    raw = base64.b64decode(node_vectors_value(rows))
    stored = np.frombuffer(raw[5:], dtype=np.int8).reshape(len(rows), -1).astype(np.float32)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    rounded = stored / np.linalg.norm(stored, axis=1, keepdims=True)
    assert np.abs(unit @ unit.T - rounded @ rounded.T).max() < 0.01


def test_the_default_output_is_the_maxsim_rankers_64_d_projection(es_client, index_name, papers):
    from eqsearch.engine.search.rankers import get_ranker

    output = get_ranker("structure+embedding+rerank+maxsim").maxsim_nodes
    assert output == "node_states@p64"
    source = papers.write("two.jsonl", [papers.record(0), papers.record(1)])
    config = IngestJobConfig(sources=(str(source),), index_prefix=index_name, node_vectors=output)
    job = IngestJob(es_client, HashingEncoder(), config)
    assert job.run().counts["equations_with_node_vectors"] == 10
    meta = _meta(es_client, f"{index_name}-equations")
    assert meta["node_vectors"] == job.node_encoder.identity and "@p64:" in meta["node_vectors"]
    assert meta["node_dims"] == 64
    for body in _stored(es_client, f"{index_name}-equations").values():
        raw = base64.b64decode(body[NODE_VECTORS_FIELD])
        assert int.from_bytes(raw[3:5], "little") == 64  # an eighth of the 512-d states' bytes
        assert body[NODE_VECTORS_FIELD] == node_vectors_value(job.node_encoder.encode([body["mathml"]])[0])
