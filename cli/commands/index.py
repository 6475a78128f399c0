"""`eqsearch index ...`: the versioned indices behind aliases (create, list, describe, migrate, delete).

Nothing heavy is imported at module level: `eqsearch --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the engine loads inside the handlers
    from eqsearch.engine.index import IndexOptions

KINDS = ("equations", "papers", "jobs")
#: The node-states sidecar outputs an index may store for the MaxSim rerank; the first is the MaxSim ranker's.
NODE_OUTPUT_CHOICES = ("node_states@p64", "node_states", "node_vectors")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `index` command group."""
    index = subparsers.add_parser(
        "index",
        help="create, list, describe, migrate and delete the versioned Elasticsearch indices",
        description=(
            "Every index is versioned (PREFIX-equations-v3) behind an alias (PREFIX-equations) that searches and "
            "ingest jobs use. 'migrate' copies every document (vectors included) into a new version built from the "
            "current mapping code, checks the counts, and swaps the alias atomically; searches keep answering, and "
            "ingest jobs that run meanwhile pause their writes during the copy, then carry on into the new index. "
            "PREFIX is EQSEARCH_INDEX_PREFIX (default 'eqsearch'). New indices get one primary shard per data node "
            "(equations) and one replica when the cluster has a second data node; EQSEARCH_SHARDS / EQSEARCH_REPLICAS "
            "or --shards / --replicas set them (benchmarks/scale.md has the table by cluster size)."
        ),
    )
    commands = index.add_subparsers(dest="index_command", metavar="ACTION", required=True)

    create = commands.add_parser("create", help="create the first version of an index kind (or of all three)")
    create.add_argument("kinds", nargs="*", metavar="KIND", help="equations, papers or jobs (default: all three)")
    create.add_argument(
        "--bundle", help="model bundle whose vectors the equations index will hold (default: the installed one)"
    )
    create.add_argument("--dims", type=int, help="vector width (default: the bundle's)")
    create.add_argument(
        "--similarity", choices=("max_inner_product", "cosine"), help="vector similarity (default: the bundle's)"
    )
    create.add_argument("--index-type", choices=VECTOR_TYPES, default="hnsw", help="the vector index type (hnsw)")
    create.add_argument("--oversample", type=float, default=0.0, help=OVERSAMPLE_HELP)
    create.add_argument("--element-type", choices=ELEMENT_TYPES, help=ELEMENT_TYPE_HELP)
    create.add_argument("--hnsw-m", type=int, metavar="M", help=HNSW_M_HELP + " (default: 32)")
    _node_vectors_argument(create, "equations: every ingest job stores each formula's node vectors")
    _layout_arguments(create, "of the equations index (default: one per data node, or EQSEARCH_SHARDS)")
    create.set_defaults(handler=_create, parser=create)

    listing = commands.add_parser("list", help="every versioned index with its docs, size and alias")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_list)

    describe = commands.add_parser("describe", help="alias, version, analyzer, vector options, counts of a kind")
    describe.add_argument("kind", choices=KINDS)
    describe.add_argument("--json", action="store_true", help="print JSON")
    describe.set_defaults(handler=_describe)

    migrate = commands.add_parser("migrate", help="copy a kind into a new version and swap the alias atomically")
    migrate.add_argument("kind", choices=KINDS)
    migrate.add_argument("--batch-size", type=int, default=1000, help="documents per page and bulk request")
    migrate.add_argument("--delete-old", action="store_true", help="delete the old version after the swap")
    migrate.add_argument("--index-type", choices=VECTOR_TYPES, help="change the vector index type")
    migrate.add_argument("--oversample", type=float, help=OVERSAMPLE_HELP + " (default: the current index's)")
    migrate.add_argument("--element-type", choices=ELEMENT_TYPES, help=ELEMENT_TYPE_HELP)
    migrate.add_argument(
        "--hnsw-m", type=int, metavar="M", help=HNSW_M_HELP + " (default: the current index's; before version 12: 32)"
    )
    _layout_arguments(migrate, "of the new version (default: the current index's)")
    migrate.add_argument(
        "--context-vectors",
        action="store_true",
        help="equations: embed every equation's context for the context channel (kept by later migrations)",
    )
    _node_vectors_argument(migrate, "equations: give every equation its node vectors on the way (kept by later "
                           "migrations and jobs)")  # fmt: skip
    migrate.add_argument(
        "--no-node-vectors", action="store_true", help="equations: drop the node vectors the index holds"
    )
    migrate.add_argument("--quiet", action="store_true", help="no progress bar")
    migrate.add_argument(
        "--if-stale",
        action="store_true",
        help="only when the index was made by an older mapping of this eqsearch, or (equations) holds the vectors "
        "of another encoder than the installed one (or --bundle's), which it then re-encodes; nothing to do "
        "otherwise, nor when there is no index yet; `make run` does this before ingesting",
    )
    migrate.add_argument(
        "--reencode", action="store_true",
        help="equations only: give every equation the vector of --bundle's model on the way (a model upgrade; "
        "searches keep answering from the old vectors until the alias moves)",
    )  # fmt: skip
    migrate.add_argument("--bundle", help="with --reencode: the model bundle (default: the installed one)")
    migrate.add_argument(
        "--take-over", action="store_true",
        help="clean up after a migration started on another machine whose process is gone, then migrate",
    )  # fmt: skip
    migrate.set_defaults(handler=_migrate, parser=migrate)

    delete = commands.add_parser("delete", help="delete one concrete index (not the one an alias points at)")
    delete.add_argument("index", help="the concrete name, e.g. eqsearch-equations-v1")
    delete.add_argument("--force", action="store_true", help="delete even the index the alias points at")
    delete.set_defaults(handler=_delete)


def _count(least: int):
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < least:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {least}, got {text!r}")
        return int(text)

    return parse


def _node_vectors_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--node-vectors", action="store_true",
        help=f"{what}, so that a MaxSim ranker is scored inside Elasticsearch by eqsearch's plugin. LARGE: int8, "
        "5 + nodes x width bytes, a median of ~1.5 KB per equation for the default output (~12 KB for the 512-d "
        "node states); migrating writes them for every stored equation",
    )  # fmt: skip
    parser.add_argument(
        "--node-output", choices=NODE_OUTPUT_CHOICES, default=NODE_OUTPUT_CHOICES[0],
        help="with --node-vectors: the bundle's sidecar output stored: node_states@p64 (the default, what the MaxSim "
        "ranker compares: the 512-d node states' fixed 64-d projection, ~1.5 KB per equation), node_states (512-d, "
        "~12 KB) or node_vectors (the bundle's own 64-d node projections)",
    )  # fmt: skip


def _refuse_node_vectors_elsewhere(args: argparse.Namespace) -> None:
    """A usage error, before anything connects, where --node-vectors names only other indices than the equations."""
    kinds = args.kinds if hasattr(args, "kinds") else [args.kind]
    if args.node_vectors and kinds and "equations" not in kinds:
        args.parser.error("--node-vectors applies to the equations index only")


def _node_encoder(args: argparse.Namespace) -> object | None:
    """The node encoder of ``--node-vectors OUTPUT`` (of --bundle's sidecar), or None when not asked."""
    if not args.node_vectors:
        return None
    from eqsearch.engine.model.nodes import load_node_encoder, node_encoder_for

    if args.bundle is None:
        return load_node_encoder(None, output=args.node_output)
    from eqsearch.engine.model.encoder import load_encoder, onnx_provider_setting

    return node_encoder_for(
        load_encoder(args.bundle, provider=onnx_provider_setting(os.environ)), args.node_output
    )  # a composite's: its graph network's


def _layout_arguments(parser: argparse.ArgumentParser, shards_help: str) -> None:
    parser.add_argument("--shards", type=_count(1), metavar="N", help=f"primary shards {shards_help}")
    parser.add_argument(
        "--replicas", type=_count(0), metavar="N", help="replicas (default: as for --shards; EQSEARCH_REPLICAS)"
    )


def _admin():
    from eqsearch.engine.es.client import connect
    from eqsearch.engine.es.config import EsConfig
    from eqsearch.engine.index import IndexAdmin

    config = EsConfig.from_env()
    client, _ = connect(config)
    return IndexAdmin(client, config.index_prefix, shards=config.shards, replicas=config.replicas)


def _create(args: argparse.Namespace) -> int:
    from dataclasses import replace

    unknown = [kind for kind in args.kinds if kind not in KINDS]
    if unknown:
        args.parser.error(f"unknown index kind {unknown[0]!r}; choose from {', '.join(KINDS)}")
    _refuse_node_vectors_elsewhere(args)
    from eqsearch.engine.model.encoder import load_encoder, onnx_provider_setting

    encoder = load_encoder(args.bundle, provider=onnx_provider_setting(os.environ))
    admin = _admin()
    options = admin.default_options(
        dims=args.dims or encoder.dim, similarity=args.similarity or encoder.similarity, encoder=encoder.identity
    )
    if (options.dims, options.similarity) != (encoder.dim, encoder.similarity):
        options = replace(options, encoder=None)  # another shape than the bundle's: its vectors will not fit
    options = _with_vector_choice(options, args)
    options = replace(options, oversample=_oversample(args, options.index_type))
    options = _with_layout(options, args)
    node_encoder = _node_encoder(args)
    if node_encoder is not None:
        options = replace(options, node_vectors=node_encoder.identity, node_dims=node_encoder.dim)  # type: ignore[attr-defined]
    for kind in args.kinds or KINDS:
        name = admin.create(kind, options)
        shards = options.shards if kind == "equations" else 1
        print(f"created {name} behind {admin.alias(kind)} (analyzer {options.analyzer}, {shards} shard(s), "
              f"{options.replicas} replica(s))")  # fmt: skip
    return 0


def _with_layout(options: IndexOptions, args: argparse.Namespace) -> IndexOptions:
    from dataclasses import replace

    if args.shards is not None:
        options = replace(options, shards=args.shards)
    if args.replicas is not None:
        options = replace(options, replicas=args.replicas)
    return options


def _list(args: argparse.Namespace) -> int:
    infos = _admin().list()
    if args.json:
        print(json.dumps([info.__dict__ for info in infos], indent=2))
        return 0
    if not infos:
        print("no eqsearch indices; create them with 'eqsearch index create' or an ingest run")
        return 0
    print(f"{'index':44} {'alias':5} {'docs':>10} {'size':>10}  mapping  analyzer")
    for info in infos:
        print(f"{info.name:44} {'*' if info.aliased else '':5} {info.docs:>10,} {info.size_bytes / 2**20:>8.1f}MB  "
              f"v{info.mapping_version}       {info.analyzer}")  # fmt: skip
    return 0


def _describe(args: argparse.Namespace) -> int:
    description = _admin().describe(args.kind)
    if args.json:
        print(json.dumps(description, indent=2))
        return 0
    for key, value in description.items():
        print(f"{key:22} {json.dumps(value) if isinstance(value, dict | list) else value}")
    return 0


def _holds_other_vectors(admin: Any, bundle: str | None) -> str | None:
    """What the equations index's vectors are, where another encoder than ``bundle``'s (the installed one) made them;
    None where the same one did, or the index does not say."""
    from eqsearch.engine.model.bundle import read_manifest, search_bundle_path

    options = admin.options_of("equations")
    recorded = None if options is None else options.encoder
    wanted = read_manifest(bundle if bundle is not None else search_bundle_path()).identity
    if recorded is None or recorded == wanted:
        return None
    return f"the vectors of {recorded}, the installed encoder is {wanted}"


def _migrate(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from tqdm import tqdm

    if args.reencode and args.kind != "equations":
        args.parser.error("--reencode applies to the equations index only (it holds the vectors)")
    if args.bundle and not (args.reencode or args.node_vectors):
        args.parser.error("--bundle goes with --reencode or --node-vectors")
    if args.node_vectors and args.no_node_vectors:
        args.parser.error("--node-vectors and --no-node-vectors contradict each other")
    if args.no_node_vectors and args.kind != "equations":
        args.parser.error("--no-node-vectors applies to the equations index only")
    _refuse_node_vectors_elsewhere(args)
    admin = _admin()
    if args.if_stale:
        if admin.current(args.kind) is None:
            return 0
        other_vectors = args.kind == "equations" and _holds_other_vectors(admin, args.bundle)
        if other_vectors:
            print(f"the equations index holds {other_vectors}: re-encoding every equation", file=sys.stderr)
            args.reencode = True
        elif not admin.describe(args.kind).get("stale"):
            return 0
        else:
            print(f"the {args.kind} index was made by an older mapping: migrating it to the current one",
                  file=sys.stderr)  # fmt: skip
    options = admin.options_of(args.kind)
    if options is not None:
        options = _with_vector_choice(options, args)
    if options is not None and args.oversample is not None:
        options = replace(options, oversample=_oversample(args, options.index_type))
    if options is not None:
        options = _with_layout(options, args)
    rewrite = None
    if args.reencode:
        from eqsearch.engine.index import reencode_vectors
        from eqsearch.engine.model.encoder import load_encoder, onnx_provider_setting

        encoder = load_encoder(args.bundle, provider=onnx_provider_setting(os.environ))
        from eqsearch.engine.index.mappings import default_element_type

        base = options or admin.default_options()
        element = default_element_type(encoder.similarity, base.index_type)
        options = replace(
            base, dims=encoder.dim, similarity=encoder.similarity, encoder=encoder.identity, element_type=element
        )
        options = _with_vector_choice(options, args)
        rewrite = reencode_vectors(encoder)
        print(f"re-encoding with {encoder.identity} ({encoder.dim}-d, {encoder.similarity})", file=sys.stderr)
    node_encoder = _node_encoder(args)
    if (
        node_encoder is None
        and args.reencode
        and options is not None
        and options.node_vectors
        and not args.no_node_vectors
    ):
        from eqsearch.engine.model.nodes import node_encoder_for, node_output_of  # the new bundle's, same output

        node_encoder = node_encoder_for(encoder, node_output_of(options.node_vectors))
    if args.no_node_vectors and options is not None:
        options = replace(options, node_vectors=None, node_dims=None)
    if node_encoder is not None:
        print(f"writing every equation's node vectors ({node_encoder.identity}, {node_encoder.dim}-d, int8)",  # type: ignore[attr-defined]
              file=sys.stderr)  # fmt: skip
    bar = None if args.quiet else tqdm(unit="doc", desc=f"migrating {args.kind}", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        report = admin.migrate(
            args.kind,
            options,
            batch_size=args.batch_size,
            delete_old=args.delete_old,
            on_progress=progress,
            take_over=args.take_over,
            rewrite=rewrite,
            text_encoder=_text_encoder(args),
            node_encoder=node_encoder,
        )
    finally:
        if bar is not None:
            bar.close()
    print(f"{report.source} -> {report.target}: {report.copied:,} documents copied, counts {report.source_count:,} = "
          f"{report.target_count:,}, alias {admin.alias(args.kind)} swapped in {report.seconds:.1f} s"
          + (f"; {report.source} deleted" if report.old_deleted else ""))  # fmt: skip
    return 0


def _text_encoder(args: argparse.Namespace) -> object | None:
    if not args.context_vectors:
        return None
    if args.kind != "equations":
        args.parser.error("--context-vectors applies to the equations index only")
    from eqsearch.engine.model import load_text_encoder

    return load_text_encoder()


def _delete(args: argparse.Namespace) -> int:
    _admin().delete(args.index, force=args.force)
    print(f"deleted {args.index}")
    return 0


#: The vector index types ``index create`` and ``index migrate`` offer: float HNSW, or HNSW over a quantized copy.
VECTOR_TYPES = ("hnsw", "int8_hnsw", "int4_hnsw", "bbq_hnsw")
OVERSAMPLE_HELP = (
    "with a quantized type: gather this many times k candidates, then rescore them with the float vectors "
    "(Elasticsearch's rescore_vector; 0: its default)"
)


ELEMENT_TYPES = ("float", "byte")
ELEMENT_TYPE_HELP = (
    "equations: how the formula vectors are stored: byte (int8, a quarter of the bytes; the default where they "
    "are compared by cosine with the hnsw type) or float"
)
HNSW_M_HELP = (
    "equations: the links each vector keeps in the HNSW graph, 4-128 (more: better recall among copies of one "
    "formula, more memory and slower writes)"
)


def _with_vector_choice(options: IndexOptions, args: argparse.Namespace) -> IndexOptions:
    """``options`` with the asked ``--index-type``, ``--element-type`` and ``--hnsw-m``; where no element type is
    asked, the kept one, or float where it does not go with the index type (int8 vectors take ``hnsw`` only)."""
    from dataclasses import replace

    from eqsearch.engine.index.mappings import BYTE_INDEX_TYPES

    index_type = args.index_type or options.index_type
    element = args.element_type or options.element_type
    if element == "byte" and (options.similarity != "cosine" or index_type not in BYTE_INDEX_TYPES):
        if args.element_type:
            args.parser.error(
                f"--element-type byte needs cosine similarity and --index-type {' or '.join(BYTE_INDEX_TYPES)} "
                f"(here {options.similarity} and {index_type})"
            )
        element = "float"
    if args.hnsw_m is not None and not 4 <= args.hnsw_m <= 128:
        args.parser.error(f"--hnsw-m must be between 4 and 128, got {args.hnsw_m}")
    return replace(options, index_type=index_type, element_type=element, hnsw_m=args.hnsw_m or options.hnsw_m)


def _oversample(args: argparse.Namespace, index_type: str) -> float:
    """The ``--oversample`` asked for, refused where it means nothing (a float index) or is out of range."""
    from eqsearch.engine.index.mappings import QUANTIZED_TYPES

    value = args.oversample or 0.0
    if value and index_type not in QUANTIZED_TYPES:
        args.parser.error(f"--oversample goes with a quantized --index-type ({', '.join(QUANTIZED_TYPES[:3])})")
    if value and not 1.0 <= value <= 10.0:
        args.parser.error(f"--oversample must lie in 1..10 (or 0 for the default), got {value}")
    return value
