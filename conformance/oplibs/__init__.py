"""Operator libraries a runtime needs to run corpus programs: custom ops and torchbind classes.

These are what a deployment would link or import (kernels), not model code:
the fresh loader process may import them, never the corpus case modules.
"""
