"""Code generated from schema/pt2format.fbs by schema/regen.py; see model.py."""
