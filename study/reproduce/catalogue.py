"""The five papers' experiments that ``archstudy reproduce`` does not offer, each with the reason, so that
``reproduce --list`` and the index page of ``reproduce all`` show the whole map of the papers (the offered ones are
``reproduction.REPRODUCTIONS``).

Read from each paper's figures and tables: the NLC paper (Philipp and Carbonell), the variability paper
(*Variability of Neural Networks and Han-Layer*), Yu and Zhang (*Householder-Absolute Neural Layers*), Chen and Ge
(*Neural Characteristic Activation Value Analysis*) and Demystifying ResNet (Li, Jiao, Han and Weissman).
Pictures that only illustrate a definition or a function (no measured claim) are listed as such.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .reproduction import LIST_WIDTH, listing

NLC = "Philipp and Carbonell, *The Nonlinearity Coefficient*"
VARIABILITY = "the variability paper (*Variability of Neural Networks and Han-Layer*)"
YZ = "Yu and Zhang, *Householder-Absolute Neural Layers*"
GMP = "Chen and Ge, *Neural Characteristic Activation Value Analysis*"
RESNET = "Li, Jiao, Han and Weissman, *Demystifying ResNet*"

IMAGENET = "ImageNet / ImageNet32 are not shipped and the nets take GPU-days"
UCI = "the UCI / OpenML regression sets are not shipped (nothing is downloaded at run time)"


@dataclass(frozen=True)
class NotOffered:
    paper: str
    source: str  # the table or figure
    what: str  # the experiment in a few words
    reason: str  # why it is not run here

    def line(self, width: int = LIST_WIDTH) -> str:
        """Its entry in ``archstudy reproduce --list``, wrapped to ``width`` columns: paper and source, what, why."""
        return listing(f"not offered: {self.paper}, {self.source}", [self.what, f"why not: {self.reason}"], width)

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


NOT_OFFERED: tuple[NotOffered, ...] = (
    # the NLC paper
    NotOffered(
        NLC,
        "figures 3, 4, 7, 8, 9, 10 (sections 5-6, E.2, E.3)",
        "the full study: test error, depth, learning rates and error-preserving perturbations of 250 "
        "architectures per dataset at 1,000,000 parameters",
        "that is the pipeline's study itself (`archstudy run --preset paper`, then `archstudy report`), "
        "GPU-days at the paper's sizes; nlc-figure2 runs a small one",
    ),
    NotOffered(
        NLC,
        "table 2's discs, figures 5 and 6",
        "pictures of the functions batchnorm-ReLU nets compute and of the NLC in 1-D",
        "illustrations, no measured claim",
    ),
    # the variability paper
    NotOffered(
        VARIABILITY,
        "figure 1, figures 12-15",
        "landscapes of |F_L|^2 of sigmoid, ReLU, ABS and Han nets",
        "illustrations; their claim (C2C with depth) is checked by yz-variability-depth",
    ),
    NotOffered(
        VARIABILITY,
        "table 2, figure 9 (D.4, D.5)",
        "Han-Mixers against MLP-Mixers on CIFAR10, CIFAR100 and STL10",
        "MLP-Mixers are not a family of the space and take GPU-days; STL10 is not shipped",
    ),
    NotOffered(VARIABILITY, "table 3", "Han-Mixers against MLP-Mixers on ImageNet32", IMAGENET),
    NotOffered(VARIABILITY, "table 8, figure 11", "HanNet against FCNet regression on Elevators and Cal Housing", UCI),
    # Yu and Zhang
    NotOffered(YZ, "figure 2", "landscapes of three nets of 70 hidden layers", "illustration, no measured claim"),
    NotOffered(YZ, "table 5, figure 6", "HanNet against FCNet regression on Elevators and Cal Housing", UCI),
    NotOffered(
        YZ,
        "table 6",
        "convolutional nets with Han-layers on CIFAR-10",
        "convolutional nets are not in the space; GPU-days",
    ),
    # Chen and Ge
    NotOffered(
        GMP,
        "figures 1, 2(a)-(b), 5, 6",
        "characteristic activation boundaries of one ReLU unit under a perturbation (figure 2(c)'s measured claim, "
        "the size of the location steps, is checked by gmp-banana)",
        "illustrations of the analysis (section 3), no measured claim",
    ),
    NotOffered(GMP, "table 1", "ResNet-50 on ImageNet under four parameterizations", IMAGENET),
    NotOffered(GMP, "table 2, figure 4", "VGG-6 on ImageNet32 under four parameterizations", IMAGENET),
    NotOffered(GMP, "table 3", "MLP-1 regression on six UCI benchmarks under four parameterizations", UCI),
    # Demystifying ResNet
    NotOffered(
        RESNET,
        "figure 2",
        "Frobenius norms of CIFAR pre-ResNets during training",
        "CIFAR ResNets are convolutional (not in the space) and take GPU-hours",
    ),
    NotOffered(
        RESNET,
        "figure 9",
        "CIFAR-10 ResNets of different depths and shortcut depths",
        "convolutional ResNets are not in the space; GPU-days",
    ),
)
