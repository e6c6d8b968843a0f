#!/usr/bin/env python3
"""Writes (or checks) the generated reference in docs/CLI.md: `mnv2 --help` and `mnv2 COMMAND --help` of every
command `mnv2 --help` lists, between the markers `<!-- cli-reference: ... -->` and `<!-- /cli-reference -->`.

    python3 scripts/cli-reference.py --mnv2 build/app/mnv2 --write docs/CLI.md   # regenerate
    python3 scripts/cli-reference.py --mnv2 build/app/mnv2 --check docs/CLI.md   # exit 1 when they differ

The help text comes from the commands' declarations and the engine's option table, so the reference cannot
drift from the program: the test `docs_cli_reference` runs --check, which also fails when the hand-written
synopsis under '## Commands' has no `mnv2 NAME` line for a command the program has.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys

BEGIN = re.compile(r"^<!-- cli-reference:.*-->$", re.M)
END = "<!-- /cli-reference -->"


def help_of(mnv2, args):
    # The help must not depend on who runs it: no model lookup, no environment variable of the option table.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNV2_")}
    p = subprocess.run([mnv2, *args, "--help"], capture_output=True, text=True, env=env, timeout=60)
    if p.returncode != 0:
        sys.exit(f"cli-reference: '{' '.join(['mnv2', *args, '--help'])}' exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout.rstrip()


def commands(top_help):
    # "Subcommands:" then one "  NAME   description" line per command, in the dispatcher's order.
    part = top_help.split("Subcommands:", 1)
    if len(part) != 2:
        sys.exit("cli-reference: 'mnv2 --help' lists no 'Subcommands:'")
    names = []
    for line in part[1].splitlines():
        m = re.match(r"^  (\S+)\s{2,}\S", line)
        if m:
            names.append(m.group(1))
        elif line.strip() == "" and names:
            break
    if not names:
        sys.exit("cli-reference: no command found under 'Subcommands:' in 'mnv2 --help'")
    return names


def reference(mnv2):
    top = help_of(mnv2, [])
    out = ["### `mnv2 --help`", "", "```text", top, "```"]
    for name in commands(top):
        out += ["", f"### `mnv2 {name} --help`", "", "```text", help_of(mnv2, [name]), "```"]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mnv2", required=True, help="the mnv2 program")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="MD", help="replace the section between the markers of this file")
    mode.add_argument("--check", metavar="MD", help="exit 1 when the section differs from the program's help")
    a = ap.parse_args()
    path = a.write or a.check
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    b = BEGIN.search(doc)
    e = doc.find(END, b.end() if b else 0)
    if not b or e < 0:
        sys.exit(f"cli-reference: {path} has no '<!-- cli-reference: ... -->' ... '{END}' markers")
    current = doc[b.end():e].strip("\n")
    fresh = reference(a.mnv2)
    if a.write:
        new = doc[: b.end()] + "\n" + fresh + "\n" + doc[e:]
        if new != doc:
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(new)
            os.replace(tmp, path)
        print(f"cli-reference: {path} {'updated' if new != doc else 'already current'}")
        return 0
    # The hand-written synopsis ("## Commands") must name every command the program has (the audit found plan,
    # memory and roofline missing from it).
    names = commands(help_of(a.mnv2, []))
    m = re.search(r"^## Commands\n(.*?)^## ", doc, re.M | re.S)
    synopsis = m.group(1) if m else ""
    missing = [n for n in names if not re.search(rf"^mnv2 {re.escape(n)}\b", synopsis, re.M)]
    if missing:
        print(f"cli-reference: the '## Commands' synopsis of {path} has no line 'mnv2 NAME ...' for: "
              + ", ".join(missing), file=sys.stderr)
        return 1
    if current != fresh:
        diff = difflib.unified_diff(current.splitlines(), fresh.splitlines(), f"{path} (documented)",
                                    "the program's --help", lineterm="", n=1)
        print("\n".join(diff))
        print(f"cli-reference: {path} disagrees with the program's help; regenerate it with\n"
              f"  python3 scripts/cli-reference.py --mnv2 PATH/TO/mnv2 --write {path}", file=sys.stderr)
        return 1
    print(f"cli-reference: {path} matches the help of {len(names)} commands, and its synopsis names each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
