"""eqsearch.export"""
