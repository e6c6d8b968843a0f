#!/usr/bin/env python3
# Validates mnv2's report files against the JSON Schemas in resources/schemas (docs/REPORTS.md): each JSON file
# by its "schema"/"format" field (or the shape of a trace, topology, classify or targets probe output, or of the
# targets file), each CSV
# by its header against the columns its row schema lists, in order, and each row's cells against their types.
# usage: validate-reports.py [--schemas DIR] [--quiet] [--at-least N] FILE|DIR... ; exit 0: all valid, 1: some invalid, 2: usage.
import argparse
import csv
import io
import json
import os
import sys

import jsonschema

BASE = "https://github.com/mnv2-profiler/mnv2-profiler/blob/main/resources/schemas/"


def load_schemas(folder):
    store = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".schema.json"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                schema = json.load(f)
            jsonschema.Draft202012Validator.check_schema(schema)
            store[name] = schema
    return store


def validator(store, name):
    schema = store[name]
    try:  # jsonschema 4.18 and later resolve references through a registry
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError:  # Debian 12's jsonschema (4.10): a resolver with a store of the schemas by $id
        resolver = jsonschema.RefResolver(BASE + name, schema, store={BASE + n: s for n, s in store.items()})
        return jsonschema.Draft202012Validator(schema, resolver=resolver)
    registry = Registry().with_resources(
        [(BASE + n, Resource.from_contents(s, default_specification=DRAFT202012)) for n, s in store.items()])
    return jsonschema.Draft202012Validator(schema, registry=registry)


# The JSON schema a document claims, by its own field or its shape; None: not an mnv2 report.
def json_schema_of(doc):
    if isinstance(doc, dict):
        tag = doc.get("schema", doc.get("format"))
        if isinstance(tag, str) and tag.startswith("mnv2."):
            return tag.split("/")[0] + ".schema.json"
        if "traceEvents" in doc:
            return "mnv2.trace.schema.json"
        if "totals" in doc and "layers" in doc and "input" in doc:
            return "mnv2.topology.schema.json"
        if "schema_version" in doc and "targets" in doc:
            return "mnv2.targets-file.schema.json"
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "top5" in doc[0] and "logits" in doc[0]:
        return "mnv2.classify.schema.json"
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "target" in doc[0] and "ok" in doc[0]:
        return "mnv2.targets-probe.schema.json"
    return None


# The CSV row schema whose columns are the header's first ones; None: not an mnv2 CSV.
def csv_schema_of(store, header):
    for name, schema in store.items():
        if name.endswith(".csv.schema.json") and header and header[0] == list(schema["properties"])[0]:
            if header[:2] == list(schema["properties"])[:2]:
                return name
    return None


def cell(value, spec):
    types = spec.get("type", [])
    types = types if isinstance(types, list) else [types]
    if value == "":
        return None
    if "integer" in types:
        try:
            return int(value)
        except ValueError:
            pass
    if "number" in types:
        try:
            return float(value)
        except ValueError:
            pass
    return value


def check_file(store, path):
    """Returns (schema name or None, [problems])."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8")
    if path.endswith(".csv"):
        rows = list(csv.reader(io.StringIO(text)))
        if not rows:
            return None, []
        name = csv_schema_of(store, rows[0])
        if name is None:
            return None, []
        columns = list(store[name]["properties"])
        if rows[0] != columns:
            return name, [f"columns {rows[0]} are not the documented {columns}"]
        v = validator(store, name)
        problems = []
        for number, row in enumerate(rows[1:], start=2):
            if len(row) != len(columns):
                problems.append(f"line {number}: {len(row)} cells, the header has {len(columns)}")
                continue
            record = {c: cell(x, store[name]["properties"][c]) for c, x in zip(columns, row)}
            problems += [f"line {number}: {e.json_path}: {e.message}" for e in v.iter_errors(record)]
        return name, problems
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return None, []
    name = json_schema_of(doc)
    if name is None:
        return None, []
    if name not in store:
        return name, [f"no schema {name} for this format"]
    v = validator(store, name)
    return name, [f"{e.json_path}: {e.message}" for e in sorted(v.iter_errors(doc), key=lambda e: e.json_path)]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--schemas", default=os.path.join(here, "..", "resources", "schemas"))
    p.add_argument("--quiet", action="store_true", help="print only invalid files")
    p.add_argument("--at-least", type=int, default=0, help="fail unless this many reports were found")
    p.add_argument("paths", nargs="+")
    a = p.parse_args()
    store = load_schemas(a.schemas)
    files = []
    for path in a.paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith((".json", ".csv"))]
        else:
            files.append(path)
    bad = checked = 0
    for path in files:
        try:
            name, problems = check_file(store, path)
        except (OSError, UnicodeDecodeError) as e:
            name, problems = "?", [str(e)]
        if name is None:
            continue
        checked += 1
        if problems:
            bad += 1
            print(f"INVALID {path} ({name}): {len(problems)} problem(s)")
            for problem in problems[:20]:
                print(f"  {problem[:300]}")
        elif not a.quiet:
            print(f"valid {path} ({name})")
    print(f"{checked} report(s) checked, {bad} invalid")
    if checked < a.at_least:
        print(f"fewer reports than --at-least {a.at_least}: the tests wrote none where expected")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
