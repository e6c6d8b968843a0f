#!/usr/bin/env python3
# The report schemas (resources/schemas) hold what they promise: reports mnv2 writes on the CPU backends, the GPU
# reports kept in docs/ and the deep dive's JSON kept in tests/data/ncu validate; one wrong field (a changed type, an
# unknown field, a dropped required field) in each of them fails validation; every object of every schema is closed
# (additionalProperties or unevaluatedProperties false) and every property has a description; docs/REPORTS.md is
# what scripts/reports-doc.py makes of the schemas, and its exit codes are the man page's.
# usage: test_schemas.py --mnv2 PATH --model ONNX
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("validate_reports", os.path.join(ROOT, "scripts", "validate-reports.py"))
vr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vr)
spec = importlib.util.spec_from_file_location("reports_doc", os.path.join(ROOT, "scripts", "reports-doc.py"))
rd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rd)

failures = []


def expect(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def problems(store, doc, suffix=".json"):
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    try:
        return vr.check_file(store, f.name)
    finally:
        os.unlink(f.name)


def walk(doc, path):
    for key in path:
        doc = doc[key]
    return doc


# The three mutations of one object member: its type changed, a field beside it that no schema names, and
# (where the schema requires it) the member dropped.
def mutate(store, name, doc, path, key, required=True):
    name_found, errs = problems(store, doc)
    expect(name_found == name and not errs, f"{name}: the unmodified report is valid {errs[:3]}")
    value = walk(doc, path)[key]
    wrong = "a string" if not isinstance(value, str) else 12345
    for what, change in (("changed type", lambda o: o.__setitem__(key, wrong)),
                         ("unknown field", lambda o: o.__setitem__("no_such_field", 1)),
                         ("dropped", lambda o: o.pop(key))):
        if what == "dropped" and not required:
            continue
        bad = copy.deepcopy(doc)
        change(walk(bad, path))
        _, errs = problems(store, bad)
        expect(bool(errs), f"{name}: {'/'.join(map(str, path + [key]))} {what} fails validation ({errs[:1]})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mnv2", required=True)
    p.add_argument("--model", required=True)
    a = p.parse_args()
    a.mnv2 = os.path.abspath(a.mnv2)
    store = vr.load_schemas(os.path.join(ROOT, "resources", "schemas"))

    # Every object closed, every property described.
    def lint(node, where):
        if isinstance(node, dict):
            if node.get("type") == "object" or (isinstance(node.get("type"), list) and "object" in node["type"]):
                closed = node.get("additionalProperties") is False or node.get("unevaluatedProperties") is False
                closed = closed or isinstance(node.get("additionalProperties"), dict)  # a map: its values closed
                closed = closed or ("properties" in node and "required" in node and where.endswith("layer_properties"))
                expect(closed, f"{where}: the object is closed")
            for key, prop in node.get("properties", {}).items():
                expect("description" in prop, f"{where}/{key}: has a description")
            for key, value in node.items():
                lint(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                lint(value, f"{where}[{i}]")
    for name, schema in store.items():
        lint(schema, name)

    with tempfile.TemporaryDirectory() as tmp:
        run = lambda *args: subprocess.run([a.mnv2, *args, "--model", a.model], cwd=tmp, check=True,
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        run("compare", "--backends", "cpu-ref,cpu", "--iters", "1", "--warmup", "0", "--json", "c.json",
            "--csv", "c.csv", "--trace", "t.json")
        run("bench", "--backend", "cpu-ref", "--iters", "1", "--warmup", "0", "--json", "b.json", "--csv", "b.csv")
        run("memory", "--backend", "cpu", "--json", "m.json", "--csv", "m.csv")
        info = json.loads(run("info", "--json").stdout)
        # The targets list of a targets file of this test's own (ssh never started: `targets add` asks ssh -G only).
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "config"), MNV2_SSH="false")
        targets = lambda *args: subprocess.run([a.mnv2, "targets", *args], cwd=tmp, check=True, env=env,
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        targets("add", "lab", "user@lab.example.org:2222")
        targets("add", "cluster", "login.example.org", "--slurm-partition", "gpu", "--slurm-gres", "gpu:1",
                "--slurm-arg=--exclusive", "--setup", "module load cuda")
        target_list = json.loads(targets("list", "--json").stdout)
        # The targets file itself (what `targets add` wrote): an SSH target with a port, a Slurm one with a setup line.
        targets_file = json.load(open(os.path.join(tmp, "config", "mnv2-profiler", "targets.json")))
        mutate(store, "mnv2.targets-file.schema.json", targets_file, ["targets", 0], "port", required=False)
        mutate(store, "mnv2.targets-file.schema.json", targets_file, ["targets", 0], "host")
        mutate(store, "mnv2.targets-file.schema.json", targets_file, ["targets", 1, "slurm"], "pending_timeout_s",
               required=False)
        # (schema_version and targets are how the validator knows the file: dropping either leaves no targets file.)
        mutate(store, "mnv2.targets-file.schema.json", targets_file, [], "schema_version", required=False)
        load = lambda f: json.load(open(os.path.join(tmp, f)))
        report, bench, memory, trace = load("c.json"), load("b.json"), load("m.json"), load("t.json")
        mutate(store, "mnv2.report.schema.json", report, ["runs", 0, "metadata"], "batch")
        mutate(store, "mnv2.report.schema.json", report, ["runs", 0, "layers", 3], "macs")
        mutate(store, "mnv2.report.schema.json", report, ["runs", 1, "diff"], "top5_agree")
        mutate(store, "mnv2.report.schema.json", report, ["runs", 0, "steps", 0, "time"], "median_ns")
        mutate(store, "mnv2.bench.schema.json", bench, ["results", 0], "images_per_s")
        mutate(store, "mnv2.bench.schema.json", bench, ["results", 0, "memory"], "weight_bytes")
        mutate(store, "mnv2.memory.schema.json", memory, ["layers", 0], "weight_tensors")
        mutate(store, "mnv2.trace.schema.json", trace, ["traceEvents", 4], "dur")
        mutate(store, "mnv2.info.schema.json", info, [], "commit")
        mutate(store, "mnv2.info.schema.json", info, ["build", "gpu_plugin"], "loaded")
        mutate(store, "mnv2.info.schema.json", info, ["cpu"], "threads")
        mutate(store, "mnv2.info.schema.json", info, ["backends", 0], "precisions")
        mutate(store, "mnv2.info.schema.json", info, ["model", "file", "input"], "shape")
        mutate(store, "mnv2.targets.schema.json", target_list, [], "targets_file")
        mutate(store, "mnv2.targets.schema.json", target_list, ["targets", 0], "description")

        # A CSV: the unmodified file valid; a renamed column, a dropped column and a text cell in a number column
        # each invalid.
        for f in ("c.csv", "b.csv", "m.csv"):
            text = open(os.path.join(tmp, f)).read()
            name, errs = problems(store, text, ".csv")
            expect(name is not None and not errs, f"{f}: valid ({name}) {errs[:2]}")
            header, rest = text.split("\n", 1)
            cols = header.split(",")
            renamed = ",".join(cols[:2] + ["no_such_column"] + cols[3:]) + "\n" + rest
            expect(bool(problems(store, renamed, ".csv")[1]), f"{f}: a renamed column fails validation")
            dropped = ",".join(cols[:-1]) + "\n" + "\n".join(r.rsplit(",", 1)[0] for r in rest.splitlines()) + "\n"
            expect(bool(problems(store, dropped, ".csv")[1]), f"{f}: a dropped column fails validation")
            first = rest.splitlines()[0].split(",")
            ints = [i for i, c in enumerate(cols) if "integer" in str(store[name]["properties"][c]["type"])]
            first[ints[-1]] = "many"
            wrong = header + "\n" + ",".join(first) + "\n"
            expect(bool(problems(store, wrong, ".csv")[1]), f"{f}: text in the integer column {cols[ints[-1]]} fails")

    # GPU-only fields: a remote cuda run under CUPTI kept in docs/ (kernel records, the GPU record, event times,
    # the target, resolved options).
    gpu = os.path.join(ROOT, "docs", "bench", "h200x2-2026-11-29-remote", "h200_dev0_b1.json")
    expect(os.path.exists(gpu), f"the GPU report {gpu} is there (moved? point this test at its new place)")
    doc = json.load(open(gpu)) if os.path.exists(gpu) else None
    if doc is None:
        print(f"{len(failures)} failure(s)")
        return 1
    mutate(store, "mnv2.report.schema.json", doc, ["runs", 0, "timeline", "records", 0], "correlation")
    mutate(store, "mnv2.report.schema.json", doc, ["runs", 0, "metadata", "gpu"], "pci_bus_id")
    mutate(store, "mnv2.report.schema.json", doc, ["runs", 0, "metadata", "target"], "host")
    event = next(i for i, step in enumerate(doc["runs"][0]["steps"]) if "event_time" in step)
    mutate(store, "mnv2.report.schema.json", doc, ["runs", 0, "steps", event, "event_time"], "p99_ns")
    mutate(store, "mnv2.report.schema.json", doc, ["runs", 0, "steps", event], "event_time", required=False)

    # A real probe of a GPU target kept in docs/ (targets probe --json; an answer, then a failure beside it), and a
    # deep dive's JSON (tests/data/ncu/deep_dive.json: what the unit test DeepDive.TheJsonOfAStudysResultIsWritten
    # writes from the ncu fixtures; the deep dive needs a GPU, so this test cannot make one).
    probe = json.load(open(os.path.join(ROOT, "docs", "bench", "h200x2-2026-11-29-remote", "probe.json")))
    mutate(store, "mnv2.targets-probe.schema.json", probe, [0], "host")
    mutate(store, "mnv2.targets-probe.schema.json", probe, [0, "gpus", 0], "memory_bytes")
    mutate(store, "mnv2.targets-probe.schema.json", probe, [0, "backends", 2], "available")
    probe.append({"target": "down", "ok": False, "error": "down: ssh: connect to host down port 22: Connection refused"})
    mutate(store, "mnv2.targets-probe.schema.json", probe, [1], "error")
    dive = json.load(open(os.path.join(ROOT, "tests", "data", "ncu", "deep_dive.json")))
    mutate(store, "mnv2.deep_dive.schema.json", dive, [], "step")
    mutate(store, "mnv2.deep_dive.schema.json", dive, ["total"], "duration_ns")
    mutate(store, "mnv2.deep_dive.schema.json", dive, ["kernels", 0], "occupancy_limiter")
    mutate(store, "mnv2.deep_dive.schema.json", dive, ["kernels", 0, "stalls", 0], "warps_per_issue")

    # The exit codes docs/REPORTS.md lists are the man page's EXIT STATUS, entry by entry.
    page = subprocess.run([a.mnv2, "man"], check=True, stdout=subprocess.PIPE, text=True).stdout
    section = page.split(".SH EXIT STATUS\n", 1)[-1].split(".SH ", 1)[0]
    entries = [e.split("\n", 2)[:2] for e in section.split(".TP\n")[1:]]
    listed = [(c, m.replace("\\-", "-")) for c, m in entries]
    expect(listed == rd.EXIT_CODES, f"the man page's EXIT STATUS {listed} is REPORTS.md's exit status table")

    # docs/REPORTS.md is the generator's output.
    with open(os.path.join(ROOT, "docs", "REPORTS.md"), encoding="utf-8") as f:
        expect(f.read() == rd.render(store), "docs/REPORTS.md is what scripts/reports-doc.py makes of the schemas "
               "(run scripts/reports-doc.py --write)")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
