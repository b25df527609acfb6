"""The numeric modes, and what proves the stored outputs on other machines,
CPUs and PyTorch versions."""
