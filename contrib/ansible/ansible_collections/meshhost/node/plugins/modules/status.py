#!/usr/bin/python
# -*- coding: utf-8 -*-

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: status
short_description: Read a node's mesh-host status as facts
version_added: 0.1.0
description:
  - Returns C(mesh-host status --json) as the fact C(mesh_host), and what
    needs an operator's attention (a failed resource, a window past its
    bound, a suspended step, a C(WILL NOT START AGAIN) alert) as
    C(mesh_host.attention). Attention does not fail the task.
  - Each scheduled step in C(mesh_host.steps) carries its last fire's
    outcome and what it used as read from the fire's own cgroup, in
    C(last-outcome), C(last-duration-secs) and C(last-usage) (C(cpu-usec),
    C(memory-peak-bytes), C(memory-limit-bytes), C(io-read-bytes),
    C(io-write-bytes), C(oom-killed)); a figure the node could not measure
    is absent.
options:
  executable:
    description: The mesh-host command on the node.
    type: str
    default: mesh-host
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
author:
  - mesh-host developers
"""

EXAMPLES = r"""
- name: Read the status
  meshhost.node.status:

- name: Stop the play on a node that needs attention
  ansible.builtin.assert:
    that: ansible_facts.mesh_host.attention | default([]) | length == 0

- name: Warn of steps whose last run came within 10% of its memory limit
  ansible.builtin.debug:
    msg: "{{ item.step }} peaked at {{ item['last-usage']['memory-peak-bytes'] | filesizeformat(true) }}"
  loop: "{{ ansible_facts.mesh_host.steps }}"
  when:
    - item['last-usage']['memory-limit-bytes'] is defined
    - item['last-usage']['memory-peak-bytes'] is defined
    - item['last-usage']['memory-peak-bytes'] > 0.9 * item['last-usage']['memory-limit-bytes']
"""

RETURN = r"""
ansible_facts:
  description: >-
    C(mesh_host), the status; C(mesh_host.steps[].last-usage) the last
    fire's figures of each step.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.meshhost.node.plugins.module_utils.mesh_host import (
    EXIT_ATTENTION,
    EXIT_OK,
    run_json,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(executable=dict(type="str", default="mesh-host")),
        supports_check_mode=True,
    )
    rc, status, err = run_json(module, ["status"])
    if rc not in (EXIT_OK, EXIT_ATTENTION) or status is None:
        module.fail_json(msg="mesh-host status failed: %s" % (err.strip() or "exit %d" % rc))
    module.exit_json(changed=False, ansible_facts=dict(mesh_host=status))


if __name__ == "__main__":
    main()
