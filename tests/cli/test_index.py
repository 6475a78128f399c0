"""`eqsearch index create` and `migrate`: the shard and replica flags, and `--if-stale` (what `make run` does before
ingesting), against a real node."""

from __future__ import annotations

import pytest
from eqsearch.engine.index import MAPPING_VERSIONS, IndexAdmin, IndexOptions
from eqsearch.main import main


@pytest.mark.es
def test_if_stale_migrates_only_an_index_of_an_older_mapping(es_client, index_name, monkeypatch, capsys):
    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    args = ["index", "migrate", "equations", "--if-stale", "--quiet"]
    assert main(args) == 0  # no index yet: nothing to do
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions())
    assert main(args) == 0 and admin.current("equations").endswith("-v1")  # current: nothing to do
    # an index made by an older eqsearch: its mapping records an older version
    current = admin.current("equations")
    meta = es_client.indices.get_mapping(index=current)[current]["mappings"]["_meta"]
    es_client.indices.put_mapping(index=current, meta={**meta, "mapping_version": 1})
    assert admin.describe("equations")["stale"]
    assert main(args) == 0
    assert "made by an older mapping: migrating it" in capsys.readouterr().err
    assert admin.current("equations").endswith("-v2")
    assert admin.describe("equations")["mapping_version"] == MAPPING_VERSIONS["equations"]


@pytest.mark.es
def test_element_type_is_int8_by_default_for_the_bundles_cosine_and_chosen_by_flag(
    es_client, index_name, monkeypatch, capsys
):
    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    assert main(["index", "create", "equations"]) == 0  # the shipped bundle compares by cosine
    admin = IndexAdmin(es_client, index_name)
    assert admin.options_of("equations").element_type == "byte"
    assert main(["index", "migrate", "equations", "--quiet", "--index-type", "int8_hnsw"]) == 0
    assert (admin.options_of("equations").index_type, admin.options_of("equations").element_type) == (
        "int8_hnsw",
        "float",  # a quantized type takes floats
    )
    assert main(["index", "migrate", "equations", "--quiet", "--index-type", "hnsw", "--element-type", "byte"]) == 0
    assert admin.describe("equations")["vector"]["element_type"] == "byte"
    assert main(["index", "migrate", "equations", "--quiet"]) == 0  # no flags: the choice carries over
    assert admin.options_of("equations").element_type == "byte"
    with pytest.raises(SystemExit):
        main(["index", "migrate", "equations", "--index-type", "bbq_hnsw", "--element-type", "byte"])
    assert "--element-type byte needs cosine similarity and --index-type hnsw or flat" in capsys.readouterr().err


@pytest.mark.es
def test_hnsw_m_is_32_by_default_chosen_by_flag_and_kept_by_a_migration(es_client, index_name, monkeypatch, capsys):
    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    assert main(["index", "create", "equations"]) == 0
    admin = IndexAdmin(es_client, index_name)

    def graph_degree() -> int:
        current = admin.current("equations")
        mapping = es_client.indices.get_mapping(index=current)[current]["mappings"]
        assert mapping["_meta"]["hnsw_m"] == mapping["properties"]["vector"]["index_options"]["m"]
        return mapping["properties"]["vector"]["index_options"]["m"]

    assert graph_degree() == 32
    assert main(["index", "migrate", "equations", "--quiet", "--hnsw-m", "48"]) == 0
    assert graph_degree() == 48
    assert main(["index", "migrate", "equations", "--quiet"]) == 0  # no flag: the choice carries over
    assert graph_degree() == 48
    with pytest.raises(SystemExit):
        main(["index", "migrate", "equations", "--hnsw-m", "1000"])
    assert "--hnsw-m must be between 4 and 128, got 1000" in capsys.readouterr().err


@pytest.mark.es
def test_shards_and_replicas_flags_set_the_layout_and_a_migration_keeps_it(es_client, index_name, monkeypatch, capsys):
    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    assert main(["index", "create", "equations", "--shards", "2", "--replicas", "0"]) == 0
    assert "2 shard(s), 0 replica(s)" in capsys.readouterr().out
    admin = IndexAdmin(es_client, index_name)
    assert (admin.options_of("equations").shards, admin.options_of("equations").replicas) == (2, 0)
    assert main(["index", "migrate", "equations", "--quiet"]) == 0  # no flags: the layout carries over
    assert admin.options_of("equations").shards == 2
    assert main(["index", "migrate", "equations", "--quiet", "--shards", "3"]) == 0
    assert admin.options_of("equations").shards == 3 and admin.current("equations").endswith("-v3")
    with pytest.raises(SystemExit):
        main(["index", "create", "equations", "--shards", "0"])
    assert "expected a whole number of at least 1, got '0'" in capsys.readouterr().err


@pytest.mark.es
def test_node_vectors_are_chosen_at_create_kept_by_migrate_and_dropped_on_request(
    es_client, index_name, monkeypatch, capsys
):
    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    assert main(["index", "create", "--node-vectors"]) == 0  # all three kinds: the equations index gets them
    admin = IndexAdmin(es_client, index_name)
    chosen = admin.options_of("equations")
    assert "@p64:" in chosen.node_vectors and chosen.node_dims == 64  # the MaxSim ranker's output by default
    assert admin.describe("equations")["node_vectors"] == chosen.node_vectors  # what 'index describe' shows
    assert main(["index", "migrate", "equations", "--quiet"]) == 0
    assert admin.options_of("equations").node_vectors == chosen.node_vectors
    assert main(["index", "migrate", "equations", "--quiet", "--no-node-vectors"]) == 0
    assert admin.options_of("equations").node_vectors is None
    assert main(["index", "migrate", "equations", "--quiet", "--node-vectors", "--node-output", "node_states"]) == 0
    assert admin.options_of("equations").node_vectors.endswith("/node_states")
    assert "writing every equation's node vectors" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["index", "create", "papers", "--node-vectors"], "--node-vectors applies to the equations index only"),
        (["index", "migrate", "jobs", "--node-vectors"], "--node-vectors applies to the equations index only"),
        (["index", "migrate", "equations", "--node-vectors", "--no-node-vectors"], "contradict each other"),
        (["index", "migrate", "papers", "--no-node-vectors"], "--no-node-vectors applies to the equations index"),
        (["ingest", "run", "x.jsonl", "--node-vectors", "--node-output", "edges"], "invalid choice: 'edges'"),
        (
            [
                "evaluate",
                "formulas",
                "--collection",
                "c",
                "--topics",
                "t",
                "--qrels",
                "q",
                "--node-vectors",
                "--no-node-vectors",
                "--ranker",
                "structure+embedding+rerank+maxsim-in-node",
            ],
            "contradict each other",
        ),
    ],
)
def test_bad_node_vector_flags_are_usage_errors(args, says, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.es
def test_if_stale_reencodes_an_index_of_another_encoders_vectors(es_client, index_name, monkeypatch, capsys):
    from eqsearch.engine.model.encoder import load_encoder

    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    admin = IndexAdmin(es_client, index_name)
    admin.ensure(IndexOptions(dims=64, similarity="cosine", encoder="kdd20-gcn:0123456789abcdef"))  # an older model's
    mathml = "<math><msup><mi>x</mi><mn>2</mn></msup></math>"
    es_client.index(index=f"{index_name}-equations", id="p:0", refresh=True,
                    document={"eq_id": "p:0", "paper_id": "p", "mathml": mathml, "vector": [0.125] * 64})  # fmt: skip
    args = ["index", "migrate", "equations", "--if-stale", "--quiet"]
    assert main(args) == 0
    assert "holds the vectors of kdd20-gcn:0123456789abcdef" in capsys.readouterr().err
    encoder = load_encoder()
    moved = admin.options_of("equations")
    assert (moved.encoder, moved.dims) == (encoder.identity, encoder.dim) and admin.current("equations").endswith("-v2")
    body = {"query": {"ids": {"values": ["p:0"]}}, "_source": {"exclude_vectors": False, "includes": ["vector"]}}
    (hit,) = es_client.search(index=f"{index_name}-equations", body=body)["hits"]["hits"]
    assert len(hit["_source"]["vector"]) == encoder.dim
    assert main(args) == 0 and admin.current("equations").endswith("-v2")  # the installed encoder's: nothing to do


@pytest.mark.es
def test_reencode_keeps_node_vectors_and_makes_them_with_the_new_network(es_client, index_name, monkeypatch):
    from eqsearch.engine.model.bundle import default_bundle_path, read_manifest, search_bundle_path

    monkeypatch.setenv("EQSEARCH_INDEX_PREFIX", index_name)
    assert main(["index", "create", "equations", "--node-vectors"]) == 0
    admin = IndexAdmin(es_client, index_name)
    chosen = admin.options_of("equations").node_vectors
    # an index whose node vectors an older network made (the identity the index records: bundle/output:projection)
    older = "kdd20-gcn:0123456789abcdef/" + chosen.split("/", 1)[1]
    current = admin.current("equations")
    meta = es_client.indices.get_mapping(index=current)[current]["mappings"]["_meta"]
    es_client.indices.put_mapping(index=current, meta={**meta, "node_vectors": older, "encoder": "kdd20-gcn:0"})
    assert main(["index", "migrate", "equations", "--reencode", "--quiet", "--bundle", str(search_bundle_path())]) == 0
    moved = admin.options_of("equations")
    assert moved.node_vectors == chosen  # the composite's graph network's, as 'index create' chose them
    assert chosen.startswith(read_manifest(default_bundle_path()).identity + "/")
    # re-encoded without node vectors: none made (a mapping without them would refuse every document that had some)
    mathml = "<math><msup><mi>x</mi><mn>2</mn></msup></math>"
    es_client.index(index=f"{index_name}-equations", id="p:0", refresh=True,
                    document={"eq_id": "p:0", "paper_id": "p", "mathml": mathml})  # fmt: skip
    assert main(["index", "migrate", "equations", "--reencode", "--no-node-vectors", "--quiet"]) == 0
    assert admin.options_of("equations").node_vectors is None
    assert es_client.count(index=f"{index_name}-equations")["count"] == 1
