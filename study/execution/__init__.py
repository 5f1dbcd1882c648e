"""How a study is executed: driver, Ray session and engine, work units, store, state, progress and the cluster.

``driver`` (``run_study``, ``resume_study``: check, lock, plan, run, commit), ``ray_session`` (joining a cluster or
an embedded Ray, leaving nothing running), ``engine`` (independent jobs on Ray with bounded retries), ``unit`` (one
architecture: plan, compute, the worker's body, its mirrored checkpoint), ``pruning`` (NLC pruning at launch),
``store``, ``location`` and ``object_lock`` (the study's files, where they live, the driver lock on S3), ``state``
(what is finished, failed, corrupt or left), ``costs`` and ``memory`` (what a study will cost and need, said before
it runs), ``progress`` and ``live`` (the driver's progress line, each running unit's progress record),
``interrupts`` (Ctrl-C and SIGTERM never lost), ``cluster`` and ``cluster_provider`` (the cluster file rehearsed on
this machine).
"""
