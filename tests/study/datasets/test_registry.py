"""The one declaration of every dataset (study.experiment.datasets): ``DATASETS`` is those declarations, every one
has exactly one loader registered by its loader module (study.datasets.loaders) and agrees with what it loads, a
config accepts exactly its names, and each dataset carries the "better than random" test error of the NLC paper's
figures 7 and 8."""

from __future__ import annotations

import math

import pytest

from archstudy.sampling import SpecError
from archstudy.study.datasets import DATASETS, checkerboard, images, load_dataset, loaders, status, waveform
from archstudy.study.experiment.config import StudyConfig
from archstudy.study.experiment.datasets import (
    DATASET_DECLARATIONS,
    DATASET_NAMES,
    DECLARED,
    DatasetDeclaration,
    better_than_random,
    chance_rule,
)

GENERATED = [d for d in DATASET_DECLARATIONS if d.source != "files"]
FILES = [d for d in DATASET_DECLARATIONS if d.source == "files"]


def test_datasets_are_the_declarations_and_every_one_has_exactly_one_loader():
    """No copy of a declaration: ``DATASETS`` is the declared mapping itself; each declared name has one loader,
    registered by a module of the package, and a loader module finds files exactly where the dataset reads
    them (``reads_root``: waveform-noise's optional file, the image sets')."""
    assert DATASETS is DECLARED and tuple(DATASETS) == DATASET_NAMES == tuple(d.name for d in DATASET_DECLARATIONS)
    assert set(loaders.LOADERS) == set(DATASET_NAMES)
    expected = {"waveform-noise": waveform.load, "checkerboard": checkerboard.load}
    for name, loader in loaders.LOADERS.items():
        if name in expected:
            assert loader.load is expected[name]
        if name in images.IMAGE_SETS:
            assert loader.load.func is images.load and loader.load.args == (name,)
        assert (loader.find is not None) == DECLARED[name].reads_root, name


def test_a_loader_for_an_undeclared_name_or_a_second_loader_is_refused(monkeypatch):
    before = dict(loaders.LOADERS)
    with pytest.raises(
        LookupError, match="registers a loader for 'imagenet', which study.experiment.datasets does not declare"
    ):
        loaders.register("imagenet", checkerboard.load)
    with pytest.raises(
        ValueError,
        match="dataset loader 'digits' is declared twice: in archstudy.study.datasets.digits and in "
        "archstudy.study.datasets.checkerboard",
    ):
        loaders.register("digits", checkerboard.load)
    assert dict(loaders.LOADERS) == before  # neither was registered
    monkeypatch.delitem(loaders.LOADERS, "digits")
    with pytest.raises(LookupError, match=r"registers a loader for \['digits'\]"):
        loaders.check_complete()


def test_status_is_the_loaders_find_or_the_declared_summary(tmp_path):
    assert status("digits") == (True, DECLARED["digits"].summary)
    assert status("waveform-noise") == (True, DECLARED["waveform-noise"].summary)  # generated without a root
    assert status("waveform-noise", tmp_path) == (
        False,
        f"expected {waveform.FILE} in {tmp_path} (without a root: generated)",
    )
    (tmp_path / waveform.FILE).write_text("")
    assert status("waveform-noise", tmp_path) == (True, f"found {tmp_path / waveform.FILE}")
    found, where = status("cifar10", tmp_path)
    assert not found and str(tmp_path) in where


def test_a_config_accepts_exactly_the_declared_names():
    for name in DATASET_NAMES:
        assert StudyConfig(dataset=name, architectures=1).dataset == name
    with pytest.raises(
        SpecError, match="study.dataset = 'imagenet': must be one of " + ", ".join(repr(n) for n in DATASET_NAMES)
    ):
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
        "blocks": checkerboard.DEFAULT_BLOCKS
    }
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
    expected = {
        "waveform-noise": 0.5,
        "checkerboard": 0.45,
        "digits": 0.81,
        "mnist": 0.8,
        "fashion-mnist": 0.8,
        "cifar10": 0.8,
    }
    assert set(expected) == set(DATASET_NAMES)
    for name, value in expected.items():
        assert better_than_random(name) == pytest.approx(value, abs=1e-15), name
        assert better_than_random(name, 7) == better_than_random(name)  # declared: the classes do not matter
        assert DECLARED[name].threshold_why
    assert better_than_random("checkerboard") == chance_rule(2) and better_than_random("digits") == chance_rule(10)
    assert better_than_random("my-data", 4) == pytest.approx(0.675) and better_than_random("my-data", 2) == 0.45
    assert math.isinf(better_than_random("my-data")) and math.isinf(better_than_random("my-data", 1))
