#!/usr/bin/env python3
"""The code's shape, held in CI: no function over 80 lines in the glue (`src/actix/`), no
source file over 400 lines of code (comments, blank lines and tests left out), and no module
of a crate that imports one importing it back (a module holds what its submodules import;
a submodule's use of the modules around it is its own).
Prints what breaks a rule and exits 1; prints the figures and exits 0 otherwise."""

import os
import re
import sys

MOST_FN_LINES = 80
MOST_FILE_LINES = 400
CRATES = ["src", "limiter-core/src", "limiter-http/src", "limiter-macros/src"]


def strip(text):
    """Comments and the contents of string and char literals removed, lines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i)
            j = n if j < 0 else j + 2
            out.append("\n" * text[i:j].count("\n"))
            i = j
            continue
        raw = re.match(r'b?r(#*)"', text[i:i + 10])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + raw.group(1)
            j = text.find(end, i + len(raw.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text[i:j].count("\n"))
            i = j
            continue
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text[i:j + 1].count("\n"))
            i = j + 1
            continue
        if c == "'":
            lit = re.match(r"'(\\.|[^'\\])'", text[i:i + 6]) or re.match(
                r"'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12])
            if lit:
                out.append("''")
                i += len(lit.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def before_tests(text):
    cut = text.find("#[cfg(test)]")
    return text if cut < 0 else text[:cut]


def code_lines(path):
    return sum(1 for line in strip(before_tests(open(path).read())).split("\n") if line.strip())


FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def long_functions(path):
    lines = strip(open(path).read()).split("\n")
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, opened, j = 0, False, i
        while j < len(lines):
            for ch in lines[j]:
                if ch == "{":
                    depth, opened = depth + 1, True
                elif ch == "}":
                    depth -= 1
            if opened and depth == 0:
                break
            if not opened and lines[j].rstrip().endswith(";"):
                break
            j += 1
        if opened and j - i + 1 > MOST_FN_LINES:
            yield m.group(6), i + 1, j - i + 1


def modules(root):
    found = {}
    for folder, _, files in os.walk(root):
        if "bin" in folder.split(os.sep):
            continue
        for name in files:
            if name.endswith(".rs"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, root)[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib"):
                    parts = parts[:-1]
                found[tuple(parts)] = path
    return found


def reexports(root):
    names = {}
    text = open(os.path.join(root, "lib.rs")).read()
    for m in re.finditer(r"pub use ((?:crate::)?[\w:]+)::\{([^}]*)\};", text):
        for name in re.findall(r"\w+", m.group(2)):
            names[name] = m.group(1).replace("crate::", "").split("::")
    for m in re.finditer(r"pub use ((?:crate::)?[\w:]+)::(\w+);", text):
        names[m.group(2)] = m.group(1).replace("crate::", "").split("::")
    return names


def resolve(mods, names, current, path):
    segs = path.split("::")
    if segs[0] == "crate":
        segs = segs[1:]
        if segs and segs[0] in names:
            segs = names[segs[0]] + segs
        base = []
    elif segs[0] == "super":
        base = list(current)
        if not mods[current].endswith(("mod.rs", "lib.rs")):
            base = base[:-1]
        while segs and segs[0] == "super":
            base, segs = base[:-1], segs[1:]
    elif segs[0] == "self":
        base, segs = list(current), segs[1:]
    else:
        return None
    full = base + segs
    for k in range(len(full), 0, -1):
        if tuple(full[:k]) in mods:
            return tuple(full[:k])
    return None


def within(inner, outer):
    """Whether module `inner` is `outer` or one of its submodules."""
    return inner[:len(outer)] == outer


def imports(root):
    mods, names = modules(root), reexports(root)
    # A module holds its submodules: what they import, it imports. What a submodule takes
    # from the modules around it (`super::`) is its own.
    edges = {m: {c for c in mods if len(c) == len(m) + 1 and within(c, m)} for m in mods}
    for m, path in mods.items():
        text = "\n".join(l for l in before_tests(open(path).read()).split("\n")
                         if not l.strip().startswith(("//", "#[doc")))
        paths = re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text)
        for group in re.finditer(r"use\s+(crate|super|self)::\{([^;]*)\};", text, re.S):
            paths += [group.group(1) + "::" + p for p in re.findall(r"\b(\w+(?:::\w+)*)", group.group(2))]
        for p in paths:
            target = resolve(mods, names, m, p)
            if target and not within(m, target) and not within(target, m):
                edges[m].add(target)
    return edges


def circles(edges):
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10_000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted("::".join(g) for g in group))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    broken, files, longest = [], 0, (0, "")
    for crate in CRATES:
        root = os.path.join(here, crate)
        for folder, _, names in os.walk(root):
            for name in names:
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, here)
                lines = code_lines(path)
                files += 1
                longest = max(longest, (lines, rel))
                if lines > MOST_FILE_LINES:
                    broken.append(f"{rel}: {lines} lines of code (at most {MOST_FILE_LINES})")
                if rel.startswith("src/actix/"):
                    for fn, at, length in long_functions(path):
                        broken.append(f"{rel}:{at}: fn {fn} is {length} lines (at most {MOST_FN_LINES})")
        if crate != "src" or os.path.exists(os.path.join(root, "lib.rs")):
            for group in circles(imports(root)):
                broken.append(f"{crate}: modules import each other in a circle: {', '.join(group)}")
    if broken:
        print("\n".join(broken))
        sys.exit(1)
    print(f"shape: {files} files, the longest {longest[1]} ({longest[0]} lines of code); "
          f"no function over {MOST_FN_LINES} lines in src/actix; no import circle")


main()
