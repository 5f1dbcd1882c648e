"""The one declaration of every dataset (study.experiment.datasets): the loaders' registry ``DATASETS`` is built from
it and agrees with what the loaders produce, a config accepts exactly its names, and each dataset carries the
"better than random" test error of the NLC paper's figures 7 and 8."""

from __future__ import annotations

import math

import pytest

from archstudy.sampling import SpecError
from archstudy.study.datasets import DATASETS, DatasetInfo, checkerboard, images, load_dataset, waveform
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.experiment.datasets import (
    DATASET_DECLARATIONS, DATASET_NAMES, DECLARED, DatasetDeclaration, better_than_random, chance_rule,
)

GENERATED = [d for d in DATASET_DECLARATIONS if d.source != "files"]
FILES = [d for d in DATASET_DECLARATIONS if d.source == "files"]


def test_the_loaders_registry_is_the_declarations_with_their_loaders_resolved():
    assert tuple(DATASETS) == DATASET_NAMES == tuple(d.name for d in DATASET_DECLARATIONS)
    for d in DATASET_DECLARATIONS:
        info = DATASETS[d.name]
        assert isinstance(info, DatasetInfo) and info.declaration is d
        assert (info.name, info.source, info.summary, info.n_classes, info.d_in, info.sizes, info.options,
                info.defaults, info.reads_root) == (d.name, d.source, d.summary, d.n_classes, d.d_in, d.sizes,
                                                    d.options, d.defaults, d.reads_root)
        module, _, function = d.loader.partition(":")
        assert info.load.__module__ == f"archstudy.study.datasets.{module}" and info.load.__name__ == function


def test_a_config_accepts_exactly_the_declared_names():
    for name in DATASET_NAMES:
        assert StudyConfig(dataset=name, architectures=1).dataset == name
    with pytest.raises(SpecError, match="study.dataset = 'imagenet': must be one of " + ", ".join(
            repr(n) for n in DATASET_NAMES)):
        StudyConfig(dataset="imagenet", architectures=1)


@pytest.mark.parametrize("d", GENERATED, ids=lambda d: d.name)
def test_each_built_in_dataset_loads_as_declared(d: DatasetDeclaration):
    data = load_dataset(d.name, seed=1)
    assert (data.name, data.d_in, data.n_classes) == (d.name, d.d_in, d.n_classes)
    assert "/".join(str(len(s)) for s in data.splits.values()) == d.sizes
    assert set(data.train.y.unique().tolist()) == set(range(d.n_classes))


def test_the_declared_options_are_the_loaders_own():
    blocks = DECLARED["checkerboard"].options["blocks"]
    assert blocks.values == checkerboard.BLOCK_CHOICES and DECLARED["checkerboard"].defaults == {
        "blocks": checkerboard.DEFAULT_BLOCKS}
    assert load_dataset("checkerboard").meta["options"] == {"blocks": checkerboard.DEFAULT_BLOCKS}
    assert [d.name for d in DATASET_DECLARATIONS if d.reads_root] == [waveform.NAME] + [d.name for d in FILES]


def test_the_file_based_sets_agree_with_their_readers():
    """Without the files: the image readers know exactly the declared file-based sets, with their classes, and
    the declared sizes are what the readers' splits give for the official files (60,000 + 10,000 MNIST-like
    images, 50,000 + 10,000 CIFAR10 images)."""
    assert set(images.IMAGE_SETS) == {d.name for d in FILES}
    official = {"idx": (60000, 10000), "cifar": (50000, 10000)}
    for d in FILES:
        image_set = images.IMAGE_SETS[d.name]
        assert d.n_classes == images.N_CLASSES and d.d_in is None  # PCA chooses it
        sizes = images.split_sizes(*official[image_set.format], image_set.val_divisor)
        assert "/".join(map(str, sizes)) == d.sizes, d.name


def test_better_than_random_per_dataset():
    """The NLC paper's thresholds (figures 7 and 8: 80% on CIFAR10, 10 labels; 50% on waveform-noise, 3 labels),
    CIFAR10's for the other 10-label image sets MNIST and Fashion-MNIST, and 90% of the chance error for the
    sets the paper did not study (checkerboard 0.45, digits 0.81) and for undeclared names."""
    expected = {"waveform-noise": 0.5, "checkerboard": 0.45, "digits": 0.81, "mnist": 0.8, "fashion-mnist": 0.8,
                "cifar10": 0.8}
    assert set(expected) == set(DATASET_NAMES)
    for name, value in expected.items():
        assert better_than_random(name) == pytest.approx(value, abs=1e-15), name
        assert better_than_random(name, 7) == better_than_random(name)  # declared: the classes do not matter
        assert DECLARED[name].threshold_why
    assert better_than_random("checkerboard") == chance_rule(2) and better_than_random("digits") == chance_rule(10)
    assert better_than_random("my-data", 4) == pytest.approx(0.675) and better_than_random("my-data", 2) == 0.45
    assert math.isinf(better_than_random("my-data")) and math.isinf(better_than_random("my-data", 1))
