"""scripts/check-modules.py's layer table, on small crates written for each case."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-modules.py")


def run(files):
    """Writes `files` (path → text) into a fresh root and runs the checker there."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
        return p.returncode, p.stdout


CRATE = {
    "crates/x/src/lib.rs": "pub mod a;\npub mod b;\n",
    "crates/x/src/a.rs": "pub fn f() {}\n",
    "crates/x/src/b.rs": "use crate::a::f;\npub fn g() { f() }\n",
}


def table(*lines):
    return "# Architecture\n\n```layers\n" + "\n".join(lines) + "\n```\n"


class LayerTable(unittest.TestCase):
    def test_uses_within_the_table_pass(self):
        code, out = run({**CRATE, "ARCHITECTURE.md": table("x::a: -", "x::b: a")})
        self.assertEqual(code, 0, out)
        self.assertIn("layer table of 2 modules: ok", out)

    def test_a_use_outside_its_line_is_named(self):
        code, out = run({**CRATE, "ARCHITECTURE.md": table("x::a: -", "x::b: -")})
        self.assertEqual(code, 1)
        self.assertIn("x::b uses a, which its layer line does not allow (crates/x/src/b.rs uses crate::a::f)", out)

    def test_a_module_without_a_line_says_what_to_add(self):
        code, out = run({**CRATE, "ARCHITECTURE.md": table("x::a: -")})
        self.assertEqual(code, 1)
        self.assertIn("module b has no line in ARCHITECTURE.md's layer table: add `x::b: a`", out)

    def test_a_line_naming_no_module_is_stale(self):
        code, out = run({**CRATE, "ARCHITECTURE.md": table("x::a: -", "x::b: a", "x::gone: a")})
        self.assertEqual(code, 1)
        self.assertIn("layer line x::gone names no module of crates/x/src", out)


if __name__ == "__main__":
    unittest.main()
