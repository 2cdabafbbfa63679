#!/usr/bin/env python3
"""Checks that a document's flag table gives the defaults the program itself prints.

    flag_defaults_test.py DOC.md "HEADING TEXT" -- PROGRAM [ARGS...]

The table is the first one after the heading that contains HEADING TEXT whose first two
columns are a flag column and "Default". PROGRAM --help is read as CLI11 prints it
(`--epochs INT:POSITIVE=5`, or `(default: ...)` in the description) or as argparse does
(`(default: 64)` in the description). For every flag in the table:

- the program must know the flag;
- where the program prints a default, the table's must equal it: as text or as a number,
  and where it is described in words, word for word and number for number, punctuation
  aside (`0.01 (sgd), 0.001 (adam)` matches `(default: 0.01 sgd, 0.001 adam)`);
- where it prints none, the table may only describe one in words (`none`, `all`,
  `cores / ranks`): a number there is a default nobody can see, so it fails.
An empty Default cell says nothing and is skipped. Prints one line per flag and exits 1
on any difference, naming the flag, the document's value and the program's.
"""
import re
import subprocess
import sys

FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def cells_of(row):
    """A Markdown table row's cells; `\\|` inside a cell is a literal bar."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def read_table(doc, heading):
    """{flag: default cell text} from the first flag table after the heading."""
    lines, fenced = [], False
    for line in open(doc, encoding="utf-8").read().splitlines():
        fenced ^= line.startswith("```")
        lines.append("" if fenced or line.startswith("```") else line)  # a `#` in code is no heading
    start = next((i for i, line in enumerate(lines) if line.startswith("#") and heading in line), None)
    if start is None:
        sys.exit(f"{doc}: no heading contains {heading!r}")
    rows = None
    for line in lines[start + 1:]:
        if rows is None:
            cells = cells_of(line)
            if line.startswith("|") and len(cells) >= 2 and "flag" in cells[0].lower() and cells[1] == "Default":
                rows = {}
            elif line.startswith("#"):
                break
            continue
        if not line.startswith("|"):
            break
        cells = cells_of(line)
        if set(cells[0]) <= set("-: "):
            continue  # the |---|---| line
        flags = FLAG.findall(cells[0])
        values = [v.strip() for v in cells[1].split(",")] if len(flags) > 1 else [cells[1]]
        if len(flags) > 1 and len(values) != len(flags):
            values = [cells[1]] * len(flags)  # one default for all of them ("all")
        for flag, value in zip(flags, values):
            rows[flag] = value.replace("`", "").strip()
    if not rows:
        sys.exit(f"{doc}: no flag table (| Flag | Default | ...) after the heading {heading!r}")
    return rows


def read_help(command):
    """{flag: (default or None, whether it came as free text)} from PROGRAM --help."""
    out = subprocess.run(command + ["--help"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        sys.exit(f"{' '.join(command)} --help exited {out.returncode}:\n{out.stderr}")
    blocks = {}
    aliases = {}  # CLI11 prints an option's other names after a comma: --min-np,--min-num-proc
    current = None
    for line in out.stdout.splitlines():
        m = re.match(r"^\s{1,4}(?:-\w, ?)?(--[a-z0-9][a-z0-9-]*)((?:,--[a-z0-9][a-z0-9-]*)*)(.*)$", line)
        if m:
            current = m.group(1)
            blocks[current] = m.group(3)
            for alias in m.group(2).split(",")[1:]:
                aliases[alias] = current
        elif current and line.startswith("      "):
            blocks[current] += "  " + line.strip()  # a gap, as between type and description
        else:
            current = None
    parsed = {}
    for flag, text in blocks.items():
        # The flag's type sits one space after it (CLI11 `INT:POSITIVE=5`, argparse `BATCH`);
        # its description comes after a wider gap.
        signature = re.split(r"\s{2,}", text.strip())[0] if re.match(r"^ \S", text) else ""
        typed = re.search(r"=(\S+)$", signature)  # CLI11's TYPE=DEFAULT
        spelled = re.search(r"\(default: ([^)]*)\)", " ".join(text.split()))
        if typed:
            parsed[flag] = (typed.group(1), False)
        elif spelled:
            parsed[flag] = (spelled.group(1).strip(), True)
        else:
            parsed[flag] = (None, False)
    for alias, flag in aliases.items():
        parsed[alias] = parsed[flag]
    return parsed


def numbers(text):
    return [float(n) for n in NUMBER.findall(text)]


def words(text):
    """The words and numbers of a description, numbers as values: `1.0 (adadelta)` and
    `1 adadelta` read alike, and so do `cores ÷ ranks` and `cores / ranks`."""
    out = []
    for token in re.findall(NUMBER.pattern + r"|[A-Za-z]+", text):
        out.append(float(token) if token[-1].isdigit() else token.lower())
    return out


def same_words(doc_value, program_value):
    return words(doc_value) == words(program_value)


def same(doc_value, program_value):
    if doc_value == program_value:
        return True
    try:
        return float(doc_value) == float(program_value)
    except ValueError:
        return False


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit(__doc__)
    doc, heading, command = sys.argv[1], sys.argv[2], sys.argv[4:]
    table = read_table(doc, heading)
    program = read_help(command)
    failures = 0
    for flag, documented in table.items():
        if flag not in program:
            print(f"FAIL {flag}: in {doc} but not in {command[-1]} --help")
            failures += 1
            continue
        printed, free_text = program[flag]
        if not documented:
            ok, why = True, "not stated in the document"
        elif printed is None:
            ok, why = not numbers(documented), "the program prints no default"
        elif free_text and " " in printed:  # a default described in words and numbers
            ok, why = same_words(documented, printed), f"program: (default: {printed})"
        else:
            ok, why = same(documented, printed), f"program: {printed}"
        print(f"{'ok  ' if ok else 'FAIL'} {flag}: document {documented!r}; {why}")
        failures += not ok
    print(f"{len(table) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
