"""The benchmark collection generator of `benchmarks/scale_corpus.py`: real papers JSONL grown into millions of
distinct formulas with their papers (`generate`), by variants made on the LaTeX and the KaTeX MathML alike
(`variants`, `symbols`) from what one pass over the real papers learns (`pools`); its distributions set beside the
real ones (`compare`) and its LaTeX converted again by KaTeX (`check`)."""
