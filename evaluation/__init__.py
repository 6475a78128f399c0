"""eqsearch.evaluation"""
