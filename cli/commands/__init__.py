"""eqsearch.commands"""
