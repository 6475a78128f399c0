"""eqsearch.ingest"""
