#!/usr/bin/env python3
"""Runs the shell blocks of README.md and docs/*.md as a new user would type them.

The rules (`--static` checks them without running anything; `make lint` runs that):
- every fenced block names its language (```sh, ```text, ```toml, …): an unnamed one is refused;
- every ```sh block runs, unless the line just above its fence is `<!-- illustrative: WHY -->`
  (a command that needs a person at a browser, another machine, or a service that is not here);
- every repository path a page names in backticks or a link (`crates/…`, `tests/…`, `web/…`, …)
  exists, or is one git ignores (what the programs write: the store, a cache, a run's output);
- ARCHITECTURE.md has at most 200 lines of at most 120 characters.

Running a block (`make test-docs`, part of `make test`): a fresh temporary directory is the working
directory, holding a copy of docs/examples/ (the example apps the pages name: api.R, app.py, app/)
and of data/sample/; target/debug comes first on PATH. Commands run one at a time (a line ending
in `\\` goes on on the next; comment lines are skipped) through bash with pipefail, each within
the block's `timeout` (60 s unless `<!-- run: timeout=N -->` stands above the fence). A command
that exits non-zero fails the block. A server started in the foreground (a command still running
that has opened the first 127.0.0.1 port its line names, or its program's default) passes once it
answers `GET /` with a status below 500, and is stopped (SIGTERM to its process group) before the next command, as a
user would press Ctrl-C; one started with a trailing `&` is waited for the same way and runs until
the block ends. Everything a block started is stopped when it ends, whatever happened.

`<!-- run: fill=FROM=>TO -->` replaces a placeholder of the page (a URL the reader would type) in
the block before it runs; several `fill=` may stand in one comment.

Usage: scripts/doc-run.py [--static] [--only FILE[:LINE]] [--list] [--root DIR]
Exit status 1 when a check or a block fails, one line per finding.
"""

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pages():
    """README.md and every page of docs/."""
    docs = os.path.join(ROOT, "docs")
    return ["README.md"] + sorted(
        os.path.join("docs", f) for f in (os.listdir(docs) if os.path.isdir(docs) else []) if f.endswith(".md")
    )
DIRECTIVE_RE = re.compile(r"^<!--\s*(illustrative|run)\s*:\s*(.*?)\s*-->\s*$")
PATH_RE = re.compile(
    r"(?:`|\]\()((?:crates|tests|web|scripts|bench|deploy|docs|mk|schemas|data)/[A-Za-z0-9_./*-]+)"
)
PORT_RE = re.compile(r"(?:127\.0\.0\.1|localhost):(\d{2,5})")
DEFAULT_PORT = {"cranwhales": 8080, "manifold": 3000, "surge": 8600}
ARCH_MAX_LINES, ARCH_MAX_WIDTH = 200, 120


class Block:
    """One fenced block: where it is, its language, its text and the directive above it."""

    def __init__(self, page, line, lang, text, directive):
        self.page, self.line, self.lang, self.text = page, line, lang, text
        self.kind, self.options = directive if directive else ("run", "")

    def where(self):
        return f"{self.page}:{self.line}"

    def option(self, name, default=None):
        found = [v for k, v in self.pairs() if k == name]
        return found if name == "fill" else (found[-1] if found else default)

    def pairs(self):
        out = []
        for word in shlex.split(self.options) if self.kind == "run" else []:
            if "=" in word:
                k, v = word.split("=", 1)
                out.append((k, v))
        return out


def blocks_of(page):
    """Every fenced block of a page, with the directive comment just above its fence."""
    lines = open(os.path.join(ROOT, page), encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang = lines[i][3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            above = lines[i - 1].strip() if i else ""
            m = DIRECTIVE_RE.match(above)
            out.append(Block(page, i + 1, lang, "\n".join(lines[i + 1 : j]), (m.group(1), m.group(2)) if m else None))
            i = j
        i += 1
    return out


def ignored(path):
    """A path git ignores is one the programs write (the store, a cache, a run's output)."""
    return any(
        subprocess.run(["git", "-C", ROOT, "check-ignore", "-q", "--no-index", p]).returncode == 0
        for p in (path, path.rstrip("/") + "/x")
    )


def static_checks(pages):
    """The rules that need nothing run: languages, directives, paths, ARCHITECTURE.md's size."""
    problems = []
    for page in pages:
        for b in blocks_of(page):
            if not b.lang:
                problems.append(f"{b.where()}: a fenced block without a language (```sh, ```text, …)")
            if b.kind == "illustrative" and not b.options:
                problems.append(f"{b.where()}: `<!-- illustrative: WHY -->` needs its reason")
            if b.kind == "illustrative" and b.lang != "sh":
                problems.append(f"{b.where()}: only ```sh blocks run, so only they are marked illustrative")
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        for n, line in enumerate(text.split("\n"), 1):
            for m in PATH_RE.finditer(line):
                path = m.group(1).rstrip(".")
                if "*" in path or "<" in path or any(part.isupper() for part in path.split("/")):
                    continue  # a pattern or a placeholder (crates/CRATE/…)
                if not os.path.exists(os.path.join(ROOT, path)) and not ignored(path):
                    problems.append(f"{page}:{n}: names {path}, which does not exist")
    arch_path = os.path.join(ROOT, "ARCHITECTURE.md")
    arch = open(arch_path, encoding="utf-8").read().rstrip("\n").split("\n") if os.path.exists(arch_path) else []
    if len(arch) > ARCH_MAX_LINES:
        problems.append(f"ARCHITECTURE.md: {len(arch)} lines (at most {ARCH_MAX_LINES}: detail goes to module docs)")
    for n, line in enumerate(arch, 1):
        if len(line) > ARCH_MAX_WIDTH:
            problems.append(f"ARCHITECTURE.md:{n}: {len(line)} characters (at most {ARCH_MAX_WIDTH})")
    return problems


def commands(text):
    """The block's commands: continuation lines joined, blank and comment-only lines skipped."""
    out, cur = [], ""
    for raw in text.split("\n"):
        line = raw.rstrip()
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        out.append(cur + line)
        cur = ""
    if cur:
        out.append(cur)
    return out


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def answers(port, timeout=60):
    """True once an HTTP GET / on the port is answered with a status below 500 (a pool that queues
    the request until its first worker is ready counts only once that worker answered)."""
    import http.client

    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("GET", "/")
        status = conn.getresponse().status
        conn.close()
        return status < 500
    except (OSError, http.client.HTTPException):
        return False


def server_port(cmd, before):
    """The port a command would serve on: the first loopback port its line names that was not
    open before it started, else its program's default."""
    for m in PORT_RE.finditer(cmd):
        port = int(m.group(1))
        if port not in before:
            return port
    program = os.path.basename(cmd.split()[0]) if cmd.split() else ""
    return DEFAULT_PORT.get(program)


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def stop(proc, grace=10):
    """SIGTERM to the command's whole process group (a server it started included), SIGKILL to
    what is left after `grace` seconds; returns once the group is gone."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace
    while group_alive(pgid) and time.monotonic() < deadline:
        proc.poll()
        time.sleep(0.1)
    if group_alive(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    while group_alive(pgid):
        time.sleep(0.05)


def run_command(cmd, cwd, env, timeout, log):
    """Runs one command; returns (ok, what happened, a background process to keep or None)."""
    tail = re.search(r"(?<![&|])&\s*(#.*)?$", cmd)
    background = bool(tail)
    if background:
        cmd = cmd[: tail.start()] + (" " + tail.group(1) if tail.group(1) else "")
    named = [int(m.group(1)) for m in PORT_RE.finditer(cmd)]
    before = {p for p in named + list(DEFAULT_PORT.values()) if port_open(p)}
    port = server_port(cmd, before)
    if background and named and named[0] in before:
        return False, f"127.0.0.1:{named[0]} is taken before this server starts (left over from an earlier run?)", None
    proc = subprocess.Popen(
        ["bash", "-c", "set -o pipefail\n" + cmd],
        cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rc = proc.poll()
        if rc is not None:
            if background:
                return False, f"exited with status {rc} (a server started with & should keep running)", None
            return rc == 0, f"exit status {rc}", None
        if port and port not in before and port_open(port):
            if not answers(port):
                stop(proc)
                return False, f"127.0.0.1:{port} took the connection but gave no HTTP answer below 500", None
            if background:
                return True, f"serving on 127.0.0.1:{port}", proc
            stop(proc)
            return True, f"served on 127.0.0.1:{port}, then stopped as Ctrl-C would", None
        time.sleep(0.2)
    stop(proc)
    return False, f"still running after {timeout} s" + (f" and 127.0.0.1:{port} never answered" if port else ""), None


def run_block(b, keep):
    """Runs one block in a fresh directory; returns None or the failure line."""
    work = tempfile.mkdtemp(prefix="doc-run-")
    try:
        examples = os.path.join(ROOT, "docs", "examples")
        if os.path.isdir(examples):
            shutil.copytree(examples, work, dirs_exist_ok=True)
        sample = os.path.join(ROOT, "data", "sample")
        if os.path.isdir(sample):
            shutil.copytree(sample, os.path.join(work, "data", "sample"))
        env = dict(os.environ)
        env["PATH"] = os.path.join(ROOT, "target", "debug") + os.pathsep + env.get("PATH", "")
        text = b.text
        for fill in b.option("fill"):
            frm, _, to = fill.partition("=>")
            text = text.replace(frm, to)
        timeout = float(b.option("timeout", 60))
        log_path = os.path.join(work, ".doc-run.log")
        background = []
        with open(log_path, "w") as log:
            try:
                for cmd in commands(text):
                    log.write(f"$ {cmd}\n")
                    log.flush()
                    ok, what, proc = run_command(cmd, work, env, timeout, log)
                    log.write(f"# {what}\n")
                    log.flush()
                    if proc:
                        background.append(proc)
                    if not ok:
                        tail = open(log_path, errors="replace").read()[-1500:]
                        return f"{b.where()}: `{cmd.strip()[:120]}`: {what}\n{tail}"
            finally:
                for proc in reversed(background):
                    stop(proc)
        return None
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    global ROOT
    args = sys.argv[1:]
    only = args[args.index("--only") + 1] if "--only" in args else None
    if "--root" in args:
        ROOT = os.path.abspath(args[args.index("--root") + 1])
    PAGES = pages()
    problems = static_checks(PAGES)
    blocks = [b for p in PAGES for b in blocks_of(p) if b.lang == "sh"]
    if only:
        blocks = [b for b in blocks if b.where() == only or b.page == only]
    if "--list" in args:
        for b in blocks:
            print(f"{b.where()}: {b.kind}{': ' + b.options if b.options else ''}")
        return 0
    ran = illustrative = 0
    if "--static" not in args:
        for b in blocks:
            if b.kind == "illustrative":
                illustrative += 1
                continue
            started = time.monotonic()
            failure = run_block(b, keep=False)
            ran += 1
            print(f"doc-run: {b.where()}: {'FAIL' if failure else 'ok'} ({time.monotonic() - started:.1f} s)", flush=True)
            if failure:
                problems.append(failure)
    for p in problems:
        print(p)
    runnable = sum(1 for b in blocks if b.kind != "illustrative")
    marked = sum(1 for b in blocks if b.kind == "illustrative")
    summary = f"{runnable} shell blocks run, {marked} marked illustrative" if "--static" in args else (
        f"{ran} shell blocks ran, {illustrative} marked illustrative"
    )
    print(f"doc-run: {len(PAGES)} pages; {summary}: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
