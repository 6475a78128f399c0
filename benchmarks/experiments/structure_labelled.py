"""The labelled equation set (`eqsearch evaluate labelled`'s figures) for an encoder bundle of any kind beside the
shipped graph network's rows (`eqsearch evaluate labelled --bundle` scores one bundle of any kind): the equations that
`evaluation.labelled.encode_labelled_set` keeps with the shipped graph bundle (and its bag of words), converted again
with KaTeX and encoded with the given bundle (cosine of the stored vectors).

    python benchmarks/experiments/structure_labelled.py --bundle BUNDLE [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from eqsearch.engine.latex.converter import KatexConverter
from eqsearch.engine.model import default_bundle_path, load_encoder
from eqsearch.evaluation.labelled import encode_labelled_set, retrieval_figures
from eqsearch.evaluation.labelled_set import read_labelled_set
from eqsearch.evaluation.metrics import cosine_matrix


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--json")
    args = parser.parse_args()
    equations = read_labelled_set()
    encoder = load_encoder(args.bundle)
    with KatexConverter() as converter:
        encoded = encode_labelled_set(equations, load_encoder(default_bundle_path()), converter)
        results = converter.convert_many([(e.latex, "equation") for e in encoded.equations])
    vectors = encoder.encode([r.mathml for r in results])
    matrices = {
        f"{encoder.kind} (cosine)": cosine_matrix(vectors, vectors),
        "shipped kdd20-gcn, as served": encoded.similarity["model"],
        "bag of words (§6.3), cosine": encoded.similarity["bag_of_words"],
    }
    figures = {name: asdict(retrieval_figures(m, encoded.ids, encoded.labels)) for name, m in matrices.items()}
    print(f"{len(encoded.equations)} equations, {len(set(encoded.labels))} categories")
    print("| representation | 1-NN accuracy | ranking | P@5 | MAP | uMAP |\n|---|---|---|---|---|---|")
    for name, f in figures.items():
        row = [100 * f["accuracy"], 100 * f["ranking"], 100 * f["p_at_5"], 100 * f["map"], f["umap"]]
        print(f"| {name} | " + " | ".join(f"{v:.1f}" if i < 4 else f"{v:.2f}" for i, v in enumerate(row)) + " |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=1)


if __name__ == "__main__":
    main()
