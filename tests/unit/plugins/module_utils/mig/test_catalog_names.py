"""Every name people write for a GPU resolves to one catalog entry; an unknown one gets candidates."""

from __future__ import annotations

import pytest

from ansible_collections.gpupool.core.plugins.module_utils.mig import catalog as cat


@pytest.mark.parametrize(
    "name, key",
    [
        # catalog keys, any case and punctuation
        ("A100-40GB", "A100-40GB"),
        ("a100 40gb", "A100-40GB"),
        ("h200_141gb", "H200-141GB"),
        # MIG user guide designations
        ("A100-SXM4-40GB", "A100-40GB"),
        ("A100-PCIE-40GB", "A100-40GB"),
        ("A100-SXM4-80GB", "A100-80GB"),
        ("A100-PCIE-80GB", "A100-80GB"),
        ("H100-SXM5-80GB", "H100-80GB"),
        ("H100-PCIE-80GB", "H100-80GB"),
        ("H100-SXM5-94GB", "H100-NVL-94GB"),
        ("H100 on GH200", "H100-96GB"),
        ("H200-SXM5-141GB", "H200-141GB"),
        ("H200 NVL", "H200-141GB"),
        ("A30-24GB", "A30"),
        ("B200-180GB", "B200"),
        ("GB200-186GB", "GB200"),
        ("RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
        # what nvidia-smi / NVML print (and the DRA driver publishes as productName)
        ("NVIDIA H100 80GB HBM3", "H100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("Tesla T4", "T4"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB"),
        ("NVIDIA H100 NVL", "H100-NVL-94GB"),
        ("NVIDIA GH200 480GB", "H100-96GB"),
        ("NVIDIA GB300", "GB300"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000"),
        # GFD's nvidia.com/gpu.product label (spaces as dashes)
        ("NVIDIA-H100-80GB-HBM3", "H100-80GB"),
        ("Tesla-T4", "T4"),
        # mig-parted's comments: A800/H800/H20/PG506
        ("A800-80GB", "A100-80GB"),
        ("H800-80GB", "H100-80GB"),
        ("H20", "H100-96GB"),
        ("PG506-96GB", "H100-96GB"),
        ("T4", "T4"),
        ("B300", "B300"),
        ("GB300", "GB300"),
    ],
)
def test_names_resolve(name, key):
    assert cat.resolve_gpu(name).key == key
    assert cat.find_gpu(name).key == key


def test_no_spelling_means_two_gpus():
    assert [(spelling, sorted(keys)) for spelling, keys in cat._NAMES.items() if len(keys) > 1] == []


@pytest.mark.parametrize(
    "name, candidates",
    [
        ("A100", ["A100-40GB", "A100-80GB"]),
        ("H100", ["H100-80GB", "H100-NVL-94GB", "H100-96GB"]),
        ("GH200", ["GH200-144GB", "H100-96GB"]),
        ("RTX 6000", ["RTX-PRO-6000"]),
    ],
)
def test_ambiguous_or_unknown_names_get_candidates(name, candidates):
    assert cat.find_gpu(name) is None
    with pytest.raises(cat.UnknownGpu) as err:
        cat.resolve_gpu(name)
    assert err.value.candidates == candidates
    assert "did you mean" in str(err.value) and candidates[0] in str(err.value)


def test_unknown_name_without_candidates_lists_the_catalog():
    with pytest.raises(KeyError) as err:
        cat.get_gpu("Radeon Instinct")
    sentence, full_list = str(err.value).split("\n", 1)
    # the closest three in the sentence, every key on the lines below it, none longer than 120 characters
    assert sentence == "unknown GPU model 'Radeon Instinct'; catalog keys: RTX-PRO-6000, T4, A10 and 16 more below"
    assert full_list.startswith("catalog keys (19, closest first): RTX-PRO-6000, T4, A10, ")
    assert sorted(full_list.split(": ", 1)[1].replace("\n", " ").split(", ")) == cat.gpu_keys()
    assert max(len(line) for line in full_list.splitlines()) <= 120


def test_observed_names_are_product_names():
    for gpu in cat.CATALOG.values():
        assert set(gpu.observed_names) <= set(gpu.product_names), gpu.key
    assert "NVIDIA GH200 480GB" in cat.get_gpu("H100-96GB").observed_names


@pytest.mark.parametrize(
    "key, kinds",
    [
        ("RTX-PRO-6000", {"", "+me", "+gfx", "+me.all", "-me"}),
        ("A30", {"", "+me"}),
        ("H100-80GB", {"", "+me"}),
    ],
)
def test_profile_kinds(key, kinds):
    assert {cat.profile_kind(p) for p in cat.get_gpu(key).mig.profiles} == kinds
