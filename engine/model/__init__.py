"""eqsearch.engine.model"""
