"""Privacy plumbing: randomness, ledger, accountant, bounds (spec 05)."""
