"""eqsearch.engine.es"""
