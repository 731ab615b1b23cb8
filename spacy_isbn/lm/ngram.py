"""The n-gram baseline: a modified Kneser-Ney model built by KenLM's
``lmplz`` and scored by its ``query``, over the generative ISBN's own
vocabulary, so the two perplexities are over the same events: a word the
ISBN knows is its lowercased form, any other word the ISBN's unknown class
for its spelling (``<unk0>`` .. ``<unk7>``), and every sentence ends with an
end-of-sentence event.

KenLM is not a Python dependency: build ``lmplz`` and ``query`` once
(``spacy project run kenlm``, see the README) and point ``--kenlm`` at them."""
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

from ..errors import UserError
from ..transitions.lexicon import Lexicon, signature

_TOTAL = re.compile(r"Total: (\S+) OOV: (\d+)")


def lm_tokens(words: Sequence[str], lexicon: Lexicon) -> List[str]:
    """The vocabulary both models are measured on (see the module)."""
    known = lexicon.tags_of_form
    out = []
    for word in words:
        form = word.lower()
        out.append(form if form in known else f"<unk{signature(word)}>")
    return out


def kenlm_binaries(directory: Optional[Path]) -> Path:
    """The directory holding ``lmplz`` and ``query``: ``directory``, else
    where ``lmplz`` is on the PATH."""
    if directory is None:
        found = shutil.which("lmplz")
        if found is None:
            raise UserError("KenLM's lmplz is not on the PATH: build it with "
                            "`spacy project run kenlm` and give --kenlm tools/kenlm/bin")
        directory = Path(found).parent
    for name in ("lmplz", "query"):
        if not (Path(directory) / name).exists():
            raise UserError(f"KenLM's {name} not found in {directory}: build it with "
                            "`spacy project run kenlm`")
    return Path(directory)


class KenLM:
    """A KenLM model trained on tokenized sentences (ARPA in a temporary
    directory, removed by :meth:`close`)."""

    def __init__(self, sentences: Iterable[Sequence[str]], order: int, binaries: Path,
                 memory: str = "20%"):
        self.binaries, self.order = binaries, order
        self._dir = tempfile.TemporaryDirectory(prefix="spacy-isbn-kenlm-")
        self.arpa = Path(self._dir.name) / "model.arpa"
        text = "".join(" ".join(s) + "\n" for s in sentences)
        with open(self.arpa, "wb") as out:
            result = subprocess.run(
                [str(binaries / "lmplz"), "-o", str(order), "-S", memory, "-T", self._dir.name,
                 "--discount_fallback"],
                input=text.encode("utf-8"), stdout=out, stderr=subprocess.PIPE)
        if result.returncode:
            raise UserError(f"lmplz failed: {result.stderr.decode('utf-8', 'replace')[-500:]}")

    def sentence_log10(self, sentences: Sequence[Sequence[str]]) -> List[float]:
        """log10 P(sentence, end of sentence) of each sentence."""
        text = "".join(" ".join(s) + "\n" for s in sentences)
        result = subprocess.run([str(self.binaries / "query"), "-v", "sentence", str(self.arpa)],
                                input=text.encode("utf-8"), capture_output=True)
        if result.returncode:
            raise UserError(f"query failed: {result.stderr.decode('utf-8', 'replace')[-500:]}")
        totals = [float(m.group(1)) for m in _TOTAL.finditer(result.stdout.decode("utf-8"))]
        if len(totals) != len(sentences):
            raise UserError(f"query scored {len(totals)} of {len(sentences)} sentences")
        return totals

    def close(self) -> None:
        self._dir.cleanup()


def bits_of_log10(values: Iterable[float]) -> float:
    """Total bits of log10 probabilities."""
    return -sum(values) / math.log10(2.0)
