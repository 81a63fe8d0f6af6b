"""Deep networks extrapolate predictably (Kang, Setlur, Tomlin & Levine, ICLR 2024): the code of the
part ``chapters/extrapolation/``.

- :mod:`.ocs`          the optimal constant solution, the distance to it, the OOD score, the trainer
- :mod:`.homogeneous`  the theory of Sec. 4.2 on homogeneous networks
- :mod:`.selective`    selective classification with the OCS (Sec. 5)
- :mod:`.attacks`      adversarial perturbations (FGSM)
- :mod:`.ood`          the featuriser of the OOD score, one per profile (random features / ResNet-18)
- :mod:`.tasks`        the data of the part: image sets per profile, shifts at any resolution,
                       imbalanced subsets, the high-dimensional subspace task
"""
