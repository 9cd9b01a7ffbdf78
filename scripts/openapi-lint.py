#!/usr/bin/env python3
"""Finds what YAML reads silently but the author did not mean in openapi.yaml: a key given
twice in one mapping (the second wins), and a description with an unquoted comma in a
flow mapping (`{description: a, b}` reads `b` as a key with no value)."""
import sys
import yaml


class StrictLoader(yaml.SafeLoader):
    pass


def mapping(loader, node, deep=False):
    keys = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in keys:
            raise yaml.constructor.ConstructorError(None, None, f"{key!r} given twice", key_node.start_mark)
        keys.add(key)
    return loader.construct_mapping(node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)

problems = []


def walk(value, path):
    if isinstance(value, dict):
        for key, member in value.items():
            if member is None and isinstance(key, str) and " " in key:
                problems.append(f"{path}: {key!r} is a key without a value (an unquoted comma before it?)")
            walk(member, f"{path}/{key}")
    elif isinstance(value, list):
        for index, member in enumerate(value):
            walk(member, f"{path}[{index}]")


path = sys.argv[1]
try:
    walk(yaml.load(open(path), Loader=StrictLoader), "")
except yaml.YAMLError as error:
    problems.append(str(error))
for problem in problems:
    print(f"{path}: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
