"""Privacy plumbing: randomness, ledger, accountant, bounds (the rules: docs/privacy.md)."""
