#!/usr/bin/env python3
"""Keeps the crates' layers: no import cycles between modules, no import from a lower layer up.

Reads every `crate::`, `super::` and `self::` path in server/src and lockcore/src (comments
and string literals stripped), resolves it to the module it names, and checks two rules:

1. At every folder level (the crate root, and each folder module), the graph of imports
   between sibling modules has no cycle.
2. At the crate root, a module imports only from its own layer or the layers below it, as
   listed in LAYERS (lowest first). Every root module must be listed.

    python3 scripts/ci/layers.py            # exit 1 on a cycle, an upward import or an unlisted module
    python3 scripts/ci/layers.py --graph    # also print every edge between root modules

Two things would point up and are therefore not imports: server commands' handlers register
themselves with conn (conn::SERVER_COMMANDS), and the Lua engine registers how to make its
state with state (state::SCRIPT_STATE), both at link time. A `#[macro_export]` macro counts
as its defining module, not the crate root.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Lowest layer first. A module may import from its own layer and any layer before it.
LAYERS = {
    "lockcore": [
        ["error", "num", "glob", "reply", "personality"],
        ["storage"],
        ["engine"],
        ["commands"],
        ["slots", "key_access"],
        ["lib"],
    ],
    "server": [
        ["base"],
        ["resp"],
        ["config"],
        ["stats"],
        ["state"],
        ["io"],
        ["conn"],
        ["acl", "cluster", "repl"],
        ["scripting"],
        ["observe"],
        ["commands", "sentinel"],
        ["tools"],
        ["embed", "lib", "main"],
    ],
}


def strip(src):
    """The source with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if src[i] == "\n":
                        out.append("\n")
                    i += 1
        elif re.match(r'b?r#*"', src[i:i + 20]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i) and (i == 0 or not src[i - 1].isalnum())):
            i += 2 if c == "b" else 1
            start = i
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", start, i))
            i += 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                out.append("' '")
                i += m.end()
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def module_path(crate_src, path):
    """`server/src/conn/mod.rs` -> ["conn"]; lib.rs/main.rs -> []."""
    rel = os.path.relpath(path, crate_src)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main") and (len(rel) > 1 or rel[-1] != "main"):
        rel = rel[:-1]
    return rel


USE_RE = re.compile(r"\b(crate|super|self)((?:\s*::\s*(?:[A-Za-z_][A-Za-z0-9_]*|\{))+)")


def expand(tail, text, pos):
    """Path segments after `crate::`; a `{` group yields one path per member."""
    segs = [s.strip() for s in tail.split("::") if s.strip()]
    if segs and segs[-1] == "{":
        depth, j, start = 1, pos, pos
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        inner = text[start:j - 1]
        parts, depth, cur = [], 0, ""
        for ch in inner:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        parts.append(cur)
        out = []
        for p in parts:
            p = p.strip()
            if not p:
                continue
            first = re.match(r"[A-Za-z_][A-Za-z0-9_]*", p)
            if first:
                out.append(segs[:-1] + [first.group(0)])
        return out
    return [segs]


def inline_mods(text):
    """(start, end, name) of every inline `mod name { ... }` block."""
    spans = []
    for m in re.finditer(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{", text):
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += text[j] == "{"
            depth -= text[j] == "}"
            j += 1
        spans.append((m.start(), j, m.group(1)))
    return spans


def crate_edges(crate):
    src = os.path.join(ROOT, crate, "src")
    files = []
    for d, _, fs in os.walk(src):
        files += [os.path.join(d, f) for f in fs if f.endswith(".rs")]
    # bin targets (src/bin, main.rs) are their own crates: only main.rs is checked, as `main`
    files = [f for f in files if os.sep + "bin" + os.sep not in os.path.relpath(f, src)]
    modules = set()
    for f in files:
        mp = module_path(src, f)
        for k in range(1, len(mp) + 1):
            modules.add(tuple(mp[:k]))
    root_aliases = {}
    lib = os.path.join(src, "lib.rs")
    if os.path.exists(lib):
        for m in re.finditer(r"pub\s+use\s+([a-z_][a-z0-9_]*)\s*::\s*(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)", strip(open(lib).read())):
            for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", m.group(2)):
                root_aliases[name] = m.group(1)
    # `#[macro_export]` macros live at the crate root by path (`crate::server_command!`)
    # but belong to the module that defines them.
    macros = {}
    for f in files:
        for m in re.finditer(r"#\[macro_export\]\s*macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)", strip(open(f).read())):
            macros[m.group(1)] = tuple(module_path(src, f)) or ("lib",)
    edges = []  # (from module path, to module path, file, line)
    for f in files:
        text = strip(open(f).read())
        here = module_path(src, f)
        is_main = os.path.relpath(f, src) == "main.rs"
        spans = inline_mods(text)
        for m in USE_RE.finditer(text):
            if is_main and m.group(1) == "crate":
                continue
            base = list(here)
            for s0, s1, name in spans:
                if s0 < m.start() < s1:
                    base = base + [name]
            is_macro = text[m.end():m.end() + 1] == "!"
            src_mod = ("main",) if is_main else (tuple(here) or ("lib",))
            where = (os.path.relpath(f, ROOT), text.count("\n", 0, m.start()) + 1)
            for segs in expand(m.group(2), text, m.end()):
                if m.group(1) == "crate" and is_macro and len(segs) == 1 and segs[0] in macros:
                    edges.append((src_mod, macros[segs[0]]) + where)
                    continue
                if m.group(1) == "crate":
                    target = []
                elif m.group(1) == "self":
                    target = list(base)
                else:
                    target = base[:-1]
                    while segs and segs[0] == "super":
                        target, segs = target[:-1], segs[1:]
                while segs and tuple(target + [segs[0]]) in modules:
                    target, segs = target + [segs[0]], segs[1:]
                if not target and segs and segs[0] in root_aliases:
                    target = [root_aliases[segs[0]]]
                if not target:
                    target = ["lib"]
                edges.append((src_mod, tuple(target)) + where)
    return edges


def cycles(nodes, adj):
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
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
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check(crate, show_graph):
    problems = []
    edges = crate_edges(crate)
    # sibling edges at every folder level: the first segment where the two paths differ
    by_parent = {}
    for a, b, f, line in edges:
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        if k == len(a) or k == len(b):
            continue  # a module using its own descendant or ancestor
        parent = a[:k]
        by_parent.setdefault(parent, {}).setdefault((a[k], b[k]), []).append(f"{f}:{line}")
    for parent, pairs in sorted(by_parent.items()):
        adj = {}
        for (x, y) in pairs:
            adj.setdefault(x, set()).add(y)
        nodes = set(adj) | {y for s in adj.values() for y in s}
        for comp in cycles(nodes, adj):
            where = "::".join((crate,) + parent)
            arrows = [f"    {x} -> {y} ({pairs[(x, y)][0]})" for (x, y) in sorted(pairs) if x in comp and y in comp]
            problems.append(f"{where}: import cycle among {', '.join(comp)}:\n" + "\n".join(arrows))
    layer_of = {}
    for i, layer in enumerate(LAYERS[crate]):
        for name in layer:
            layer_of[name] = i
    root_pairs = by_parent.get((), {})
    tops = {os.path.splitext(e)[0] for e in os.listdir(os.path.join(ROOT, crate, "src"))} - {"bin"}
    for t in sorted(tops - set(layer_of)):
        problems.append(f"{crate}: module `{t}` is in no layer (scripts/ci/layers.py LAYERS)")
    for (x, y), where in sorted(root_pairs.items()):
        if x in layer_of and y in layer_of and layer_of[y] > layer_of[x]:
            problems.append(f"{crate}: upward import {x} (layer {layer_of[x]}) -> {y} (layer {layer_of[y]}) at {', '.join(where[:3])}")
    if show_graph:
        for (x, y), where in sorted(root_pairs.items()):
            print(f"{crate}: {x} -> {y}  ({len(where)})")
    return problems, len(edges)


def main():
    show = "--graph" in sys.argv
    problems = []
    for crate in LAYERS:
        p, n = check(crate, show)
        print(f"layers: {crate}: {n} module paths read, {len(p)} problems")
        problems += p
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
