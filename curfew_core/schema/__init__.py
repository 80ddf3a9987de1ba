"""Declared wire shapes, outside every door: what Curfew accepts, said once.

The doors (api/, web/, ...) parse with these and answer in their own shape;
none of them imports another door to reuse a parser.
"""
