"""The loader's name and text checks take strings the decoder already accepted by a set lookup: the shortcut
never admits what the full check refuses (Python's own identifier rule is the independent reference)."""

from __future__ import annotations

import io
import keyword

import pytest
import torch

import pt2format
from pt2format._strings import CHECKERS
from pt2format.errors import LoadError
from pt2format.loaders._names import check_identifier, check_text


class _Named(torch.nn.Module):
    def forward(self, x, y):
        a = torch.relu(x) + y
        return torch.tanh(a * 2.0), a.sum(dim=0, keepdim=True)


def _read_a_file():
    ep = torch.export.export(_Named(), (torch.randn(3, 4), torch.randn(3, 4)))
    buf = io.BytesIO()
    pt2format.save(ep, buf)
    return pt2format.load(buf.getvalue())


def test_every_accepted_local_name_and_identifier_is_a_python_identifier():
    _read_a_file()
    accepted = CHECKERS["local_name"].accepted | CHECKERS["identifier"].accepted
    assert accepted, "decoding a program accepts its node names"
    for s in accepted:
        if s.isascii():
            assert s.isidentifier() and not keyword.iskeyword(s), s
        else:
            assert s.isidentifier(), s
        assert check_identifier(s, "p") is s


@pytest.mark.parametrize("name", ["class", "a b", "1x", "x\n", "", "x'y", None, 3])
def test_check_identifier_still_refuses_after_a_decode(name):
    _read_a_file()
    with pytest.raises(LoadError) as e:
        check_identifier(name, "nodes[0]", ".name")
    assert e.value.path.endswith("nodes[0].name")


def test_check_text_refuses_other_line_breaks_and_remembers_only_what_passed():
    ok = 'File "m.py", line 1, in forward\n    y = x + 1'
    assert check_text(ok, "md") is ok
    assert check_text(ok, "md") is ok  # the second time from the set of passed texts
    for bad in ("a\rb", "a\u2028b", ok + "\x0b"):
        for _ in range(2):  # a refused text is never remembered
            with pytest.raises(LoadError) as e:
                check_text(bad, "nodes[1].metadata", ".stack_trace")
            assert e.value.path.endswith("nodes[1].metadata.stack_trace")
