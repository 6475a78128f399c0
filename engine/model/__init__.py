"""The formula model at run time: MathML -> graph arrays -> vectors, from a checked model bundle; never torch.

`featurize` turns MathML into `GraphArrays` (`graph`) with a `Vocabulary` (`vocabulary`); `bundle` reads and
writes the bundle's manifest; `encoder` runs the bundle's ONNX model with onnxruntime; `layout` reads a
formula's symbol layout tree and `structure` turns it into search terms for the structural channel; `text` embeds the
words around a formula (and a query's keywords) for the context channel; `nodes` gives one vector per node (the bundle's
node-states sidecar) for the MaxSim rerank; `structure_bag` runs the ``structure-bag`` encoder kind (the structural
terms, hashed, into a learned 64-d vector).
"""

from eqsearch.engine.model.bundle import (
    ENCODER_KINDS,
    GRAPH_INPUTS,
    REQUIRED_KEYS,
    SIMILARITIES,
    BundleError,
    BundleManifest,
    default_bundle_path,
    load_bundle_vocabulary,
    make_manifest,
    read_manifest,
    search_bundle_path,
    shipped_bundle_path,
    vocabulary_sizes,
    write_manifest,
)
from eqsearch.engine.model.encoder import (
    ENCODER_LOADERS,
    ONNX_PROVIDERS,
    Encoder,
    GraphEncoder,
    available_providers,
    load_encoder,
    onnx_provider_setting,
)
from eqsearch.engine.model.featurize import (
    DEFAULT_ATTRIBUTE_KEYS,
    FeatureCounts,
    MathMLError,
    count_features,
    featurize_many,
    featurize_mathml,
)
from eqsearch.engine.model.graph import GraphArrays, concatenate_graphs
from eqsearch.engine.model.nodes import NodeEncoder, load_node_encoder
from eqsearch.engine.model.structure import STRUCTURE_VERSION, FormulaStructure, formula_structure
from eqsearch.engine.model.text import (
    TEXT_MANIFEST_PATH,
    TextEncoder,
    TextEncoderError,
    TextManifest,
    load_text_encoder,
    read_text_manifest,
)
from eqsearch.engine.model.vocabulary import (
    VOCABULARY_FORMAT,
    VOCABULARY_VERSION,
    Vocabulary,
    VocabularyError,
    build_vocabulary,
)

__all__ = [
    "DEFAULT_ATTRIBUTE_KEYS",
    "ENCODER_KINDS",
    "ENCODER_LOADERS",
    "GRAPH_INPUTS",
    "ONNX_PROVIDERS",
    "REQUIRED_KEYS",
    "SIMILARITIES",
    "STRUCTURE_VERSION",
    "TEXT_MANIFEST_PATH",
    "VOCABULARY_FORMAT",
    "VOCABULARY_VERSION",
    "BundleError",
    "BundleManifest",
    "Encoder",
    "FeatureCounts",
    "FormulaStructure",
    "GraphArrays",
    "GraphEncoder",
    "MathMLError",
    "NodeEncoder",
    "TextEncoder",
    "TextEncoderError",
    "TextManifest",
    "Vocabulary",
    "VocabularyError",
    "available_providers",
    "build_vocabulary",
    "concatenate_graphs",
    "count_features",
    "default_bundle_path",
    "featurize_many",
    "featurize_mathml",
    "formula_structure",
    "load_bundle_vocabulary",
    "load_encoder",
    "load_node_encoder",
    "load_text_encoder",
    "make_manifest",
    "onnx_provider_setting",
    "read_manifest",
    "read_text_manifest",
    "search_bundle_path",
    "shipped_bundle_path",
    "vocabulary_sizes",
    "write_manifest",
]
