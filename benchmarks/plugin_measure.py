"""The measurements the plugin benchmarks share (`plugin_rerank.py`, `plugin_maxsim.py`): the
node's process CPU read fresh, client and node CPU per query of several search services in interleaved rounds, empty
copies of an equations index to load variants into, and combined queries drawn from an index."""

from __future__ import annotations

import time
from typing import Any

from eqsearch.engine.index.mappings import alias_name
from eqsearch.engine.search.query import HybridQuery


def node_cpu_ms(client: Any, max_wait_s: float = 2.0) -> int:
    """The nodes' process CPU so far in ms, waiting for figures stamped after the call (they are cached ~1 s)."""
    asked = time.time() * 1000
    deadline = time.monotonic() + max_wait_s
    while True:
        nodes = client.nodes.stats(metric="process")["nodes"]
        if all(int(n["process"].get("timestamp", 0)) >= asked for n in nodes.values()) or time.monotonic() > deadline:
            return sum(int(n["process"]["cpu"]["total_in_millis"]) for n in nodes.values())
        time.sleep(0.05)


def equations_mapping(client: Any, prefix: str) -> dict[str, Any]:
    """The mappings (properties and ``_meta``) of the equations index ``prefix``'s alias points at."""
    source = alias_name(prefix, "equations")
    concrete = next(iter(client.indices.get_alias(name=source)))
    return dict(client.indices.get(index=concrete)[concrete]["mappings"])


def create_equations_copy(client: Any, prefix: str, mappings: dict[str, Any]) -> str:
    """An empty equations index ``<prefix>-equations-v1`` with ``mappings``, set for bulk loading (one shard, no
    replica, no refresh), behind its alias; returns the alias."""
    target = alias_name(prefix, "equations")
    client.indices.create(
        index=f"{target}-v1",
        mappings=mappings,
        settings={"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
        aliases={target: {}},
    )
    return target


def interleaved_cpu(
    client: Any, services: dict[str, Any], queries: list[Any], rounds: int, repeat: int
) -> dict[str, dict[str, list[float]]]:
    """Client and node CPU per query (ms) of each service, measured round by round, the modes interleaved within a
    round so that the machine's load falls on all of them alike: mode -> ``client``/``node`` -> one figure a round."""
    per_query: dict[str, dict[str, list[float]]] = {m: {"client": [], "node": []} for m in services}
    for _ in range(rounds):
        for mode, service in services.items():
            node, cpu = node_cpu_ms(client), time.process_time()
            for _ in range(repeat):
                for query in queries:
                    service.search(query)
            count = repeat * len(queries)
            per_query[mode]["client"].append((time.process_time() - cpu) * 1000 / count)
            per_query[mode]["node"].append((node_cpu_ms(client) - node) / count)
    return per_query


#: Words too common to make a known-item query's keywords (``--hybrid``).
_STOPWORD_TEXT = (
    "that this with from where which when then than there their these those have been will shall also each such "
    "into over only some used uses using given gives both more most what true false none return returns "
    "value values function functions parameter parameters default"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def hybrid_queries(client: Any, alias: str, count: int, seed: int = 17) -> list[HybridQuery]:
    """``count`` combined queries drawn from the index (a seeded random sample of its display equations that have
    words around them): each equation's LaTeX and three words of its context or section title, as a researcher
    asks for a formula they remember with a few words; the UI's defaults (first page, highlights)."""
    import re

    body = {
        "query": {"function_score": {
            # words around them: a term of four letters or more (an empty context is indexed too)
            "query": {"bool": {"filter": [{"regexp": {"context": "[a-z]{4,}"}}, {"term": {"inline": False}}]}},
            "random_score": {"seed": seed, "field": "eq_id"}, "boost_mode": "replace",
        }},
        "size": count * 3,
        "_source": ["latex", "context", "section_title"],
    }  # fmt: skip
    out: list[HybridQuery] = []
    for hit in client.search(index=alias, body=body)["hits"]["hits"]:
        source = hit["_source"]
        text = f"{source.get('section_title') or ''} {source.get('context') or ''}"
        words = [w.lower() for w in re.findall(r"[A-Za-z]{4,}", text) if w.lower() not in _STOPWORDS]
        words = list(dict.fromkeys(words))
        if len(words) >= 3 and 3 <= len(source.get("latex") or "") <= 300:
            out.append(HybridQuery(latex=source["latex"], keywords=" ".join(words[:3])))
        if len(out) == count:
            break
    return out
