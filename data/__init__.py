"""Example datasets shipped with dpstats (installed as ``dpstats._data``; see CODEBOOK.md)."""
