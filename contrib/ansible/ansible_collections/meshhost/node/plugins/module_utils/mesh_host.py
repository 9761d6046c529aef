# -*- coding: utf-8 -*-
# Shared by the meshhost.node modules: running the mesh-host command line on
# the node and reading its --json answers.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

# mesh-host's exit codes (docs/exit-codes.md), as its Exit type names them
# (src/exit.rs; tests/exit_codes.rs holds this list to it).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_ATTENTION = 3
EXIT_INTERRUPTED = 130


def run_json(module, args):
    """Run mesh-host with ARGS and --json: (exit code, answer or None, stderr)."""
    executable = module.params.get("executable") or "mesh-host"
    path = module.get_bin_path(executable, required=True) if "/" not in executable else executable
    rc, out, err = module.run_command([path] + list(args) + ["--json"])
    answer = None
    if out.strip():
        try:
            answer = json.loads(out)
        except ValueError:
            answer = None
    return rc, answer, err


def problems_of(answer):
    """Every problem of a refused declaration, one line each."""
    if not isinstance(answer, dict):
        return []
    lines = []
    for p in answer.get("problems") or []:
        where = ": ".join(x for x in (p.get("resource"), p.get("field")) if x)
        lines.append("%s: %s" % (where, p.get("message")) if where else p.get("message", ""))
    if answer.get("error"):
        lines.append(answer["error"])
    return lines
