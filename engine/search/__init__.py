"""eqsearch.engine.search"""
