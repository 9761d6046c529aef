# -*- coding: utf-8 -*-
# The meshhost.node.declaration action: `src` is a file on the controller,
# read here and handed to the module on the node as `content`.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        src = args.pop("src", None)
        if src is not None:
            if args.get("content") is not None:
                raise AnsibleActionFail("src and content are mutually exclusive")
            try:
                path = self._find_needle("files", src)
                with open(path, "rb") as f:
                    args["content"] = to_text(f.read(), errors="surrogate_or_strict")
            except Exception as e:
                raise AnsibleActionFail("src %s cannot be read: %s" % (src, to_text(e)))
            args["src_name"] = src
        result.update(
            self._execute_module(
                module_name="meshhost.node.declaration",
                module_args=args,
                task_vars=task_vars,
            )
        )
        return result
