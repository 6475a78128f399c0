"""The commands of the `eqsearch` console script: one module per top-level command, each with `register`."""
