"""The stacked multi-learning-rate float64 trainer (NLC paper, appendix E.2).

``train_architecture(spec, data, seed, protocol)`` trains all starting learning rates of one
architecture as one stacked model and returns an ``Outcome``. The parts, each a small module:
``schedule`` (the per-run patience / rewind / division state machine, and the steps schedule, each a
``Scheduler`` picked by ``Protocol.schedule``), ``lr_min`` (the smallest starting rate), ``optim`` (stacked SGD,
with momentum, and Adam, each an ``Optimizer`` picked by ``Protocol.optimizer``), ``loss``
(per-run losses, cross-entropy or mse, and errors), ``splits`` (checked data, minibatch orders),
``stack`` (the live stack, its step and the step's folded forward), ``compiled`` (the step's forward
through ``torch.compile``, and the rule that picks one), ``graphed`` (the whole step as a CUDA graph, replayed),
``timing``, ``device`` (the device check of every entry point), ``determinism`` (the CUDA flags a worker sets),
``curves`` (every run's points per epoch, and the NLC trajectory), ``checkpoint`` (the training state, saved and
restored) and ``outcome``.
"""

from .curves import Trajectory
from .outcome import BestRecord, Outcome, RunRecord
from .trainer import TrainingProgress, train_architecture

__all__ = ["BestRecord", "Outcome", "RunRecord", "Trajectory", "TrainingProgress", "train_architecture"]
