#!/usr/bin/env python3
"""Every folder of the repository is on the maps.

    every_folder_test.py <source dir>

docs/architecture.md's "Every folder" table must name every folder that holds tracked
files, to two levels (`a/` or `a/b/` in a row's first cell, or `b/` in the text of the
row for `a/`), and the README's "Layout" table every top-level folder. Tracked files are
`git ls-files`'s; without git (a source tarball), the files under the source folder, build
folders (those with a CMakeCache.txt) and hidden folders other than .ci left out.
"""
import os
import re
import subprocess
import sys


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for here, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if (not d.startswith(".") or d == ".ci") and d != "__pycache__"
                       and not os.path.exists(os.path.join(here, d, "CMakeCache.txt"))]
            files += [os.path.relpath(os.path.join(here, n), root) for n in names]
        return files


def folders(files, depth):
    """The folders of exactly `depth` levels that hold a file (directly or below)."""
    out = set()
    for f in files:
        parts = f.split("/")[:-1]
        if len(parts) >= depth:
            out.add("/".join(parts[:depth]))
    return out


def table_rows(document, heading):
    """The rows (lists of cells) of the first table under `heading`."""
    text = open(document, encoding="utf-8").read()
    start = text.find("\n" + heading + "\n")
    if start < 0:
        sys.exit(f"{document}: no heading {heading!r}")
    rows, in_table = [], False
    for line in text[start + len(heading) + 2:].splitlines():
        if line.startswith("|"):
            in_table = True
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not set(cells[0]) <= set("-: "):
                rows.append(cells)
        elif in_table or line.startswith("#"):
            break
    return rows[1:]  # past the header row


def spans(cell):
    return set(re.findall(r"`([^`]+)`", cell))


def main():
    root = sys.argv[1]
    files = tracked_files(root)
    failures, checks = [], 0

    rows = table_rows(os.path.join(root, "docs/architecture.md"), "## Every folder")
    named = {}  # folder named in a first cell -> the row's other text
    for row in rows:
        for span in spans(row[0]):
            named[span.rstrip("/")] = " ".join(row[1:])
    for top in sorted(folders(files, 1)):
        checks += 1
        if not any(n == top or n.startswith(top + "/") for n in named):
            failures.append(f"docs/architecture.md, Every folder: no row for `{top}/`")
    for folder in sorted(folders(files, 2)):
        checks += 1
        parent, child = folder.split("/")
        if folder not in named and not (parent in named and f"`{child}/`" in named[parent]):
            failures.append(f"docs/architecture.md, Every folder: `{folder}/` is in no row (nor `{child}/` in `{parent}/`'s)")

    layout = set()
    for row in table_rows(os.path.join(root, "README.md"), "## Layout"):
        layout |= {s.rstrip("/").split("/")[0] for s in spans(row[0])}
    for top in sorted(folders(files, 1)):
        checks += 1
        if top not in layout:
            failures.append(f"README.md, Layout: no row for `{top}/`")

    for f in failures:
        print("FAIL:", f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
