#!/usr/bin/env python3
"""Checks the documents a newcomer reads: README.md is at most --max-readme-lines long, and every relative link and
image of README.md and docs/*.md resolves: the file (or folder) exists, and a '#anchor' names a heading of the
Markdown file it points into (GitHub's anchors: the heading's text in lower case, punctuation dropped, spaces as
'-', '-1', '-2' for repeats) or an explicit <a name/id>. Links inside code blocks and code spans are not links.

    python3 tests/docs/check_docs.py --root . [--max-readme-lines 250]
"""
import argparse
import glob
import os
import re
import sys

LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def strip_code(text, spans=True):
    """The text with fenced code blocks (and inline code spans, unless spans=False) blanked, line numbers kept."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append("")
        else:
            out.append(re.sub(r"(`+)(.+?)\1", "", line) if spans else line)
    return "\n".join(out)


def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays, its target goes
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").strip().lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        for line in strip_code(open(path, encoding="utf-8").read(), spans=False).split("\n"):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
            for a in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                found.add(a)
        cache[path] = found
    return cache[path]


def check_links(path, root):
    problems = []
    text = strip_code(open(path, encoding="utf-8").read())
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
            continue
        line = text.count("\n", 0, m.start()) + 1
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        where = f"{os.path.relpath(path, root)}:{line}: ({target})"
        if not os.path.exists(dest):
            problems.append(f"{where} names {os.path.relpath(dest, root)}, which does not exist")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            problems.append(f"{where} names #{anchor}, no heading of {os.path.relpath(dest, root)}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the repository's root")
    ap.add_argument("--max-readme-lines", type=int, default=250)
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    readme = os.path.join(root, "README.md")
    problems = []
    n = len(open(readme, encoding="utf-8").read().splitlines())
    if n > a.max_readme_lines:
        problems.append(f"README.md has {n} lines; at most {a.max_readme_lines}: move detail into docs/")
    files = [readme] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for f in files:
        problems += check_links(f, root)
    for p in problems:
        print("FAIL:", p)
    print(f"README.md: {n} lines (at most {a.max_readme_lines}); links checked in {len(files)} files: "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
