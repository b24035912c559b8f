"""Screening and rank-based selection for p >> n (spec 03): DP-SIS, DP-Kendall, Samp-Agg."""
