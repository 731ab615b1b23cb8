"""The training step both ISBN pipes share: gold derivations in batches of
about ``max_batch_words`` words, one forward and backward pass each."""
from typing import Callable, Dict, List, Optional

from ..model.derivation import Derivation, DerivationBatch, word_batches


def update_on_derivations(pipe, examples: List, derivations: List[Derivation], *, sgd=None,
                          losses: Optional[Dict[str, float]] = None,
                          prepare: Optional[Callable[[DerivationBatch], None]] = None,
                          docs: Optional[List] = None) -> Dict[str, float]:
    """``TrainablePipe.update`` of ``pipe`` on the examples' gold
    ``derivations``; ``prepare`` may change a batch's arrays in place before
    its forward pass (the parser's word dropout).  With ``docs`` (the
    conditional model) the model reads their token vectors: all batches go
    through one forward pass, so tok2vec runs and backpropagates once."""
    if losses is None:
        losses = {}
    losses.setdefault(pipe.name, 0.0)
    if not derivations:
        return losses
    batches, n_words = [], []
    for batch, words in word_batches(derivations, pipe.cfg["max_batch_words"]):
        arrays = DerivationBatch.from_derivations(batch)
        if prepare is not None:
            prepare(arrays)
        batches.append(arrays)
        n_words.append(words)
    if docs is None:
        for arrays, words in zip(batches, n_words):
            ll, backprop = pipe.model.begin_update(arrays)
            loss, d_ll = pipe.get_loss(examples, (ll, words))
            backprop(d_ll)
            losses[pipe.name] += loss
    else:
        lls, backprop = pipe.model.begin_update((docs, batches))
        d_lls = []
        for ll, words in zip(lls, n_words):
            loss, d_ll = pipe.get_loss(examples, (ll, words))
            d_lls.append(d_ll)
            losses[pipe.name] += loss
        backprop(d_lls)
    if sgd is not None:
        pipe.finish_update(sgd)
    return losses
