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


# The holes found in round three: a re-export let a module reach what its line forbids, and an
# unused permission was never reported.
THREE = {
    "crates/x/src/a.rs": "pub struct Thing;\npub fn make() -> Thing { Thing }\n",
    "crates/x/src/b.rs": "pub use crate::a::Thing;\npub use crate::a::make as build;\npub fn g() {}\n",
}


class ReExports(unittest.TestCase):
    def test_a_re_export_in_a_module_is_resolved_to_the_defining_module(self):
        files = {
            **THREE,
            "crates/x/src/lib.rs": "pub mod a;\npub mod b;\npub mod c;\n",
            "crates/x/src/c.rs": "use crate::b::Thing;\npub fn h(_: Thing) {}\n",
            "ARCHITECTURE.md": table("x::a: -", "x::b: a", "x::c: b"),
        }
        code, out = run(files)
        self.assertEqual(code, 1, out)
        self.assertIn("x::c uses a, which its layer line does not allow (crates/x/src/c.rs uses crate::b::Thing)", out)

    def test_a_renamed_re_export_is_resolved(self):
        files = {
            **THREE,
            "crates/x/src/lib.rs": "pub mod a;\npub mod b;\npub mod c;\n",
            "crates/x/src/c.rs": "pub fn h() { crate::b::build(); crate::b::g(); }\n",
            "ARCHITECTURE.md": table("x::a: -", "x::b: a", "x::c: b"),
        }
        code, out = run(files)
        self.assertEqual(code, 1, out)
        self.assertIn("x::c uses a, which its layer line does not allow (crates/x/src/c.rs uses crate::b::build)", out)

    def test_a_re_export_in_lib_rs_is_no_way_around(self):
        files = {
            "crates/x/src/lib.rs": "pub mod a;\npub mod c;\npub use a::Thing;\n",
            "crates/x/src/a.rs": "pub struct Thing;\n",
            "crates/x/src/c.rs": "use crate::Thing;\npub fn h(_: Thing) {}\n",
            "ARCHITECTURE.md": table("x::a: -", "x::c: -"),
        }
        code, out = run(files)
        self.assertEqual(code, 1, out)
        self.assertIn("x::c uses a, which its layer line does not allow (crates/x/src/c.rs uses crate::Thing)", out)

    def test_a_glob_re_export_is_resolved(self):
        files = {
            "crates/x/src/lib.rs": "pub mod a;\npub mod b;\npub mod c;\n",
            "crates/x/src/a.rs": "pub struct Thing;\n",
            "crates/x/src/b.rs": "pub use crate::a::*;\npub fn own() {}\n",
            "crates/x/src/c.rs": "pub fn h() { crate::b::own(); let _ = crate::b::Thing; }\n",
            "ARCHITECTURE.md": table("x::a: -", "x::b: a", "x::c: b"),
        }
        code, out = run(files)
        self.assertEqual(code, 1, out)
        self.assertIn("x::c uses a, which its layer line does not allow (crates/x/src/c.rs uses crate::b::Thing)", out)
        self.assertNotIn("uses crate::b::own)", out)

    def test_a_re_export_that_stays_inside_the_table_passes(self):
        files = {
            **THREE,
            "crates/x/src/lib.rs": "pub mod a;\npub mod b;\npub mod c;\n",
            "crates/x/src/c.rs": "use crate::b::Thing;\npub fn h(_: Thing) { crate::b::g() }\n",
            "ARCHITECTURE.md": table("x::a: -", "x::b: a", "x::c: a, b"),
        }
        code, out = run(files)
        self.assertEqual(code, 0, out)


class UnusedAndOnly(unittest.TestCase):
    def test_an_unused_permission_is_reported(self):
        code, out = run({**CRATE, "ARCHITECTURE.md": table("x::a: b", "x::b: a")})
        self.assertEqual(code, 1, out)
        self.assertIn("layer line x::a allows b, which it does not use", out)

    def only_crate(self, user_of_worker):
        return {
            "crates/x/src/lib.rs": "pub mod worker;\npub mod pool;\npub mod proxy;\n",
            "crates/x/src/worker.rs": "pub struct Worker;\nimpl Worker { pub fn spawn() -> Worker { Worker } }\n",
            "crates/x/src/pool/mod.rs": "pub mod supervisor;\npub mod recycle;\n",
            "crates/x/src/pool/supervisor.rs": "use crate::worker::Worker;\npub fn up() -> Worker { Worker::spawn() }\n",
            "crates/x/src/pool/recycle.rs": user_of_worker,
            "crates/x/src/proxy.rs": "pub fn serve() {}\n",
        }

    def test_an_item_called_only_from_its_module(self):
        rules = table("x::worker: -", "x::pool: worker", "x::proxy: -",
                      "x::worker::Worker::spawn only from pool::supervisor")
        ok = self.only_crate("use crate::worker::Worker;\npub fn old(_: &Worker) {}\n")
        code, out = run({**ok, "ARCHITECTURE.md": rules})
        self.assertEqual(code, 0, out)
        bad = self.only_crate("use crate::worker::Worker;\npub fn more() -> Worker { Worker::spawn() }\n")
        code, out = run({**bad, "ARCHITECTURE.md": rules})
        self.assertEqual(code, 1, out)
        self.assertIn("crates/x/src/pool/recycle.rs:2: Worker::spawn is called only from pool::supervisor", out)

    def test_a_module_used_only_from_the_listed_modules(self):
        files = self.only_crate("pub fn f() {}\n")
        files["crates/x/src/proxy.rs"] = "pub fn serve() { crate::pool::supervisor::up(); }\n"
        rules = table("x::worker: -", "x::pool: worker", "x::proxy: pool", "x::pool::supervisor only from pool")
        code, out = run({**files, "ARCHITECTURE.md": rules})
        self.assertEqual(code, 1, out)
        self.assertIn("crates/x/src/proxy.rs uses x::pool::supervisor, which ARCHITECTURE.md allows only from pool", out)


class Invariants(unittest.TestCase):
    def arch(self, bullet):
        return table("x::a: -", "x::b: a") + "\n## Invariants\n\n" + bullet + "\n"

    def test_an_invariant_must_say_what_checks_it(self):
        code, out = run({**CRATE, "ARCHITECTURE.md": self.arch("- Nothing is ever lost.")})
        self.assertEqual(code, 1, out)
        self.assertIn("an invariant without `(checked by FILE::test, …)`: Nothing is ever lost.", out)

    def test_a_cited_test_must_exist(self):
        files = {**CRATE, "crates/x/tests/it/t.rs": "#[test]\nfn kept() {}\n"}
        code, out = run({**files, "ARCHITECTURE.md": self.arch(
            "- Nothing is lost\n  (checked by crates/x/tests/it/t.rs::gone, the layer table).")})
        self.assertEqual(code, 1, out)
        self.assertIn("checked by crates/x/tests/it/t.rs::gone: crates/x/tests/it/t.rs has no fn gone", out)
        code, out = run({**files, "ARCHITECTURE.md": self.arch(
            "- Nothing is lost\n  (checked by crates/x/tests/it/t.rs::kept, the layer table).")})
        self.assertEqual(code, 0, out)


if __name__ == "__main__":
    unittest.main()
