"""``archstudy datasets``: what data this machine has, one dataset per line.

For each dataset: whether it can be loaded here, where it comes from (generated, bundled, or the folder its
files were found in) or, when missing, the files it expects and the directories it searched; its input
dimension, classes and train/val/test sizes. ``--root DIR`` looks for the file-based sets (and a user's
``waveform-+noise.data``) in DIR, as ``archstudy run --root DIR`` would.
"""

from __future__ import annotations

import sys
from pathlib import Path

from archstudy.sampling import SpecError

from .commands import subcommand


@subcommand("datasets", order=100, activity="looking for the datasets")
def register(sub) -> None:
    p = sub.add_parser(
        "datasets",
        help="list the datasets available here and where each expects its files",
        description="List every dataset: available or missing on this machine, where its data "
        "comes from or which files it expects in which directories, input dimension, classes, "
        "train/val/test sizes. Nothing is downloaded, ever.",
    )
    p.add_argument(
        "--root",
        default=None,
        help="directory holding your data files (mnist, cifar10, "
        "waveform-+noise.data); fashion-mnist defaults to /usr/share/datasets/fashion-mnist",
    )
    p.set_defaults(func=command)


def on_the_command_line(text: str) -> str:
    """A dataset message as a user of the command line reads it: the loaders name the data's directory as the
    Python keyword (``load_dataset(..., root=DIR)``), the commands take it as ``--root DIR``."""
    return text.replace("root=DIR", "--root DIR")


def rows(root=None) -> list[tuple[str, ...]]:
    from ..datasets import DATASETS  # torch: loaded by this command only, not by every command's parser
    from ..datasets.loaders import status

    out: list[tuple[str, ...]] = []
    for name, info in DATASETS.items():
        available, where = status(name, root if info.reads_root else None)
        d_in = str(info.d_in) if info.d_in is not None else "PCA"
        out.append(
            (
                name,
                "yes" if available else "no",
                info.source,
                d_in,
                str(info.n_classes),
                info.sizes,
                on_the_command_line(where),
            )
        )
    return out


def command(args) -> int:
    if args.root is not None and not Path(args.root).expanduser().is_dir():
        what = "is not a directory" if Path(args.root).expanduser().exists() else "does not exist"
        raise SpecError("datasets", "root", args.root, f"must be a directory holding your data files; it {what}")
    from ..experiment.terminal import phase

    # The loaders import torch (seconds on a busy machine): said first, on stderr, once the checks have passed.
    with phase(sys.stderr, "looking for each dataset's files (loading torch)"):
        from ..datasets import CACHE_ENV
        from ..datasets.cache import cache_dir

        header = ("dataset", "here", "source", "d_in", "classes", "train/val/test", "where")
        table = [header] + rows(args.root)
    widths = [max(len(r[i]) for r in table) for i in range(len(header) - 1)]
    for r in table:
        sys.stdout.write("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] + "\n")
    sys.stdout.write(
        f"preprocessed image sets are cached in {cache_dir()} (set {CACHE_ENV} or cache_dir= to move it)\n"
    )
    return 0
