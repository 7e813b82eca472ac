# Copyright: slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Run the node_facts module; a host that does not answer is a failed result with the connection's reason.

The preflight reads every node, then reports every problem of every host in one list (host_checks). A host that
does not answer must stay in the play until that list: as an unreachable result kept by ``ignore_unreachable``, the
default callback prints it followed by "...ignoring" although the run stops right after. So in a task that keeps
unreachable hosts (``ignore_unreachable``), a host that does not answer is a failed result instead (with
``failed_when: false`` on the task it is shown as nothing of the kind), and host_checks names it unreachable. Elsewhere
it stays unreachable, as with any module.
"""

from __future__ import annotations

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        try:
            result.update(self._execute_module(
                module_name="slipway.cluster.node_facts", module_args=self._task.args, task_vars=task_vars))
        except AnsibleConnectionFailure as error:
            if not self._task.ignore_unreachable:
                raise
            result.update(failed=True, slipway_unreachable=True, msg=str(error))
        return result
