#!/usr/bin/python
# -*- coding: utf-8 -*-

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: declaration
short_description: Apply a mesh-host declaration to a node
version_added: 0.1.0
description:
  - Installs the declaration as the node's and converges the node to it,
    through the running mesh-host daemon (C(mesh-host apply FILE)).
  - Reports C(changed) only when the apply changed something, with the
    apply's report as structured data.
  - A declaration mesh-host refuses fails the task with every problem
    listed; nothing on the node changes.
  - In check mode it runs C(mesh-host diff) and changes nothing.
  - In diff mode it returns the declaration before and after, and the
    plan, each resource's action and the steps the apply takes (or, in
    check mode, would take), with what became of each.
options:
  src:
    description:
      - A declaration file on the controller (searched in the play's
        C(files/) as M(ansible.builtin.copy) does).
      - Mutually exclusive with O(content).
    type: path
  content:
    description:
      - The declaration as data (a mapping), or as JSON text.
      - Mutually exclusive with O(src).
    type: raw
  allow_empty:
    description:
      - Apply a declaration of no resources over a node where resources
        are applied, removing them (mesh-host refuses it otherwise).
    type: bool
    default: false
  executable:
    description: The mesh-host command on the node.
    type: str
    default: mesh-host
  declaration_path:
    description:
      - The node's declaration file, read for diff mode's "before".
      - Defaults to E(MESH_HOST_DECLARATION), else
        C(/etc/mesh-host/declaration.json).
    type: path
  src_name:
    description: Set by the action plugin; the name of O(src) for diff headers.
    type: str
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - The mesh-host daemon must run on the node; the role
    M(meshhost.node.mesh_host) installs and starts it.
author:
  - mesh-host developers
"""

EXAMPLES = r"""
- name: Roll the declaration, one node at a time, stopping at the first refusal
  hosts: nodes
  serial: 1
  max_fail_percentage: 0
  tasks:
    - name: Apply
      meshhost.node.declaration:
        src: "declarations/{{ inventory_hostname }}.json"

- name: Preview everywhere
  meshhost.node.declaration:
    content: "{{ lookup('file', 'site.json') | from_json }}"
  check_mode: true
  diff: true
"""

RETURN = r"""
report:
  description:
    - The apply's report (C(mesh-host apply --json)), or in check mode the
      preview's (C(mesh-host diff --json)).
  returned: when mesh-host answered
  type: dict
  sample: {"ok": true, "changed": true, "lines": [{"id": "web", "action": "created"}]}
actions:
  description: The report's lines, each C(ID ACTION) and its reason after a colon, one per resource.
  returned: when mesh-host answered
  type: list
  elements: str
plan:
  description:
    - The report's lines with their steps, as diff mode shows them, each
      C(ID ACTION) with its reason after a colon, then one indented
      C(- ACT ON) per step it takes on the node, with its outcome after
      the apply (C(done), C(failed), C(not reached)).
    - In check mode, the plan C(mesh-host diff) decided; the apply then
      takes the same steps.
  returned: when mesh-host answered
  type: list
  elements: str
problems:
  description: Every problem of a refused declaration, one line each.
  returned: failed, when refused
  type: list
  elements: str
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.meshhost.node.plugins.module_utils.mesh_host import (
    EXIT_OK,
    EXIT_REFUSED,
    problems_of,
    run_json,
)


def as_text(content):
    if isinstance(content, (dict, list)):
        return json.dumps(content, indent=2, sort_keys=True) + "\n"
    return content if content.endswith("\n") else content + "\n"


def actions_of(report):
    lines = []
    for line in (report or {}).get("lines") or []:
        text = "%s %s" % (line.get("id"), line.get("action"))
        if line.get("reason"):
            text += ": " + line["reason"]
        lines.append(text)
    return lines


def plan_of(report):
    """Each line of the report, then its steps indented, with outcomes."""
    lines = []
    for line in (report or {}).get("lines") or []:
        text = "%s %s" % (line.get("id"), line.get("action"))
        if line.get("reason"):
            text += ": " + line["reason"]
        lines.append(text)
        for step in line.get("steps") or []:
            said = "  - %s %s" % (step.get("act"), step.get("on"))
            if step.get("outcome"):
                said += " (%s)" % step["outcome"]
            lines.append(said)
    for step in (report or {}).get("tidy") or []:
        said = "tidy: %s %s" % (step.get("act"), step.get("on"))
        if step.get("outcome"):
            said += " (%s)" % step["outcome"]
        lines.append(said)
    return lines


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path"),
            content=dict(type="raw"),
            allow_empty=dict(type="bool", default=False),
            executable=dict(type="str", default="mesh-host"),
            declaration_path=dict(type="path"),
            src_name=dict(type="str"),
        ),
        required_one_of=[("src", "content")],
        mutually_exclusive=[("src", "content")],
        supports_check_mode=True,
    )
    p = module.params
    if p["src"] is not None:
        module.fail_json(msg="src is read on the controller: use the meshhost.node.declaration action (not the module alone)")
    text = as_text(p["content"])
    declared = p["declaration_path"] or os.environ.get("MESH_HOST_DECLARATION") or "/etc/mesh-host/declaration.json"

    fd, path = tempfile.mkstemp(prefix="declaration.", suffix=".json", dir=module.tmpdir)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    args = ["diff" if module.check_mode else "apply", path]
    if p["allow_empty"]:
        args.append("--allow-empty")
    before = ""
    if module._diff:
        try:
            with open(declared) as f:
                before = f.read()
        except (IOError, OSError):
            before = ""

    rc, answer, err = run_json(module, args)
    result = dict(changed=False, report=answer, actions=actions_of(answer), plan=plan_of(answer))
    if module._diff:
        result["diff"] = [
            dict(before_header=declared, after_header=p["src_name"] or "content", before=before, after=text),
            dict(
                before_header="plan",
                after_header="plan (mesh-host %s)" % args[0],
                before="",
                after="".join(a + "\n" for a in result["plan"]),
            ),
        ]
    if rc == EXIT_REFUSED or (isinstance(answer, dict) and answer.get("accepted") is False):
        problems = problems_of(answer)
        if not problems:
            problems = [err.strip() or "refused (exit %d)" % rc]
        module.fail_json(msg="the declaration is refused, nothing changed: %d problem(s)" % len(problems), problems=problems, **result)
    if module.check_mode:
        # mesh-host diff: 0 nothing would change, 1 something would.
        if rc not in (0, 1) or answer is None:
            module.fail_json(msg="mesh-host diff failed: %s" % (err.strip() or rc), **result)
        result["changed"] = rc == 1
        module.exit_json(**result)
    if rc != EXIT_OK or answer is None:
        module.fail_json(msg="the apply failed: %s" % (err.strip() or "; ".join(a for a in result["actions"] if " failed" in a)), **result)
    result["changed"] = bool(answer.get("changed"))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
