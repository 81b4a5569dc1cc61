"""Datasets for PettingLLMs' text environments, normalized into the package's own problem types."""
