"""Screening and rank-based selection for p >> n: DP-SIS, DP-Kendall, Samp-Agg."""
