"""The float64 networks: layer families, activations, initialization and the network builder."""
