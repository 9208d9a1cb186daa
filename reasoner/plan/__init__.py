"""Rules as join plans, as data: the order of a body's atoms, the indexes each needs, the rows the
first iteration reads.

Layer: above `analysis`, `syntax` and `storage`. Used by the kernel's compiled plans, the
executors' and the reads' joins.
"""
