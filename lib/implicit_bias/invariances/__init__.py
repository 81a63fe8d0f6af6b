"""Training invariances and alignment (Le & Jegelka, ICLR 2022): the code of the part
``chapters/invariances/``.

- :mod:`.invariants` conserved quantities of gradient flow and their exact bookkeeping under GD
- :mod:`.drifts`     relative drifts of tracked GD runs and the fixed-time step-size sweep
- :mod:`.paths`      paths, path enumeration and the tree decomposition
- :mod:`.identities` the decomposition's identities (Euler, Eq. 2, Eq. 44, Lemma 4) against autograd
- :mod:`.margins`    max-margin problems, KKT points and alignment measures
"""
