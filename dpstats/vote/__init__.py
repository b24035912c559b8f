"""DPVote: distributed majority-vote sign selection (Liu, Tu, Mao and Chen 2022)."""
