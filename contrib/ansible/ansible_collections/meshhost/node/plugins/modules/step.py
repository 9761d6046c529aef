#!/usr/bin/python
# -*- coding: utf-8 -*-

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: step
short_description: Fire, suspend or resume a mesh-host scheduled step
version_added: 0.1.0
description:
  - C(run) fires the step now through the daemon's scheduler
    (C(mesh-host run)) and returns its outcome; the task fails when the
    step failed or a container it held did not run again.
  - C(suspended) and C(resumed) suspend a step (its due times are logged,
    never run) or lift that; C(changed) only when its state changed.
options:
  name:
    description: The step's resource id.
    type: str
    required: true
  state:
    description: What to do.
    type: str
    choices: [run, suspended, resumed]
    default: run
  executable:
    description: The mesh-host command on the node.
    type: str
    default: mesh-host
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author:
  - mesh-host developers
"""

EXAMPLES = r"""
- name: Collect the registry's garbage now
  meshhost.node.step:
    name: registry-gc

- name: Keep the nightly backup from running during the migration
  meshhost.node.step:
    name: nightly-backup
    state: suspended
"""

RETURN = r"""
outcome:
  description: What mesh-host answered (C(--json)).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.meshhost.node.plugins.module_utils.mesh_host import run_json


def suspended(module, name):
    rc, status, err = run_json(module, ["status"])
    if status is None:
        module.fail_json(msg="mesh-host status failed: %s" % (err.strip() or rc))
    for step in status.get("steps") or []:
        if step.get("step") == name:
            return bool(step.get("suspended-since"))
    module.fail_json(msg="step %s is not declared on this node" % name)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            state=dict(type="str", choices=["run", "suspended", "resumed"], default="run"),
            executable=dict(type="str", default="mesh-host"),
        ),
        supports_check_mode=True,
    )
    name, state = module.params["name"], module.params["state"]
    if state == "run":
        if module.check_mode:
            module.exit_json(changed=True, outcome={})
        rc, outcome, err = run_json(module, ["run", name])
        if rc != 0:
            module.fail_json(msg="step %s: %s" % (name, err.strip() or "failed (exit %d)" % rc), outcome=outcome or {}, rc=rc)
        module.exit_json(changed=True, outcome=outcome or {})
    want = state == "suspended"
    if suspended(module, name) == want:
        module.exit_json(changed=False, outcome={"step": name, "suspended": want})
    if module.check_mode:
        module.exit_json(changed=True, outcome={"step": name, "suspended": want})
    rc, outcome, err = run_json(module, ["suspend" if want else "resume", name])
    if rc != 0:
        module.fail_json(msg="step %s: %s" % (name, err.strip() or "exit %d" % rc), outcome=outcome or {})
    module.exit_json(changed=True, outcome=outcome or {})


if __name__ == "__main__":
    main()
