"""eqsearch.evaluation: torch-free evaluation of formula retrieval and of the encoder.

Metrics (KDD'20 and ARQMath's prime measures), TREC files, the labelled equation set, the keyword study of KDD'20
§6.3 and the bag-of-words baseline. Runs on the runtime install (numpy, KaTeX, onnxruntime); `eqsearch.training`
uses its metrics.
"""
