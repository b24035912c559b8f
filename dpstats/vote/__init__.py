"""DPVote: distributed majority-vote sign selection (spec 04)."""
