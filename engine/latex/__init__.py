"""eqsearch.engine.latex"""
