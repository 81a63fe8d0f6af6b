"""Training invariances and alignment (Le & Jegelka, ICLR 2022): the code of the part
``chapters/invariances/``.

- :mod:`.invariants` conserved quantities of gradient flow and their exact bookkeeping under GD
- :mod:`.paths`      paths, path enumeration and the tree decomposition
- :mod:`.margins`    max-margin problems, KKT points and alignment measures
"""
