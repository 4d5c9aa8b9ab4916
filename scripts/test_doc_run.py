"""scripts/doc-run.py on small pages written for each case: what it refuses, what it runs."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "doc-run.py")


def run(readme, *flags, files=None):
    """Writes README.md (and `files`) into a fresh root and runs the checker there."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in {"README.md": readme, **(files or {})}.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        subprocess.run(["git", "init", "-q", root], check=True)
        p = subprocess.run([sys.executable, SCRIPT, "--root", root, *flags], capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout


class Static(unittest.TestCase):
    def test_a_block_without_a_language_is_refused(self):
        code, out = run("# x\n\n```\nls\n```\n", "--static")
        self.assertEqual(code, 1, out)
        self.assertIn("README.md:3: a fenced block without a language", out)

    def test_an_illustrative_mark_needs_its_reason(self):
        code, out = run("# x\n\n<!-- illustrative: -->\n```sh\nls\n```\n", "--static")
        self.assertEqual(code, 1, out)
        self.assertIn("needs its reason", out)

    def test_a_path_that_is_not_there_is_named(self):
        code, out = run("# x\n\nSee `crates/gone/src/lib.rs`.\n", "--static")
        self.assertEqual(code, 1, out)
        self.assertIn("README.md:3: names crates/gone/src/lib.rs, which does not exist", out)

    def test_a_path_the_programs_write_is_not_required(self):
        code, out = run("# x\n\nThe store is `data/cw.db`.\n", "--static", files={".gitignore": "/data/*.db\n"})
        self.assertEqual(code, 0, out)


class Running(unittest.TestCase):
    def test_a_command_that_fails_fails_the_block_and_names_it(self):
        code, out = run("# x\n\n```sh\ntrue\nfalse   # a comment\necho never\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("README.md:3: `false   # a comment`: exit status 1", out)
        self.assertNotIn("$ echo never", out)

    def test_an_illustrative_block_is_not_run(self):
        code, out = run("# x\n\n<!-- illustrative: needs a browser -->\n```sh\nfalse\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("0 shell blocks ran, 1 marked illustrative: ok", out)

    def test_a_foreground_server_passes_once_it_answers_and_is_stopped(self):
        port = free_port()
        server = f"python3 -m http.server {port} --bind 127.0.0.1   # http://127.0.0.1:{port}"
        code, out = run(f"# x\n\n```sh\n{server}\ntest -f README.md || true\n```\n")
        self.assertEqual(code, 0, out)
        self.assertIn("1 shell blocks ran", out)
        self.assertFalse(port_open(port), "the server was left running")

    def test_a_background_server_with_a_comment_serves_the_next_commands_then_stops(self):
        port = free_port()
        block = (
            f"python3 -m http.server {port} --bind 127.0.0.1 &   # the app, http://127.0.0.1:{port}\n"
            f"python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/')\"\n"
        )
        code, out = run(f"# x\n\n```sh\n{block}```\n")
        self.assertEqual(code, 0, out)
        self.assertFalse(port_open(port), "the background server outlived its block")

    def test_a_background_server_that_dies_fails(self):
        code, out = run("# x\n\n```sh\nexit 3 &\n```\n")
        self.assertEqual(code, 1, out)
        self.assertIn("should keep running", out)

    def test_fill_replaces_a_placeholder(self):
        code, out = run("# x\n\n<!-- run: fill=URL=>ok -->\n```sh\ntest URL = ok\n```\n")
        self.assertEqual(code, 0, out)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port):
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()
