"""Domain wiring: the Overcooked-AI dynamics, observer, partners and human data (the core imports none of it)."""
