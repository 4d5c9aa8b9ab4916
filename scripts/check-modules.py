#!/usr/bin/env python3
"""Module hygiene for crates/*/src (see ARCHITECTURE.md, "Module rules").

Checks, per crate:
  1. every source file is at most MAX_LINES lines (test modules in their own files are exempt:
     `tests.rs` / `*/tests/*`);
  2. no function body is longer than MAX_FN lines (a brace-counting scan that skips comments,
     strings and char literals);
  3. no import cycle between sibling modules: every `crate::…` / `super::…` path outside
     `#[cfg(test)]` blocks is an edge from the file's module to the module it names; an edge
     a::x → b::y counts between the siblings just below their common ancestor (x → y inside a
     when a == b, a → b otherwise); a parent using its child (or a child its parent) is
     containment, not a dependency. Any cycle among siblings is reported;
  4. no std lock is `.unwrap()`ped outside `#[cfg(test)]`: the lock-poisoning policy
     (ARCHITECTURE.md) says for each lock whether a poisoned one is taken back or panics, and why;
  5. the layer table: ARCHITECTURE.md's ```layers blocks list, for every top-level module of
     every crate, the modules it may use (`crate::module: a, b` or `crate::module: -`); a use
     outside its line, a module without a line, or a line naming no module is reported. So the
     prose's "must not depend on" and the code cannot drift.

Exit status 1 if anything is flagged; one line per finding, then a summary.
Usage: scripts/check-modules.py [--list] [--edges] [--prune] [ROOT]
  --list: the module map with line counts; --edges: each module's sibling dependencies;
  --prune: take the permissions nothing uses out of ARCHITECTURE.md's table (then review the diff).
"""

import os
import re
import sys
from collections import defaultdict

MAX_LINES = 600
MAX_FN = 100
BARE_LOCK_RE = re.compile(r"\.(?:lock|read|write)\(\)\s*\.unwrap\(\)")

FN_RE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
    r'(?:extern\s+"[^"]*"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)'
)


def strip(text):
    """`text` with comments, string and char literals blanked (newlines kept), so braces and
    paths are code only."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2 : j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1 : j - 1]) + '"')
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}', '{') or a lifetime ('a): only literals close.
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'", text[i:])
            if m:
                out.append("' '" + " " * (len(m.group(0)) - 3))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blocks(code):
    """(start_line, end_line, header) for every `{…}` block, 1-based lines."""
    stack, found = [], []
    line = 1
    for idx, ch in enumerate(code):
        if ch == "\n":
            line += 1
        elif ch == "{":
            stack.append((line, idx))
        elif ch == "}" and stack:
            start, sidx = stack.pop()
            head_from = max(code.rfind(";", 0, sidx), code.rfind("}", 0, sidx), code.rfind("{", 0, sidx)) + 1
            found.append((start, line, code[head_from:sidx], head_from, idx))
    return found


def long_fns(code):
    """(name, first line, length) of functions whose body spans more than MAX_FN lines."""
    out = []
    for start, end, head, head_from, _ in blocks(code):
        m = None
        for hl in head.splitlines():
            m = m or FN_RE.match(hl)
        if not m:
            continue
        fn_at = head_from + head.find("fn " + m.group(1))
        first = code.count("\n", 0, fn_at) + 1
        length = end - first + 1
        if length > MAX_FN:
            out.append((m.group(1), first, length))
    return out


def test_spans(code):
    """Char ranges of `#[cfg(test)]` items (their imports are not layering edges)."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        brace = code.find("{", m.end())
        semi = code.find(";", m.end())
        if brace < 0 or (0 <= semi < brace):
            continue
        depth = 0
        for j in range(brace, len(code)):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    spans.append((m.start(), j))
                    break
    return spans


def modules_of(src):
    """module path (tuple) → file, for every .rs file of one crate's src/."""
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            parts = rel[:-3].split(os.sep)
            if parts == ["lib"] or parts == ["main"]:
                parts = []
            elif parts[-1] == "mod":
                parts = parts[:-1]
            key = tuple(parts)
            if key in mods and parts == []:
                key = ("main",) if f == "main.rs" else key  # lib.rs is the crate root
            mods[key] = os.path.join(dirpath, f)
    return mods


def use_paths(code):
    """Every path a file names that starts with crate:: / super:: / self:: (use trees expanded)."""
    paths = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)\b[^;]*);", code):
        for p in expand(re.sub(r"\s+", "", m.group(1))):
            paths.append(p[:-1] if len(p) > 1 and p[-1] == "self" else p)
    # Paths used inline in code (`crate::blob::Writer::new(..)`).
    for m in re.finditer(r"(?<![\w:])((?:crate|super)(?:::\w+)+)", code):
        paths.append(m.group(1).split("::"))
    return paths


def expand(tree, keep_alias=False):
    """`a::{b,c::{d}}` → [[a,b],[a,c,d]]; with `keep_alias`, a last name `x as y` stays whole."""
    i = tree.find("{")
    if i < 0:
        return [tree.split("::")] if keep_alias else [tree.split(" as ")[0].split("::")]
    prefix = [p for p in tree[:i].split("::") if p]
    inner = tree[i + 1 : tree.rfind("}")]
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
        if p:
            out.extend(prefix + q for q in expand(p, keep_alias))
    return out


def reexports_of(here, code, mods):
    """name → absolute path (tuple) of every `pub use` / `pub(…) use` of one module's code, and the
    modules it glob-re-exports (`pub use x::*`). A relative path starts at the module itself
    (`pub use builder::DayBuilder` names the child `builder`); one into another crate is skipped."""
    names, globs = {}, []
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]*);", code):
        tree = re.sub(r"\s+", " ", m.group(1)).strip()
        for p in expand(tree.replace(" as ", "\0").replace(" ", "").replace("\0", " as "), keep_alias=True):
            alias = None
            if " as " in p[-1]:
                last, alias = p[-1].split(" as ")
                p = p[:-1] + [last]
            if p[0] not in ("crate", "super", "self"):
                if here + (p[0],) not in mods:
                    continue  # another crate
                p = ["self"] + p
            absolute = absolute_path(here, p)
            if absolute is None:
                continue
            if p[-1] == "*":
                globs.append(absolute[:-1])
            elif p[-1] != "self":
                names[alias or p[-1]] = absolute
    return names, globs


def absolute_path(here, path):
    """`crate::…` / `super::…` / `self::…` as a path from the crate root (a tuple of names)."""
    if path[0] == "crate":
        return tuple(path[1:])
    base, rest = list(here), list(path)
    while rest and rest[0] in ("super", "self"):
        if rest[0] == "super":
            if not base:
                return None
            base = base[:-1]
        rest = rest[1:]
    return tuple(base) + tuple(rest)


DEFINES_RE = r"\b(?:fn|struct|enum|trait|type|const|static|mod|union)\s+{}\b"


def resolve(here, path, mods, reexports=None, depth=0):
    """The module a path names (longest known module prefix), or None if outside the crate.
    A name that module re-exports (`pub use`) resolves to the module that defines it, through
    any chain of re-exports (lib.rs's included), so a re-export is no way around the table."""
    start = absolute_path(here, path) if path[0] in ("crate", "super", "self") else None
    if start is None:
        return None
    target, i = (), 0
    while i < len(start) and target + (start[i],) in mods:
        target, i = target + (start[i],), i + 1
    if reexports is None or i >= len(start) or depth > 16:
        return target
    names, globs, code = reexports.get(target, ({}, [], ""))
    name = start[i]
    if name in names:
        return resolve((), ["crate", *names[name], *start[i + 1 :]], mods, reexports, depth + 1)
    if not re.search(DEFINES_RE.format(re.escape(name)), code):
        for g in globs:
            g_names, _, g_code = reexports.get(g, ({}, [], ""))
            if name in g_names or re.search(DEFINES_RE.format(re.escape(name)), g_code):
                return resolve((), ["crate", *g, *start[i:]], mods, reexports, depth + 1)
    return target


def cycles(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


LAYER_LINE_RE = re.compile(r"^\s*(\w+)::(\{[\w,\s]*\}|\w+)\s*:\s*(.*?)\s*$")
PRUNE = {}  # (crate, module) → permissions to take out of the table (--prune)
ONLY_LINE_RE = re.compile(r"^\s*(\w+)::([\w:]+)\s+only from\s+(.*?)\s*$")


def layer_table(path="ARCHITECTURE.md"):
    """(crate, module) → set of modules it may use, and the `only from` rules, from the
    ```layers blocks of ARCHITECTURE.md."""
    table, only, inside, lines = {}, [], False, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("```"):
                inside = line.strip() == "```layers"
                continue
            if not inside or not line.strip() or line.lstrip().startswith("#"):
                continue
            if line[0].isspace() and lines:
                lines[-1][1] = lines[-1][1].rstrip() + " " + line.strip()  # a wrapped list goes on
            else:
                lines.append([n, line])
    for n, line in lines:
        m = ONLY_LINE_RE.match(line)
        if m:
            users = [tuple(u.strip().split("::")) for u in m.group(3).split(",")]
            only.append((m.group(1), tuple(m.group(2).split("::")), users, n))
            continue
        m = LAYER_LINE_RE.match(line)
        if not m:
            raise SystemExit(
                f"{path}:{n}: layer line is not `crate::module: a, b`, `crate::module: -` or "
                "`crate::path only from a::b, c`"
            )
        uses = m.group(3)
        for module in m.group(2).strip("{}").split(","):  # `crate::{a, b}: …` gives a and b one line
            table[(m.group(1), module.strip())] = set() if uses == "-" else {u.strip() for u in uses.split(",")}
    return table, only


def prune(path="ARCHITECTURE.md"):
    """Rewrites the layer lines of ARCHITECTURE.md without the permissions nothing uses."""
    out, inside = [], False
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("```"):
            inside = line.strip() == "```layers"
        m = LAYER_LINE_RE.match(line) if inside else None
        if m and (m.group(1), m.group(2)) in PRUNE:
            keep = [u.strip() for u in m.group(3).split(",") if u.strip() not in PRUNE[(m.group(1), m.group(2))]]
            line = f"{m.group(1)}::{m.group(2)}: {', '.join(keep) or '-'}"
        out.append(line)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(out))
    os.replace(path + ".tmp", path)


def check_only(name, mods, prods, used_by, only, problems):
    """`crate::module[::Item::name] only from a::b, c`: the module (or the item, found by its last two
    names in the code, as `Worker::spawn`) is named by no module outside the listed ones (each
    with its children) and the module itself."""
    for crate, path, users, n in only:
        if crate != name:
            continue
        module = ()
        while len(module) < len(path) and module + (path[len(module)],) in mods:
            module = module + (path[len(module)],)
        if not module:
            problems.append(f"ARCHITECTURE.md:{n}: `only from` rule {crate}::{'::'.join(path)} names no module")
            continue
        item = path[len(module):]

        def allowed(user):
            return user[: len(module)] == module or any(user[: len(u)] == u for u in users)

        if not item:
            for target, who in sorted(used_by.items()):
                if target[: len(module)] != module:
                    continue
                for user, rel in sorted(who):
                    if not allowed(user):
                        problems.append(
                            f"{rel} uses {crate}::{'::'.join(target)}, which ARCHITECTURE.md allows only from "
                            f"{', '.join('::'.join(u) for u in users)} (line {n})"
                        )
            continue
        needle = re.compile(r"\b" + r"\s*::\s*".join(map(re.escape, item[-2:])) + r"\b")
        for mod, (here, rel, prod) in sorted(prods.items()):
            for m in needle.finditer(prod):
                if not allowed(here if mod != ("main",) else ("main",)):
                    line = prod.count("\n", 0, m.start()) + 1
                    problems.append(
                        f"{rel}:{line}: {'::'.join(item[-2:])} is called only from "
                        f"{', '.join('::'.join(u) for u in users)} (ARCHITECTURE.md line {n})"
                    )


CHECKED_BY_RE = re.compile(r"\(checked by ([^)]*)\)")


def check_invariants(path, problems):
    """Every bullet under an `Invariants` heading of ARCHITECTURE.md says what checks it:
    `(checked by FILE::test_name, …)` naming a test function that exists, or `(checked by the layer
    table)`. A prose rule that nothing checks drifts; this keeps each one honest."""
    lines = open(path, encoding="utf-8").read().split("\n")
    bullets, inside, cur = [], False, None
    for n, line in enumerate(lines, 1):
        if line.startswith("#"):
            inside = "invariants" in line.lower()
            cur = None
            continue
        if not inside:
            continue
        if line.startswith("- "):
            cur = [n, line]
            bullets.append(cur)
        elif cur and line.startswith("  ") and line.strip():
            cur[1] += " " + line.strip()
        else:
            cur = None
    for n, text in bullets:
        m = CHECKED_BY_RE.search(text)
        if not m:
            problems.append(f"{path}:{n}: an invariant without `(checked by FILE::test, …)`: {text[2:80]}…")
            continue
        for ref in (r.strip() for r in m.group(1).split(",")):
            if ref in ("the layer table", "check-modules"):
                continue
            file, _, test = ref.partition("::")
            if not os.path.isfile(file):
                problems.append(f"{path}:{n}: checked by {ref}: no file {file}")
            elif test and not re.search(r"\bfn\s+" + re.escape(test) + r"\b", open(file, encoding="utf-8").read()):
                problems.append(f"{path}:{n}: checked by {ref}: {file} has no fn {test}")


def check_layers(name, mods, edges, why, table, problems):
    """Every top-level module has a line in the table and uses only what its line lists."""
    top = sorted(m[0] for m in mods if len(m) == 1 and m != ("main",))
    graph = edges.get((), {})
    for mod in top:
        if (name, mod) not in table:
            uses = ", ".join(sorted(graph.get(mod, ()))) or "-"
            problems.append(
                f"{os.path.relpath(mods[(mod,)])}: module {mod} has no line in ARCHITECTURE.md's layer table: "
                f"add `{name}::{mod}: {uses}` (or what it may use) to the ```layers block"
            )
            continue
        for used in sorted(graph.get(mod, ())):
            if used not in table[(name, mod)]:
                problems.append(
                    f"{name}::{mod} uses {used}, which its layer line does not allow ({why[((), mod, used)]}); "
                    f"ARCHITECTURE.md allows {name}::{mod}: {', '.join(sorted(table[(name, mod)])) or '-'}"
                )
    for crate, mod in sorted(table):
        if crate == name and (mod,) not in mods:
            problems.append(f"ARCHITECTURE.md: layer line {crate}::{mod} names no module of crates/{crate}/src")
        elif crate == name:
            unused = sorted(table[(crate, mod)] - graph.get(mod, set()))
            if unused and "--prune" in sys.argv:
                PRUNE[(crate, mod)] = set(unused)
            elif unused:
                problems.append(
                    f"ARCHITECTURE.md: layer line {crate}::{mod} allows {', '.join(unused)}, which it does not use: "
                    "remove them (an unused permission hides the next mistake)"
                )


def check_crate(crate_dir, problems, listing, table, only):
    src = os.path.join(crate_dir, "src")
    name = os.path.basename(crate_dir)
    mods = modules_of(src)
    edges = defaultdict(lambda: defaultdict(set))  # scope → sibling → {sibling}
    why, uses, used_by = {}, defaultdict(set), {}
    prods, reexports = {}, {}
    for mod, path in sorted(mods.items()):
        text = open(path, encoding="utf-8").read()
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        rel = os.path.relpath(path)
        is_test_file = os.path.basename(path) == "tests.rs" or "/tests/" in path
        listing.append((rel, lines))
        if lines > MAX_LINES and not is_test_file:
            problems.append(f"{rel}: {lines} lines (max {MAX_LINES})")
        code = strip(text)
        for fn, first, length in long_fns(code):
            problems.append(f"{rel}:{first}: fn {fn} is {length} lines (max {MAX_FN})")
        spans = test_spans(code)
        prod = "".join(ch if not any(a <= i <= b for a, b in spans) or ch == "\n" else " " for i, ch in enumerate(code)) if spans else code
        for m in BARE_LOCK_RE.finditer(prod):
            line = prod.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{line}: lock().unwrap(): follow the lock-poisoning policy")
        here = mod if mod != ("main",) else ()
        prods[mod] = (here, rel, prod)
        if mod != ("main",):
            names, globs = reexports_of(here, prod, mods)
            reexports[here] = (names, globs, prod)
    for mod, (here, rel, prod) in sorted(prods.items()):
        for p in use_paths(prod):
            target = resolve(here, p, mods, reexports)
            if target is None or target == here:
                continue
            k = 0
            while k < min(len(here), len(target)) and here[k] == target[k]:
                k += 1
            if k == len(here) or k == len(target):
                continue  # parent ↔ child: containment
            scope, a, b = here[:k], here[k], target[k]
            edges[scope][a].add(b)
            why.setdefault((scope, a, b), f"{rel} uses {'::'.join(p)}")
            uses[(mod if mod != ("main",) else ("main",))].add(target)
            used_by.setdefault(target, set()).add((here if mod != ("main",) else ("main",), rel))
    if "--edges" in sys.argv:
        for scope, graph in sorted(edges.items()):
            for a in sorted(graph):
                print(f"{'::'.join((name,) + scope + (a,))} -> {', '.join(sorted(graph[a]))}")
    for scope, graph in sorted(edges.items()):
        for comp in cycles(graph):
            where = "::".join((name,) + scope)
            detail = "; ".join(
                why[(scope, a, b)] for a in comp for b in sorted(graph[a]) if b in comp
            )
            problems.append(f"{where}: import cycle {' <-> '.join(comp)} ({detail})")
    check_layers(name, mods, edges, why, table, problems)
    check_only(name, mods, prods, used_by, only, problems)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    problems, listing = [], []
    crates = sorted(d for d in os.listdir("crates") if os.path.isdir(os.path.join("crates", d, "src")))
    table, only = layer_table()
    check_invariants("ARCHITECTURE.md", problems)
    for c in crates:
        check_crate(os.path.join("crates", c), problems, listing, table, only)
    if PRUNE:
        prune()
        print(f"check-modules: took {sum(map(len, PRUNE.values()))} unused permission(s) out of ARCHITECTURE.md")
    if "--list" in sys.argv:
        for rel, n in listing:
            print(f"{n:5d}  {rel}")
    for p in problems:
        print(p)
    files = len(listing)
    print(
        f"check-modules: {files} files in {len(crates)} crates; "
        f"max {MAX_LINES} lines a file, {MAX_FN} a function, no sibling import cycles, no lock().unwrap(), "
        f"layer table of {len(table)} modules: "
        + ("ok" if not problems else f"{len(problems)} problem(s)")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
