"""The constituency side: the PCFG and right-branching baselines, benepar-style span attributes."""
