"""The names of the built-in datasets, torch-free: what a study config accepts as its ``dataset``.

The loaders, with what each dataset is, live in ``study.datasets`` (``DATASETS``, keyed by exactly these
names, in this order; asserted there): a config is built and checked without importing torch.
"""

DATASET_NAMES = ("waveform-noise", "checkerboard", "digits", "mnist", "fashion-mnist", "cifar10")
