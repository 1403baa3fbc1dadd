"""The `.pt2f` container: header and section table, padding, atomic writer, mmap reader.

`header.py` is the only code that packs or unpacks the header bytes and
`align.py` the only code that does padding math (SPEC.md §1-3).
"""
