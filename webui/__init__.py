"""eqsearch.webui"""
