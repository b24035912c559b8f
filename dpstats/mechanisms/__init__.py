"""Reusable mechanisms, each next to its privacy statement."""
