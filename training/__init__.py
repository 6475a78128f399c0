"""eqsearch.training"""
