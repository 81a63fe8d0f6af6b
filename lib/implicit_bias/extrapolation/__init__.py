"""Deep networks extrapolate predictably (Kang, Setlur, Tomlin & Levine, ICLR 2024): the code of the
part ``chapters/extrapolation/``.

- :mod:`.ocs`          the optimal constant solution, the distance to it, the OOD score, the trainer
- :mod:`.homogeneous`  the theory of Sec. 4.2 on homogeneous networks
- :mod:`.selective`    selective classification with the OCS (Sec. 5)
- :mod:`.attacks`      adversarial perturbations (FGSM)
"""
