"""The rehearsal's node provider (``study.execution.cluster``): Ray's fake multi-node provider, where a lost node
is gone.

On AWS a reclaimed spot instance disappears from EC2's list of instances, so the autoscaler stops counting it
and starts another for the waiting work. Ray 2.58's ``FakeMultiNodeProvider`` forgets a node only when the
autoscaler terminates it, and the autoscaler never does for a node whose raylet died: once the GCS has
dropped the node, the autoscaler's load metrics prune its address, and its liveness check
(``terminate_unhealthy_nodes``) then fakes a heartbeat for an address it does not know, every round. The
dead node stays "active", counting against ``max_workers`` for good (seen in the monitor log: a node killed
at 18:12 was still active at 18:38). This provider lists a node only while its raylet process is alive, as
EC2 lists an instance only while it exists; it ends whatever is left of a node it drops.

The autoscaler's monitor imports it by name (``provider.type: external``, ``provider.module``), in the
rehearsal's head, started from this package's Python.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

from ray._private import ray_constants
from ray.autoscaler._private.fake_multi_node.node_provider import FakeMultiNodeProvider

if TYPE_CHECKING:
    from ray._private.node import Node


log = logging.getLogger(__name__)


class RehearsalNodeProvider(FakeMultiNodeProvider):
    def _forget_lost(self) -> None:
        """Forget the nodes whose raylet has died (killed, as by `archstudy cluster lose-node`, or crashed)."""
        for node_id, entry in list(self._nodes.items()):
            # the head's entry has none: the head is not this provider's to lose (Ray's typing infers every
            # entry's type from the head's, without a node)
            node = cast("Node | None", entry.get("node"))
            if node is not None and any(kind == ray_constants.PROCESS_TYPE_RAYLET for kind, _ in node.dead_processes()):
                self._nodes.pop(node_id)
                node.kill_all_processes(check_alive=False, allow_graceful=False)
                log.warning("RehearsalNodeProvider: node %s is lost (its raylet is gone)", node_id)

    def non_terminated_nodes(self, tag_filters):
        with self.lock:
            self._forget_lost()
            return super().non_terminated_nodes(tag_filters)
