"""Conformance suite: a corpus of torch.export programs, a fidelity runner, golden files.

Importing this package imports nothing else: the fresh-process loader
(`conformance._child`) must run without the corpus (producer code).
"""
