"""The writer's torch is compared with this one: a file from a newer torch release or aten operator set loads
with an OpsetWarning, and an operator this torch lacks is a LoadError naming both torch versions."""

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


def _this_release():
    from pt2format.loaders._opsets import release

    return release(torch.__version__)


def _with_writer(saved, tmp_path, version):
    def mutate(p):
        p.producer.torch_version = version

    return crafting.craft(saved, tmp_path / "writer.pt2f", mutate)


def test_newer_torch_release_warns_with_the_same_opset(saved, tmp_path):
    """torch 2.12-2.14 share aten opset 10 while their operators differ: the release decides (issue 25)."""
    major, minor, _ = _this_release()
    newer = f"{major}.{minor + 1}.0"
    path = _with_writer(saved, tmp_path, newer)
    with pytest.warns(pt2format.OpsetWarning) as record:
        ep = pt2format.load(path)
    message = str(record[0].message)
    assert f"torch {newer}" in message and torch.__version__ in message
    assert record[0].filename == __file__
    x = torch.randn(3)
    torch.testing.assert_close(ep.module()(x), Add()(x))
    with pytest.warns(pt2format.OpsetWarning, match=newer):
        pt2format.load_module(path)


@pytest.mark.parametrize("writer", ["older", "same-with-local-tag", "unparsable"])
def test_older_same_or_unknown_torch_does_not_warn(saved, tmp_path, writer):
    major, minor, patch = _this_release()
    version = {"older": f"{major}.{minor - 1}.5" if minor else f"{major - 1}.99.0",
               "same-with-local-tag": f"{major}.{minor}.{patch}+cu999",
               "unparsable": "nightly (built from a fork)"}[writer]
    path = _with_writer(saved, tmp_path, version)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt2format.OpsetWarning)
        pt2format.load(path)


@pytest.mark.parametrize("target", ["torch.ops.aten.pt2f_removed_op.default", "torch.ops.aten.relu.pt2f_renamed"])
def test_missing_aten_operator_names_both_torch_versions(saved, tmp_path, target):
    """Not "import the library that defines it": aten comes with torch, so the message names both torches."""
    writer = "2.99.0"

    def mutate(p):
        p.producer.torch_version = writer
        node = next(n for n in p.programs[0].graph.nodes if "relu" in n.target)
        node.target = target

    path = crafting.craft(saved, tmp_path / "missing.pt2f", mutate)
    for loader in (pt2format.load, pt2format.load_module):
        with pytest.warns(pt2format.OpsetWarning), pytest.raises(pt2format.LoadError) as e:
            loader(path)
        message = str(e.value)
        assert f"this torch ({torch.__version__})" in message and f"written by torch {writer}" in message, message
        assert "import the library" not in message
