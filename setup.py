"""Builds the compiled search core; everything else is in setup.cfg."""
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [
            Extension("spacy_isbn.transitions._arena", ["spacy_isbn/transitions/_arena.pyx"]),
            Extension("spacy_isbn.transitions._arc_eager", ["spacy_isbn/transitions/_arc_eager.pyx"]),
            Extension("spacy_isbn.transitions._arc_eager_oracles",
                      ["spacy_isbn/transitions/_arc_eager_oracles.pyx"]),
            Extension("spacy_isbn.transitions._left_corner",
                      ["spacy_isbn/transitions/_left_corner.pyx"]),
            # -ffast-math only when compiling (see the module's docstring)
            Extension("spacy_isbn.model._kernels", ["spacy_isbn/model/_kernels.pyx"],
                      depends=["spacy_isbn/model/_rows_times.h"],
                      extra_compile_args=["-O3", "-ffast-math"], libraries=["m"]),
            Extension("spacy_isbn.model._trie", ["spacy_isbn/model/_trie.pyx"]),
            Extension("spacy_isbn.search._select", ["spacy_isbn/search/_select.pyx"]),
        ],
        compiler_directives={"language_level": "3"},
    )
)
