#!/usr/bin/python3
"""Validate what a command printed with --json against its JSON Schema
(src/answer/schema/) with a real validator (python3-jsonschema, draft
2020-12, formats checked), so a test can hold the daemon's and --local's
documents to the same schema.

usage: answer.py SCHEMA [--lines] < OUTPUT

OUTPUT is one JSON document, or with --lines one per line (`logs --json`).
Prints each error with where it is and exits 1 when there is one.
"""
import json
import sys

import jsonschema


def main():
    schema = json.load(open(sys.argv[1]))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.FormatChecker()
    )
    text = sys.stdin.read()
    if "--lines" in sys.argv[2:]:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        docs = [json.loads(text)]
    if not docs:
        print("no document to validate")
        return 1
    failed = 0
    for i, doc in enumerate(docs):
        for error in validator.iter_errors(doc):
            where = "/".join(str(p) for p in error.absolute_path)
            print(f"document {i}: at /{where}: {error.message}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
