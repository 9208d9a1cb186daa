"""Reads of the committed state: queries, proofs (explain and why-not), pages of a relation,
relations as they were at a past epoch.

Layer: above `executors`, beside `elastic`. Used by the facade and, through the public face,
the service.
"""
