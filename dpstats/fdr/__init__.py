"""Selection with false-discovery-rate control: private Benjamini-Hochberg (``method="bh"``).

The method lives in :mod:`.bh` next to its privacy statement and its FDR statement; the
mechanism (peeling, noisy statistics, the BH step-up) is :mod:`dpstats.mechanisms.private_bh`.
"""
