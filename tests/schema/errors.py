#!/usr/bin/python3
"""Validate declarations against mesh-host's JSON Schema with a real
validator (python3-jsonschema, draft 2020-12) and print, as JSON, each
file's errors as [resource index, field path] pairs, in check's field
notation (`mounts[0].readonly`), so a test can compare them with what
`mesh-host check` finds.

usage: errors.py SCHEMA FILE...
"""
import json
import re
import sys

import jsonschema


def field_path(parts):
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + p
    return out


def leaves(error):
    """The most precise errors: if/then, oneOf and allOf wrap theirs."""
    if error.context:
        for sub in error.context:
            yield from leaves(sub)
    else:
        yield error


def main():
    schema = json.load(open(sys.argv[1]))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.FormatChecker()
    )
    result = {}
    for name in sys.argv[2:]:
        doc = json.load(open(name))
        found = set()
        for error in validator.iter_errors(doc):
            for leaf in leaves(error):
                path = list(leaf.absolute_path)
                if len(path) < 2 or path[0] != "resources":
                    found.add((-1, field_path(path)))
                    continue
                index, rest = path[1], path[2:]
                if leaf.validator == "additionalProperties":
                    for key in re.findall(r"'([^']+)'", leaf.message.split(" was")[0]):
                        found.add((index, field_path(rest + [key])))
                elif leaf.validator == "dependentRequired":
                    # "'schedule' is a dependency of 'schedule-zone'"
                    key = re.findall(r"'([^']+)'", leaf.message)[-1]
                    found.add((index, field_path(rest + [key])))
                elif leaf.validator == "required":
                    key = re.findall(r"'([^']+)'", leaf.message)[0]
                    found.add((index, field_path(rest + [key])))
                else:
                    found.add((index, field_path(rest)))
        result[name] = sorted([list(f) for f in found])
    json.dump(result, sys.stdout)


main()
