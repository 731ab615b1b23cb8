"""The generative ISBN as a language model: the spelling model that opens its
vocabulary (:mod:`.spelling`), word surprisal in lm-zoo's TSV format
(:mod:`.surprisal_tsv`), a Kneser-Ney n-gram baseline over the same
vocabulary (:mod:`.ngram`) and the perplexity comparison (:mod:`.perplexity`)."""
