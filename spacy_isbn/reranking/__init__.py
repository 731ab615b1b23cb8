"""The discriminative reranker: features of k-best candidates and a list-wise log-linear model over them."""
