"""The scripts that make the stored runs and baselines in ``book/data/``."""
