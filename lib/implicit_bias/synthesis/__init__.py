"""The synthesis (``chapters/synthesis/``): one family of MLPs read through the lenses of every
part. It has no paper; it is the only package allowed to import several parts.

- :mod:`.arms`  the three arms of the common networks (small initialisation, L2-regularised,
  standard initialisation), trained in batches, shared by the pages that read them
"""
