"""Parsing corpora: records read lazily from text, JSONL or CoNLL-U files
(:mod:`.records`), parsed in numbered shards with a manifest so that a run
killed at any moment resumes where it stopped (:mod:`.shards`), written as
CoNLL-U, JSONL or ``.spacy`` (:mod:`.writers`); how fast each engine parses
(:mod:`.speed`, ``parse-benchmark``)."""
