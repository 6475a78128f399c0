"""eqsearch.engine.index"""
