#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Render the performance tables of the documents from their measurement files.

Every performance table in README.md and docs/*.md is a marker block

    <!-- figures:NAME -->
    ... rendered, never edited by hand ...
    <!-- /figures -->

whose NAME is a table of the spec (docs/bench/tables.json): which measurement files (mnv2 bench files, mnv2_gemm_bench
files, or text files of a format in TEXT_FORMATS, given as {"path": ..., "format": ...} and read by a strict parser: a
line of the kind it reads that does not parse, or a file without one, is an error), which rows (precision, batch,
...; a row may pick its records by "match" instead of its keys; a "where" value may be {"re": PATTERN}), which
columns (a field of one record of one file; the median, sum or list of a field over every matching record
("reduce"); either times an optional "scale"; or the ratio of two columns). The rendered block names its files, the
GPU, the date and the commit, and puts side by side only figures of one call.
A call is one folder of docs/bench or docs/reports (one device-run call, see each folder's README), or, in a folder
that keeps several calls apart by name, the files of one callN_ prefix; a file directly in docs/bench or docs/reports
is a call of its own. A group whose files come from two calls is refused; a table of several calls
must split them into groups, each labelled and rendered as a table of its own. A file in a folder named after a
GPU (h200-..., h100-...) that another GPU measured is refused. A text file that names no machine takes the group's
"device" from the spec, and the block says so; a spec "device" beside a file that names its own is refused.

    render-figures.py [--root DIR] [--spec FILE] [--check] [DOC ...]

Without DOC: README.md and docs/*.md under the root. Without --check the blocks are rewritten in place (each
document written whole to a temporary file beside it, then renamed); with --check nothing is written and the exit
status is 1, with a unified diff, when a document's blocks differ from what its files give. Exit status 2: the
spec, a document's markers or a measurement file is wrong (the message says which).
"""

import argparse
import csv
import difflib
import io
import itertools
import json
import os
import re
import statistics
import sys
import tempfile

MARKER_RE = re.compile(r"<!-- figures:([A-Za-z0-9_-]+) -->\n(.*?)<!-- /figures -->", re.S)
ANY_MARKER_RE = re.compile(r"<!-- (/?)figures(?::([A-Za-z0-9_-]+))? -->")
DATE_RE = re.compile(r"(20\d\d-\d\d-\d\d)")
# "... on NVIDIA H200" at the end of a bench result's backend_description (older files have no "gpu" record).
DESCRIPTION_GPU_RE = re.compile(r" on (NVIDIA [^;]+?)(?:;|$)")
# A folder named after a GPU: h200-..., h100-..., h200x2-...
FOLDER_GPU_RE = re.compile(r"^(h\d{3})(?:x\d+)?-", re.I)
CALL_ROOTS = ("docs/bench", "docs/reports")
# Other programs' measurement files the renderer reads (its top-level "program"); they name their GPU in "device".
BENCH_PROGRAMS = ("mnv2_gemm_bench", "mnv2_stage_bench")
CALL_PREFIX_RE = re.compile(r"^(call\d+)[_-]")


class SpecError(Exception):
    """The spec, a document's markers or a measurement file is wrong; the message says which."""


# A golden line of the GPU test programs: "<run words> golden <input> rel L2 <x> (bound <b>)  top-5 <ids> (reference
# <ids>)", e.g. "cudnn fused fp32 golden cat  rel L2 1.12e-06 (bound 1e-05)  top-5 286,... (reference 286,...)".
GOLDEN_LINE_RE = re.compile(
    r"^(?P<run>\S.*?) golden (?P<input>\S+) +rel L2 (?P<rel_l2>\S+) \(bound (?P<bound>\S+)\) +"
    r"top-5 (?P<top5>\d+(?:,\d+){4}) \(reference (?P<reference>\d+(?:,\d+){4})\)$"
)
# The summary table scripts/bench-cpu-vs-onnxruntime.sh prints.
CPU_TABLE_HEAD = ["batch", "implementation", "median_ms", "min_ms", "max_ms", "spread", "images/s", "vs_ort"]
CPU_TABLE_ROW_RE = re.compile(
    r"^ *(?P<batch>\d+) +(?P<implementation>\S+(?: \S+)?) +(?P<median_ms>\d+\.\d+) +(?P<min_ms>\d+\.\d+) +"
    r"(?P<max_ms>\d+\.\d+) +(?P<spread_pct>\d+)% +(?P<images_s>\d+\.\d+) +(?P<vs_ort>\d+\.\d+)x$"
)
# One round's median of the GPU machine's `cpu` section: "round 1 batch 8 cpu-ref 63.957".
CPU_ROUND_RE = re.compile(
    r"^round (?P<round>\d+) batch (?P<batch>\d+) (?P<implementation>[a-z][a-z-]*) (?P<median_ms>\d+\.\d+)$"
)


def number(text, path, lineno):
    try:
        return float(text)
    except ValueError:
        raise SpecError(f"{path}:{lineno}: {text!r} is not a number") from None


def parse_golden_log(text, path):
    """The golden lines of a GPU test log, one record each: run ("cudnn fused fp32"), input, rel_l2, bound,
    top5_same. A line with "golden" and "rel L2" that is not such a line, or a log without one, is an error."""
    records, devices = [], set()
    for lineno, line in enumerate(text.splitlines(), 1):
        m = DESCRIPTION_GPU_RE.search(line)
        if m and line.startswith(("cuda backend:", "cudnn backend:")):
            devices.add(m.group(1).strip())
        if " golden " not in line or "rel L2" not in line:
            continue
        g = GOLDEN_LINE_RE.match(line)
        if not g:
            raise SpecError(f"{path}:{lineno}: a golden line that does not parse: {line!r}")
        records.append({
            "run": g["run"].strip(), "input": g["input"], "rel_l2": number(g["rel_l2"], path, lineno),
            "bound": number(g["bound"], path, lineno), "top5_same": g["top5"] == g["reference"],
        })
    if not records:
        raise SpecError(f"{path}: no golden lines ('... golden INPUT rel L2 X (bound B)  top-5 ... (reference ...)')")
    if len(devices) > 1:
        raise SpecError(f"{path}: names more than one GPU ({', '.join(sorted(devices))})")
    return {"records": records, "device": next(iter(devices), "")}


def parse_cpu_table(text, path):
    """scripts/bench-cpu-vs-onnxruntime.sh's output: "# " header lines (date, machine, the mnv2 build), the column
    line, one row per batch and implementation, the closing "(median_ms: ...)" note; anything else is an error."""
    records, device, commit, date, head_seen = [], "", "", "", False
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("# "):
            if line.startswith("# bench-cpu-vs-onnxruntime, "):
                m = DATE_RE.search(line)
                date = m.group(1) if m else ""
            elif line.startswith("# machine: "):
                device = line[len("# machine: "):].split(";")[0].strip()
            elif line.startswith("# mnv2: "):
                m = re.search(r"build stamped ([0-9a-f]{7,40})\b", line)
                commit = m.group(1) if m else ""
        elif line.split() == CPU_TABLE_HEAD:
            head_seen = True
        elif line.startswith("(median_ms: ") and line.endswith(")"):
            pass
        elif head_seen and CPU_TABLE_ROW_RE.match(line):
            r = CPU_TABLE_ROW_RE.match(line).groupdict()
            records.append(
                {k: (v if k == "implementation" else int(v) if k == "batch" else float(v)) for k, v in r.items()}
            )
        else:
            raise SpecError(f"{path}:{lineno}: not a line of bench-cpu-vs-onnxruntime's table: {line!r}")
    if not records or not date or not device:
        missing = [n for n, v in (("rows", records), ("date line", date), ("machine line", device)) if not v]
        raise SpecError(f"{path}: no {', no '.join(missing)}: not bench-cpu-vs-onnxruntime's table")
    return {"records": records, "device": device, "commit": commit, "date": date}


def parse_cpu_rounds(text, path):
    """The GPU machine's `cpu` section: one "round R batch B IMPLEMENTATION MEDIAN_MS" line per run, nothing else."""
    records, seen = [], set()
    for lineno, line in enumerate(text.splitlines(), 1):
        m = CPU_ROUND_RE.match(line)
        if not m:
            raise SpecError(f"{path}:{lineno}: not a 'round R batch B IMPLEMENTATION MEDIAN_MS' line: {line!r}")
        if (m["round"], m["batch"], m["implementation"]) in seen:  # a repeated run would weigh twice in a median
            raise SpecError(f"{path}:{lineno}: round {m['round']} batch {m['batch']} {m['implementation']} again")
        seen.add((m["round"], m["batch"], m["implementation"]))
        records.append({"round": int(m["round"]), "batch": int(m["batch"]), "implementation": m["implementation"],
                        "median_ms": float(m["median_ms"])})
    if not records:
        raise SpecError(f"{path}: no rounds")
    return {"records": records, "device": ""}


# The columns an mnv2 profile CSV (engine/report, one row per layer) must have for the renderer to read it.
PROFILE_CSV_COLUMNS = ("run_id", "backend", "precision", "batch", "layer_index", "layer_name", "block", "step",
                       "median_ns")
NUMBER_RE = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")


def parse_profile_csv(text, path):
    """An mnv2 profile CSV: one record per layer, numbers as numbers, empty cells left out (a fused step's time is
    on its first layer's row only). Every row has the header's width, every *_ns cell is empty or a number, and
    the file is one run."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or any(c not in rows[0] for c in PROFILE_CSV_COLUMNS):
        missing = [c for c in PROFILE_CSV_COLUMNS if not rows or c not in rows[0]]
        raise SpecError(f"{path}: not an mnv2 profile CSV (no column {', '.join(missing)})")
    head, records = rows[0], []
    for lineno, row in enumerate(rows[1:], 2):
        if len(row) != len(head):
            raise SpecError(f"{path}:{lineno}: {len(row)} fields, the header has {len(head)}")
        record = {}
        for name, cell in zip(head, row):
            if cell == "":
                continue
            if name.endswith("_ns") and not NUMBER_RE.match(cell):
                raise SpecError(f"{path}:{lineno}: {name} {cell!r} is not a number")
            record[name] = (float(cell) if "." in cell or "e" in cell.lower() else int(cell)) \
                if NUMBER_RE.match(cell) else cell
        records.append(record)
    if not records:
        raise SpecError(f"{path}: a header and no rows")
    runs = {r.get("run_id") for r in records}
    if len(runs) != 1:
        raise SpecError(f"{path}: rows of {len(runs)} runs")
    m = DATE_RE.match(str(records[0].get("run_id", "")))
    return {"records": records, "device": "", "date": m.group(1) if m else ""}


# Text measurement files the renderer reads: a spec file {"path": ..., "format": NAME}. Each parser returns the
# records, the machine it names ("" where the file does not) and, where the file says them, commit and date.
TEXT_FORMATS = {
    "gpu-test-golden-log": parse_golden_log,
    "cpu-vs-onnxruntime-table": parse_cpu_table,
    "cpu-vs-onnxruntime-rounds": parse_cpu_rounds,
    "mnv2-profile-csv": parse_profile_csv,
}


def call_of(path):
    """The call a measurement file belongs to: its folder, or the file itself when it lies at a call root; in a
    folder that keeps several calls' files apart by name (call1_bench.json, call2_bench.json) the folder and that
    prefix."""
    folder = os.path.dirname(path)
    if folder in CALL_ROOTS:
        return path
    m = CALL_PREFIX_RE.match(os.path.basename(path))
    return f"{folder}/{m.group(1)}*" if m else folder


class Measurements:
    """The measurement files the spec names, read once, with what each says about itself."""

    def __init__(self, root):
        self.root = root
        self.files = {}

    def load(self, path, form=None):
        if path in self.files:
            if self.files[path].get("format") != form:
                raise SpecError(f"{path}: read as {self.files[path].get('format') or 'JSON'} and as {form or 'JSON'}")
            return self.files[path]
        full = os.path.join(self.root, path)
        if form is not None:
            if form not in TEXT_FORMATS:
                raise SpecError(f"{path}: format {form!r} is not one of {', '.join(TEXT_FORMATS)}")
            try:
                with open(full, encoding="utf-8") as f:
                    data = TEXT_FORMATS[form](f.read(), path)
            except OSError as e:
                raise SpecError(f"{path}: cannot read: {e.strerror}") from None
            except UnicodeDecodeError as e:
                raise SpecError(f"{path}: not UTF-8 text: {e}") from None
            data["format"] = form
            self.files[path] = data
            return data
        try:
            with open(full, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as e:
            raise SpecError(f"{path}: cannot read: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise SpecError(f"{path}: not JSON: {e}") from None
        if not isinstance(data, dict) or not (
            str(data.get("schema", "")).startswith("mnv2.bench/") or data.get("program") in BENCH_PROGRAMS
        ):
            raise SpecError(
                f'{path}: neither an mnv2 bench file ("schema": "mnv2.bench/...") nor one of {BENCH_PROGRAMS}'
            )
        self.files[path] = data
        return data

    def records(self, path, listing):
        """The records a table reads from one file: "results" of a bench file, "batches" of mnv2_gemm_bench, every
        record of a text file. A listing "outer/inner" (mnv2_stage_bench's "batches/shapes") is every inner record
        with its outer record's numbers and strings beside its own fields."""
        if self.files[path].get("format"):
            return self.files[path]["records"]
        outer, _, inner = listing.partition("/")
        records = self.files[path].get(outer)
        if not isinstance(records, list):
            raise SpecError(f"{path}: no {outer!r} list")
        if not inner:
            return records
        flat = []
        for parent in records:
            children = parent.get(inner) if isinstance(parent, dict) else None
            if not isinstance(children, list):
                raise SpecError(f"{path}: a {outer!r} record without an {inner!r} list")
            scalars = {k: v for k, v in parent.items() if isinstance(v, (int, float, str))}
            flat.extend({**scalars, **child} for child in children)
        return flat

    def gpu_of(self, path, result):
        """The GPU's (or a CPU comparison's machine's) name and uuid for one result ("" where the file does not say)."""
        if self.files[path].get("format"):
            return self.files[path]["device"], ""
        gpu = result.get("gpu")
        if isinstance(gpu, dict) and gpu.get("name"):
            return gpu["name"], gpu.get("uuid", "")
        anchor = self.files[path].get("anchor")
        if isinstance(anchor, dict) and anchor.get("device"):
            return anchor["device"], ""
        if isinstance(self.files[path].get("device"), str):  # mnv2_gemm_bench
            return self.files[path]["device"], ""
        if isinstance(self.files[path].get("gpu"), str):  # mnv2_stage_bench
            return self.files[path]["gpu"], ""
        m = DESCRIPTION_GPU_RE.search(str(result.get("backend_description", "")))
        return (m.group(1).strip(), "") if m else ("", "")

    def date_of(self, path):
        if self.files[path].get("format"):
            return self.files[path].get("date") or (DATE_RE.search(path).group(1) if DATE_RE.search(path) else "")
        anchor = self.files[path].get("anchor")
        if isinstance(anchor, dict) and DATE_RE.match(str(anchor.get("date", ""))):
            return anchor["date"][:10]
        m = DATE_RE.search(path)
        return m.group(1) if m else ""


def field(result, dotted):
    value = result
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def matches(record, where):
    """Every key of where holds: equal to its value, or, for a value {"re": PATTERN}, a string field the pattern
    matches whole (a profile's layer kind: {"layer_name": {"re": "block\\d+\\.expand"}})."""
    for k, v in where.items():
        value = field(record, k)
        if isinstance(v, dict):
            if set(v) != {"re"}:
                raise SpecError(f"where {k}: {v!r}: a value or {{\"re\": PATTERN}}")
            try:
                if not isinstance(value, str) or not re.fullmatch(v["re"], value):
                    return False
            except re.error as e:
                raise SpecError(f"where {k}: pattern {v['re']!r}: {e}") from None
        elif value != v:
            return False
    return True


def select(records, path, where):
    """The one record of a file matching every key of where; anything else is an error naming the file."""
    found = [r for r in records if matches(r, where)]
    if len(found) != 1:
        keys = ", ".join(f"{k}={v}" for k, v in where.items())
        raise SpecError(f"{path}: {len(found)} results with {keys} (the spec must pick exactly one)")
    return found[0]


def fmt(value, spec, what):
    if value is None:
        raise SpecError(f"{what}: no such field")
    if spec == "s":
        return str(value)
    if spec.startswith("bool:"):  # "bool:held/missed": the words for true and false
        if not isinstance(value, bool):
            raise SpecError(f"{what}: {value!r} is not true or false")
        return spec[5:].split("/")[0 if value else 1]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{what}: {value!r} is not a number")
    return format(value, spec)


def expand_rows(rows, what):
    """rows: a list of {key: value} or one {key: [values]} (every combination, in the order given)."""
    if isinstance(rows, dict):
        keys = list(rows)
        lists = [rows[k] if isinstance(rows[k], list) else [rows[k]] for k in keys]
        return [dict(zip(keys, combo)) for combo in itertools.product(*lists)]
    if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
        return rows
    raise SpecError(f"{what}: rows must be a list of objects or one object of lists")


def check_folder_gpu(path, gpu):
    """A folder named after a GPU holds that GPU's figures only."""
    for part in path.split("/")[:-1]:
        m = FOLDER_GPU_RE.match(part)
        if m and m.group(1).upper() not in gpu.upper().split():
            named = m.group(1).upper()
            raise SpecError(f"{path}: measured on {gpu}, but its folder {part}/ is named after the {named}")


def commit_of(data):
    return f"commit {data['commit']}" if data.get("commit") else "no commit in the file: see its run's README"


def link(path, doc):
    return f"[`{os.path.basename(path)}`]({os.path.relpath(path, os.path.dirname(doc) or '.')})"


def resolve_column(col, spec, what):
    """A column is written out in the table or named from the spec's shared "columns"."""
    if isinstance(col, str):
        shared = spec.get("columns", {})
        if col not in shared:
            raise SpecError(f"{what}: column {col!r} is not one of the spec's shared columns")
        return shared[col]
    if not isinstance(col, dict) or ("ratio" not in col and not {"file", "field"} <= col.keys()):
        raise SpecError(f'{what}: a column needs "file" and "field", or "ratio"')
    return col


def render_group(name, table, group, doc, spec, meas):
    what = f"table {name}" + (f", group {group.get('label')!r}" if group.get("label") else "")
    files = group.get("files")
    if not isinstance(files, dict) or not files:
        raise SpecError(f'{what}: "files" must name at least one file (alias: path)')
    files, forms = dict(files), {}  # forms: alias: a text format, for a file given as {"path": ..., "format": ...}
    for alias, entry in list(files.items()):
        if isinstance(entry, dict):
            if set(entry) != {"path", "format"} or not isinstance(entry["path"], str):
                raise SpecError(f'{what}: file {alias!r}: give a path, or {{"path": ..., "format": ...}}')
            files[alias], forms[alias] = entry["path"], entry["format"]
        elif not isinstance(entry, str):
            raise SpecError(f"{what}: file {alias!r}: not a path")
    keys = table.get("keys", [])
    listing = table.get("list", "results")
    columns = [resolve_column(c, spec, what) for c in table.get("columns", [])]
    heads = [c.get("head", "") for c in columns]
    rows = expand_rows(group.get("rows", table.get("rows")), what)

    def path_of(alias, row):
        """A file's path may name a row's keys: bench_{precision}.json."""
        try:
            return files[alias].format(**row)
        except (KeyError, IndexError, ValueError) as e:
            raise SpecError(f"{what}: file {files[alias]!r}: {e!r} is not a key of the row") from None

    paths = list(dict.fromkeys(path_of(a, r) for a in files for r in rows))  # in the spec's order
    for alias in files:
        for row in rows:
            meas.load(path_of(alias, row), forms.get(alias))
    spec_device = group.get("device")
    calls = sorted({call_of(p) for p in paths})
    if len(calls) != 1:
        raise SpecError(
            f"{what}: mixes calls ({', '.join(calls)}); figures of two calls are never side by side: "
            "split them into separately-labelled groups"
        )
    gpus, uuids, used, named_by_spec = set(), set(), set(), set()
    lines = ["| " + " | ".join(keys + heads) + " |", "|" + " --- |" * (len(keys) + len(heads))]
    for row in rows:
        numbers, cells, blanks = {}, [], set()
        for col in columns:
            head = col.get("head", "")
            if "ratio" in col:
                a, b = col["ratio"]
                if a in blanks or b in blanks:
                    cells.append("—")
                    continue
                if a not in numbers or b not in numbers:
                    raise SpecError(f"{what}: ratio column {head!r} names a column before it that is not a figure")
                cells.append(fmt(numbers[a] / numbers[b], col.get("format", ".2f"), f"{what}: {head}") + "×")
                continue
            alias = col.get("file")
            if alias not in files and col.get("optional"):
                cells.append("—")  # a group without this file (said so in the spec)
                blanks.add(head)
                continue
            if alias not in files:
                raise SpecError(f"{what}: column {head!r} names file {alias!r}, which the group does not give")
            path = path_of(alias, row)
            # A row picks its records by its keys, or by its "match" where its label is no field's value ("sum of
            # steps": "match": {} takes every record).
            where = dict(row["match"]) if "match" in row else dict(row)
            where.update(col.get("where", {}))
            if col.get("optional") and not any(
                matches(r, where) for r in meas.records(path, col.get("list", listing))
            ):
                cells.append("—")  # a column some rows have no measurement for (said so in the spec)
                blanks.add(head)
                continue
            records = meas.records(path, col.get("list", listing))
            if "reduce" in col:
                found = [r for r in records if matches(r, where)]
                if not found:
                    wanted = ", ".join(f"{k}={v}" for k, v in where.items())
                    raise SpecError(f"{path}: no results with {wanted} to reduce")
                result = found[0]
            else:
                result = select(records, path, where)
            gpu, uuid = meas.gpu_of(path, result)
            if gpu and spec_device:
                raise SpecError(f'{what}: {path} names its machine ({gpu}); the spec\'s "device" is only for files '
                                "that do not")
            if not gpu and spec_device:
                gpu = spec_device
                named_by_spec.add(gpu)
            if not gpu:
                raise SpecError(f"{path}: a result with no GPU named (no gpu record, no 'on NVIDIA ...'; a text file "
                                'naming no machine needs the group\'s "device")')
            check_folder_gpu(path, gpu)
            gpus.add(gpu)
            if uuid:
                uuids.add(uuid)
            used.add(path)
            if "reduce" in col:
                values = [field(r, col["field"]) for r in found]
                if col["reduce"] == "sum":  # the records that hold the field (a profile's fused layers hold none)
                    values = [v for v in values if v is not None]
                    if not values:
                        raise SpecError(f"{path}: no {col['field']} in the results to sum")
                values = [v * col["scale"] if "scale" in col and isinstance(v, (int, float)) else v for v in values]
                for v in values:
                    if isinstance(v, bool) or not isinstance(v, (int, float)):
                        raise SpecError(f"{path}: {col['field']}: {v!r} is not a number")
                if col["reduce"] in ("median", "sum"):
                    numbers[head] = statistics.median(values) if col["reduce"] == "median" else sum(values)
                    cells.append(fmt(numbers[head], col.get("format", ".3f"), f"{path}: {col['field']}"))
                elif col["reduce"] == "list":  # every matching record's figure, in the file's order
                    cells.append(col.get("join", " / ").join(fmt(v, col.get("format", ".3f"), path) for v in values))
                else:
                    raise SpecError(f"{what}: column {head!r}: reduce {col['reduce']!r} is not median, sum or list")
                continue
            value = field(result, col["field"])
            if "scale" in col and isinstance(value, (int, float)) and not isinstance(value, bool):
                value *= col["scale"]  # a unit change, e.g. 0.001 for ns to us
            if value is None and col.get("optional"):
                cells.append("—")  # an older file without this field
                blanks.add(head)
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                numbers[head] = value
            cells.append(fmt(value, col.get("format", ".3f"), f"{path}: {col['field']}"))
        lines.append("| " + " | ".join([str(row.get(k, "")) for k in keys] + cells) + " |")
    if len(gpus) != 1 or len(uuids) > 1:
        raise SpecError(f"{what}: figures of more than one GPU ({', '.join(sorted(gpus | uuids))}) in one group")
    dates = sorted({meas.date_of(p) for p in used} - {""})
    if not dates:
        raise SpecError(f"{what}: no date in the files or their folder names")
    sources = ", ".join(
        f"{link(p, doc)} ({commit_of(meas.files[p])})" for p in paths if p in used
    )
    label = f"**{group['label']}** — " if group.get("label") else ""
    if calls[0] in paths:
        call = "one call, one file"
    else:
        call = f"one call, `{calls[0]}`" if calls[0].endswith("*") else f"one call, `{calls[0]}/`"
    device = next(iter(gpus))
    if named_by_spec:
        device += " (named in the spec: the file does not name its machine)"
    out = [f"{label}{device}, {' and '.join(dates)} ({call}): {sources}."]
    if group.get("note"):
        out.append("")
        out.append(group["note"])
    return "\n".join(out + [""] + lines)


def render_table(name, spec, doc, meas):
    tables = spec.get("tables", {})
    if name not in tables:
        raise SpecError(f"{doc}: marker figures:{name} names no table of the spec")
    table = tables[name]
    groups = table.get("groups")
    if not isinstance(groups, list) or not groups:
        raise SpecError(f'table {name}: "groups" must list at least one group')
    if len(groups) > 1:
        labels = [g.get("label") for g in groups]
        if not all(labels) or len(set(labels)) != len(labels):
            raise SpecError(f"table {name}: a table of several groups needs a distinct label on each group")
    parts = [
        f"<!-- rendered by scripts/render-figures.py from docs/bench/tables.json, table {name}; "
        "edit those, not this block -->"
    ]
    if table.get("caption"):
        parts.append(table["caption"])
    parts += [render_group(name, table, g, doc, spec, meas) for g in groups]
    if table.get("footer"):
        parts.append(table["footer"])
    return "\n\n".join(parts) + "\n"


def check_markers(text, doc):
    depth, name = 0, None
    for m in ANY_MARKER_RE.finditer(text):
        closing, marker_name = m.group(1) == "/", m.group(2)
        if closing:
            if marker_name or depth == 0:
                raise SpecError(f"{doc}: a stray '<!-- /figures -->' at offset {m.start()}")
            depth = 0
        else:
            if not marker_name:
                raise SpecError(f"{doc}: '<!-- figures -->' without a name at offset {m.start()}")
            if depth:
                raise SpecError(f"{doc}: figures:{marker_name} opens inside figures:{name}")
            depth, name = 1, marker_name
    if depth:
        raise SpecError(f"{doc}: figures:{name} is never closed with '<!-- /figures -->'")


def render_doc(text, doc, spec, meas):
    check_markers(text, doc)

    def block(m):
        return f"<!-- figures:{m.group(1)} -->\n{render_table(m.group(1), spec, doc, meas)}<!-- /figures -->"

    return MARKER_RE.sub(block, text)


def write_atomically(path, text):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".render-figures-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=here, help="the repository (default: this script's)")
    p.add_argument("--spec", default="docs/bench/tables.json", help="the table spec, relative to the root")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 with a diff on any difference")
    p.add_argument("docs", nargs="*", help="markdown files relative to the root (default: README.md docs/*.md)")
    args = p.parse_args(argv)
    root = os.path.abspath(args.root)
    docs = args.docs or ["README.md"] + sorted(
        "docs/" + f for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md")
    )
    try:
        try:
            with open(os.path.join(root, args.spec), encoding="utf-8") as f:
                spec = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise SpecError(f"{args.spec}: {e}") from None
        meas = Measurements(root)
        differ, blocks = [], 0
        for doc in docs:
            doc = os.path.relpath(os.path.join(root, doc), root)
            try:
                with open(os.path.join(root, doc), encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise SpecError(f"{doc}: cannot read: {e.strerror}") from None
            new = render_doc(text, doc, spec, meas)
            blocks += len(MARKER_RE.findall(text))
            if new == text:
                continue
            differ.append(doc)
            if args.check:
                sys.stdout.writelines(
                    difflib.unified_diff(
                        text.splitlines(True), new.splitlines(True), f"a/{doc}", f"b/{doc} (from its files)"
                    )
                )
            else:
                write_atomically(os.path.join(root, doc), new)
    except SpecError as e:
        print(f"render-figures: {e}", file=sys.stderr)
        return 2
    if args.check and differ:
        print(
            f"render-figures: {', '.join(differ)}: figures differ from their measurement files "
            "(run scripts/render-figures.py to re-render, or fix the spec docs/bench/tables.json)",
            file=sys.stderr,
        )
        return 1
    verb = "checked" if args.check else "rendered"
    rewrote = f"; rewrote {', '.join(differ)}" if differ and not args.check else ""
    print(f"render-figures: {verb} {blocks} blocks in {len(docs)} documents{rewrote}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
