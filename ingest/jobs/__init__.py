"""eqsearch.ingest.jobs"""
