"""The trainer's speed, measured and projected: ``archstudy bench`` and what it reports.

``bench`` (the stacked step against one run at a time, bare GEMMs, and its compiled forward against the eager
one), ``cases`` (the nets it times, torch-free), ``operators`` (the operators one training step dispatches,
counted), ``profiles`` (the epochs the E.2 schedule runs on real nets, measured) and ``projection`` (paper-scale
hours from measured step times and epochs).
"""
