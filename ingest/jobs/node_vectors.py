"""Whether an ingest job writes node vectors (the MaxSim rerank's, `engine.index.documents.with_node_vectors`), and
whose: the job's own choice (``--node-vectors``, ``--node-output``) and the equations index's (its ``_meta`` names
the node encoder that wrote the node vectors it holds) must agree, as for the formula and text encoders.

An index that holds node vectors gets them from every job, with the same encoder, so that it stays whole; a job that
asks for them adds the field to an index only while that index holds no equation (those written before would have
none, and the MaxSim rerank would silently leave them out: a migration gives every stored equation its own).
"""

from __future__ import annotations

from collections.abc import Callable

from elasticsearch import Elasticsearch
from eqsearch.engine.index.mappings import NODE_VECTORS_FIELD, NODE_VECTORS_MAPPING
from eqsearch.engine.model import NodeEncoder
from eqsearch.engine.model.nodes import node_output_of
from eqsearch.ingest.jobs.errors import IngestJobError


def settle_node_vectors(
    client: Elasticsearch, index: str, node_encoder: NodeEncoder | None, load: Callable[[str], NodeEncoder]
) -> NodeEncoder | None:
    """The node encoder a job writes ``index``'s node vectors with (None: none), the index told of a new choice.

    Args:
        client: the cluster.
        index: the equations index (or its alias).
        node_encoder: the job's own (None: the job did not ask).
        load: output (``node_states@p64``, ``node_states``, ...) -> the node encoder of the job's bundle.

    Raises:
        IngestJobError: the index holds another encoder's node vectors, or of an unknown kind, or the job asks for
            them and the index holds equations without them.
    """
    mapping = client.indices.get_mapping(index=index)
    meta = next(iter(mapping.values()))["mappings"].get("_meta", {})
    recorded = meta.get("node_vectors")
    if node_encoder is None:
        if recorded is None:
            return None
        try:
            output = node_output_of(str(recorded))
        except ValueError:
            raise IngestJobError(f"{index} holds node vectors of an unknown kind ({recorded})") from None
        node_encoder = load(output)
    mine = node_encoder.identity
    if recorded is None:
        held = int(client.count(index=index)["count"])
        if held:
            raise IngestJobError(
                f"{index} holds {held:,} equations without node vectors: storing them for this job's equations only "
                "would leave the others out of the MaxSim rerank",
                hint="give every equation its node vectors first ('eqsearch index migrate equations --node-vectors'; "
                "searches keep answering), then run the job again; or run it without --node-vectors",
            )
        identity = {"node_vectors": mine, "node_dims": node_encoder.dim}
        # a mapping update replaces the whole _meta
        client.indices.put_mapping(
            index=index, properties={NODE_VECTORS_FIELD: NODE_VECTORS_MAPPING}, meta={**meta, **identity}
        )
    elif recorded != mine:
        raise IngestJobError(
            f"{index} holds node vectors of {recorded}, but this job's node encoder is {mine}: the MaxSim rerank "
            "would compare the incomparable",
            hint="run the job with the bundle and output that wrote them (--bundle, --node-output), or migrate the "
            "index first ('eqsearch index migrate equations --node-vectors --node-output OUTPUT' rewrites every "
            "equation's)",
        )
    return node_encoder
