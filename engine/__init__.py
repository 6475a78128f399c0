"""eqsearch.engine"""
