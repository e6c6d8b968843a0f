#!/usr/bin/env python3
"""Runs the marked command blocks of a Markdown file (README.md's tour) against a built mnv2, so the tour cannot rot.

A block is a ```console fence right after a marker line:
    <!-- test: cpu -->      run here, with the CPU backends (every such block, in order, in one scratch folder)
    <!-- test: gpu -->      needs an NVIDIA GPU: skipped, saying so (run with --kinds cpu,gpu on a GPU machine)
    <!-- test: remote -->   needs a remote host: skipped, saying so
Every ```console block must carry a marker: one without fails the test, so no block of the tour escapes it.

In a block, a line starting with "$ " is a command (a trailing backslash continues it on the next line); the lines
after it, up to the next command, are output the command must print: each must match some line of its standard
output or error, where "..." stands for any text and a run of spaces for any run of spaces; a line of just "..."
is skipped. Each command must exit 0. Commands run in bash (pipefail) in SCRATCH/run, where ../shared is the shared
folder and `mnv2` on the PATH is the program under test; HOME and the XDG folders point into the scratch folder, and
no MNV2_* variable of the caller's environment reaches them (a block sets what it needs, e.g. `export MNV2_MODEL=`).

    python3 tests/docs/run_readme_blocks.py --mnv2 build/app/mnv2 --shared ../shared README.md
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*test:\s*([a-z]+)\s*-->\s*$")
KINDS = {"cpu": None, "gpu": "needs an NVIDIA GPU", "remote": "needs a remote host reached over ssh"}
COMMAND_TIMEOUT_S = 600


class Block:
    def __init__(self, kind, line, body):
        self.kind, self.line, self.body = kind, line, body


def blocks_of(path):
    """Every ```console block with its marker; a block without one is an error naming its line."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, errors, i = [], [], 0
    fence = None  # the fence of a code block being skipped
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*(\S*)", line)
        if fence is None and m:
            info = m.group(3)
            if info == "console":
                j = i - 1
                while j >= 0 and not lines[j].strip():
                    j -= 1
                mk = MARKER.match(lines[j].strip()) if j >= 0 else None
                end = i + 1
                while end < len(lines) and not lines[end].strip().startswith(m.group(2)):
                    end += 1
                body = lines[i + 1:end]
                if not mk:
                    errors.append(f"{path}:{i + 1}: a ```console block without a '<!-- test: cpu|gpu|remote -->' marker")
                elif mk.group(1) not in KINDS:
                    errors.append(f"{path}:{j + 1}: unknown test marker '{mk.group(1)}' (cpu, gpu or remote)")
                else:
                    blocks.append(Block(mk.group(1), i + 1, body))
                i = end + 1
                continue
            fence = m.group(2)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        i += 1
    return blocks, errors


def commands_of(block):
    """[(command, [expected output lines])] of a block."""
    out, cmd, expect = [], None, []
    lines = iter(block.body)
    for line in lines:
        if line.startswith("$ "):
            if cmd is not None:
                out.append((cmd, expect))
            cmd, expect = line[2:], []
            while cmd.endswith("\\"):
                cmd = cmd[:-1] + " " + next(lines, "").strip()
        elif cmd is None:
            if line.strip():
                raise ValueError(f"line {block.line}: output before the first '$ ' command: {line!r}")
        elif line.strip() and line.strip() != "...":
            expect.append(line.strip())
    if cmd is not None:
        out.append((cmd, expect))
    return out


def pattern(expected):
    parts = [re.sub(r"(\\ )+", r"\\s+", re.escape(p)) for p in expected.split("...")]
    return re.compile(".*".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mnv2", required=True, help="the mnv2 program under test")
    ap.add_argument("--shared", required=True, help="the shared folder (models, images, golden outputs)")
    ap.add_argument("--kinds", default="cpu", help="which marked blocks to run (default cpu; gpu on a GPU machine)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder and print its path")
    ap.add_argument("markdown")
    a = ap.parse_args()
    run_kinds = set(a.kinds.split(","))
    if not os.path.isfile(os.path.join(a.shared, "weights", "mobilenet_v2_1.0_224.onnx")):
        print(f"SKIP: no shared model in {a.shared} (the tour runs with ../shared beside the clone)")
        return 0
    blocks, errors = blocks_of(a.markdown)
    for e in errors:
        print("FAIL:", e)
    if not any(b.kind == "cpu" for b in blocks):
        errors.append("no block marked <!-- test: cpu -->")
        print(f"FAIL: {a.markdown} has no block marked <!-- test: cpu -->")

    scratch = tempfile.mkdtemp(prefix="mnv2-readme-")
    failed = bool(errors)
    try:
        os.symlink(os.path.abspath(a.shared), os.path.join(scratch, "shared"))
        os.makedirs(os.path.join(scratch, "bin"))
        os.symlink(os.path.abspath(a.mnv2), os.path.join(scratch, "bin", "mnv2"))
        run_dir = os.path.join(scratch, "run")
        os.makedirs(run_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MNV2_", "XDG_"))}
        env.update(HOME=os.path.join(scratch, "home"), XDG_CACHE_HOME=os.path.join(scratch, "home", ".cache"),
                   XDG_CONFIG_HOME=os.path.join(scratch, "home", ".config"),
                   XDG_DATA_HOME=os.path.join(scratch, "home", ".local", "share"),
                   PATH=os.path.join(scratch, "bin") + os.pathsep + env.get("PATH", "/usr/bin:/bin"))
        os.makedirs(env["HOME"])
        exports = []  # `export NAME=VALUE` lines of earlier commands, replayed before each later one
        ran = 0
        for b in blocks:
            if b.kind not in run_kinds:
                print(f"SKIP: {a.markdown}:{b.line}: a '{b.kind}' block ({KINDS[b.kind]})")
                continue
            for cmd, expect in commands_of(b):
                ran += 1
                script = "\n".join(exports + [cmd])
                try:
                    p = subprocess.run(["bash", "-o", "pipefail", "-c", script], cwd=run_dir, env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT_S)
                    output, rc = p.stdout.decode("utf-8", "replace"), p.returncode
                except subprocess.TimeoutExpired as t:
                    output, rc = (t.stdout or b"").decode("utf-8", "replace"), f"timed out after {COMMAND_TIMEOUT_S} s"
                out_lines = output.splitlines()
                missing = [e for e in expect if not any(pattern(e).search(l) for l in out_lines)]
                if rc != 0 or missing:
                    failed = True
                    print(f"FAIL: {a.markdown}:{b.line}: $ {cmd}")
                    if rc != 0:
                        print(f"  exit status {rc} (expected 0)")
                    for e in missing:
                        print(f"  no output line matches: {e}")
                    print("  its output (last 40 lines):")
                    for l in out_lines[-40:]:
                        print("    " + l)
                else:
                    print(f"ok:   {a.markdown}:{b.line}: $ {cmd}")
                if re.match(r"^export [A-Za-z_][A-Za-z0-9_]*=", cmd):
                    exports.append(cmd)
        print(f"{ran} commands run, {'some FAILED' if failed else 'all passed'}")
    finally:
        if a.keep:
            print("scratch folder kept:", scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
