#!/usr/bin/env python3
"""Report import loops between the top-level modules of Rust crates.

Usage: scripts/check-import-loops.py CRATE_DIR [CRATE_DIR ...]

A CRATE_DIR is a crate's directory (with a `src/`) or its `src/` itself.
Module `a` depends on module `b` when code of `a` names `crate::b`
(also inside a grouped `use crate::{b, c::d}`) or reaches `b` through
`super::` paths that leave `a`. Comments, string literals and code under
`#[cfg(test)]` (items and `#[cfg(test)] mod x;` files) are ignored: tests
may look at anything.

Prints every strongly connected component with more than one module, with
one cycle through it and, for each step, a place that makes it. Exits 1
when a crate has a loop, 2 on bad usage, 0 otherwise.
"""

import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip_code(src):
    """Blank out comments and string/char literals, keeping line breaks so
    line numbers stay right."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 300]) and not (
            i and (src[i - 1].isalnum() or src[i - 1] == "_")
        ):
            hashes = re.match(r"r(#*)\"", src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + "\n" * src.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            m = re.match(r"'(\\.[^']*|[^'\\])'", src[i:i + 12])
            if m:
                out.append("' '")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def skip_item(code, i):
    """Index just past the item starting at `i` (up to its `;` or its
    matching closing brace, whichever ends it)."""
    depth, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == ";" and depth == 0:
            return i + 1
        i += 1
    return n


CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
ATTR = re.compile(r"\s*#\s*\[[^\]]*\]")
MOD_DECL = re.compile(r"\s*(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def remove_test_code(code):
    """Blank `#[cfg(test)]` items; return the code and the names of
    `#[cfg(test)] mod x;` declarations (whose files are test code)."""
    test_mods = set()
    while True:
        m = CFG_TEST.search(code)
        if not m:
            return code, test_mods
        j = m.end()
        while True:
            a = ATTR.match(code, j)
            if not a:
                break
            j = a.end()
        d = MOD_DECL.match(code, j)
        if d:
            test_mods.add(d.group(1))
        end = skip_item(code, j)
        code = code[: m.start()] + "\n" * code.count("\n", m.start(), end) + code[end:]


def group_heads(text):
    """Top-level names of a `{a, b::c, self, d as e}` use group body."""
    names, depth, cur = [], 0, ""
    for c in text:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            names.append(cur)
            cur = ""
            continue
        if depth == 0:
            cur += c
    names.append(cur)
    heads = []
    for name in names:
        m = IDENT.match(name.strip())
        if m:
            heads.append(m.group(0))
    return heads


def module_of(src_dir, path):
    """Module path of a file: src/a/b.rs and src/a/b/mod.rs are ["a", "b"]."""
    rel = os.path.relpath(path, src_dir)[: -len(".rs")].split(os.sep)
    if rel[-1] == "mod" or (len(rel) == 1 and rel[0] in ("lib", "main")):
        rel = rel[:-1]
    return rel


PATH = re.compile(r"(?<![\w$])(crate|super)\s*::\s*")
INLINE_MOD = re.compile(r"(?<![\w$])mod\s+(\w+)\s*\{")


def edges_of_file(src_dir, path, mod_path, code):
    """(from_top, to_top, line) for every path in `code` that leaves the
    top-level module of `mod_path`."""
    out = []
    if not mod_path:
        return out  # the crate root may name anything
    top = mod_path[0]
    # Inline `mod x { ... }` blocks nest the module path for `super::`.
    spans = []
    for m in INLINE_MOD.finditer(code):
        spans.append((m.end() - 1, skip_item(code, m.end() - 1), m.group(1)))

    def path_at(pos):
        inner = [name for start, end, name in spans if start < pos < end]
        return mod_path + inner

    for m in PATH.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        if m.group(1) == "crate":
            base, rest = [], m.end()
        else:
            base, rest = path_at(m.start())[:-1], m.end()
            while True:
                s = re.match(r"super\s*::\s*", code[rest:])
                if not s:
                    break
                base, rest = base[:-1], rest + s.end()
        if base:
            continue  # still inside the same top-level module
        if code.startswith("{", rest):
            heads = group_heads(code[rest + 1 : skip_item(code, rest) - 1])
        else:
            ident = IDENT.match(code, rest)
            heads = [ident.group(0)] if ident else []
        for h in heads:
            if h not in ("self", "super", "crate") and h != top:
                out.append((top, h, f"{os.path.relpath(path)}:{line}"))
    return out


def crate_graph(src_dir):
    graph, where = {}, {}
    files = []
    for dirpath, _, names in os.walk(src_dir):
        files += [os.path.join(dirpath, f) for f in names if f.endswith(".rs")]
    modules = {tuple(module_of(src_dir, f)): f for f in files}
    excluded = set()
    parsed = {}
    for mod_path, f in sorted(modules.items()):
        with open(f, encoding="utf-8") as fh:
            code, test_mods = remove_test_code(strip_code(fh.read()))
        parsed[mod_path] = code
        for t in test_mods:
            excluded.add(mod_path + (t,))
    for mod_path, code in parsed.items():
        if any(mod_path[: len(e)] == e for e in excluded):
            continue
        if mod_path:
            graph.setdefault(mod_path[0], set())
        for a, b, at in edges_of_file(src_dir, modules[mod_path], list(mod_path), code):
            graph[a].add(b)
            where.setdefault((a, b), at)
    tops = {m[0] for m in modules if m}
    for a in graph:
        graph[a] &= tops
    return graph, where


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycle_in(graph, comp):
    """One cycle through the first module of `comp` (breadth-first)."""
    start, members = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [start]


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    failed = False
    for arg in argv[1:]:
        src = os.path.join(arg, "src") if os.path.isdir(os.path.join(arg, "src")) else arg
        if not os.path.isdir(src):
            print(f"{arg}: not a crate directory", file=sys.stderr)
            return 2
        graph, where = crate_graph(src)
        loops = sccs(graph)
        if not loops:
            print(f"{arg}: no import loops between top-level modules")
            continue
        failed = True
        for comp in loops:
            print(f"{arg}: import loop among {', '.join(comp)}")
            cycle = cycle_in(graph, comp)
            for a, b in zip(cycle, cycle[1:]):
                print(f"    {a} -> {b}  ({where[(a, b)]})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
