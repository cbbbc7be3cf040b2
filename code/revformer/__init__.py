"""revformer: a two-layer decoder-only Transformer, written by hand, that reverses six digits.

Modules, one concept each: ``config``, ``data``, ``attention``, ``model``,
``train``, ``generate`` (with the metrics), ``analysis``, ``experiment`` (the
cached runner), ``artifacts``, ``plots`` and ``cli``.
"""
__version__ = "0.5.0"
