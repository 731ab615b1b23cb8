"""The generative ISBN as a language model: word surprisal in lm-zoo's TSV
format (:mod:`.surprisal_tsv`), a Kneser-Ney n-gram baseline over the same
vocabulary (:mod:`.ngram`) and the perplexity comparison (:mod:`.perplexity`)."""
