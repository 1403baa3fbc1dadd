"""Craft hostile files from real ones: decode a saved program, change the tree, write it back unvalidated.

The writer and the exporter refuse what the readers refuse, so an attacker's
file is built here the way an attacker would: straight from the schema
objects, with the original data bytes and checksums, sealed so that only the
change itself can be what a reader objects to.
"""

from __future__ import annotations

import copy

from pt2format import _codecs
from pt2format._container.header import ENCODING_NAMES
from pt2format._container.reader import ContainerFile

import pt2f_samples


def decode_file(path):
    """(package tree, list of storage payload bytes, encoding name) of a single-file `.pt2f`."""
    container = ContainerFile(path)
    try:
        encoding = ENCODING_NAMES[container.header.sections[0].encoding]
        package = _codecs.decode(container.section_view(0), encoding)
        payloads = []
        for st in package.storages:
            seg = package.segments[st.segment]
            view = container.section_view(seg.section)
            payloads.append(bytes(view[st.offset:st.offset + st.size]))
        return package, payloads, encoding
    finally:
        container.close()


def craft(src, dst, mutate, *, encoding=None):
    """Write `dst`: `src` with `mutate(package)` applied to a copy of its tree (nothing validated)."""
    package, payloads, enc = decode_file(src)
    package = copy.deepcopy(package)
    mutate(package)
    pt2f_samples.write_raw(dst, package, payloads, encoding=encoding or enc)
    return dst


def nodes(package):
    """Every node of every graph (subgraphs included), depth first."""
    from pt2format._generated import model as m

    out = []

    def walk(graph):
        for node in graph.nodes:
            out.append(node)
            for arg in node.inputs:
                v = arg.value
                if isinstance(v, m.GraphArgument) and v.graph is not None:
                    walk(v.graph)

    for prog in package.programs:
        walk(prog.graph)
    return out
