"""`Program.opsets` is read: a file from a torch with a newer aten operator set is loaded with an OpsetWarning."""

import warnings

import pytest
import torch

import pt2format
from pt2format._generated import model as m

import crafting


class Add(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("opsets") / "add.pt2f"
    pt2format.save(torch.export.export(Add(), (torch.randn(3),)), path, progress=False, fsync=False)
    return path


def test_saved_opset_is_this_torchs(saved):
    package, _, _ = crafting.decode_file(saved)
    versions = {o.namespace: o.version for o in package.programs[0].opsets}
    assert versions["aten"] == torch._C._get_max_operator_version()


def test_same_opset_loads_without_warning(saved):
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt2format.OpsetWarning)
        pt2format.load(saved)


def test_newer_aten_opset_warns_and_still_loads(saved, tmp_path):
    newer = torch._C._get_max_operator_version() + 1

    def mutate(p):
        p.programs[0].opsets = [m.Opset(namespace="aten", version=newer)]

    path = crafting.craft(saved, tmp_path / "newer.pt2f", mutate)
    with pytest.warns(pt2format.OpsetWarning, match=f"aten operator version {newer}") as record:
        ep = pt2format.load(path)
    assert record[0].filename == __file__  # reported at the caller's line
    x = torch.randn(3)
    torch.testing.assert_close(ep.module()(x), Add()(x))


def test_load_module_warns_too(saved, tmp_path):
    newer = torch._C._get_max_operator_version() + 1

    def mutate(p):
        p.programs[0].opsets = [m.Opset(namespace="aten", version=newer)]

    path = crafting.craft(saved, tmp_path / "newer.pt2f", mutate)
    with pytest.warns(pt2format.OpsetWarning, match=f"aten operator version {newer}"):
        module = pt2format.load_module(path)
    assert module.pt2format_fallback is None
    x = torch.randn(3)
    torch.testing.assert_close(module(x), Add()(x))
