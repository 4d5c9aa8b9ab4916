"""Tests of scripts/test-data.py against a real HTTP server on 127.0.0.1 serving real files.

Run: python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import gzip
import hashlib
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "test-data.py")
SAMPLE = os.path.join(HERE, "..", "data", "sample", "2012-10-17.csv.gz")


class Served(http.server.SimpleHTTPRequestHandler):
    """Serves the test's directory and counts the requests it answers."""

    hits = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        Served.hits.append(self.path)
        super().do_GET()


class TestData(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.www = os.path.join(self.tmp, "www")
        os.makedirs(self.www)
        shutil.copy(SAMPLE, os.path.join(self.www, "day.csv.gz"))
        with open(os.path.join(self.www, "run.zip"), "wb") as f:
            f.write(b"not really a zip, but bytes with a known sum\n")
        handler = lambda *a: Served(*a, directory=self.www)  # noqa: E731
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        Served.hits = []

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.tmp)

    def manifest(self, rows):
        path = os.path.join(self.tmp, "manifest.tsv")
        with open(path, "w") as f:
            f.write("# path\tsha256\turl\n")
            for row in rows:
                f.write("\t".join(row) + "\n")
        return path

    def run_script(self, manifest, root):
        env = {k: v for k, v in os.environ.items() if k != "CRANWHALES_TEST_DATA"}
        return subprocess.run(
            [sys.executable, SCRIPT, "--manifest", manifest, "--root", root],
            capture_output=True, text=True, env=env, timeout=60,
        )

    def good_rows(self):
        with gzip.open(SAMPLE, "rb") as f:
            day_sum = hashlib.sha256(f.read()).hexdigest()  # .csv.gz: the sum of the content
        with open(os.path.join(self.www, "run.zip"), "rb") as f:
            zip_sum = hashlib.sha256(f.read()).hexdigest()
        return [
            ("cranlogs/2012-10-17.csv.gz", day_sum, f"{self.base}/day.csv.gz"),
            ("shinyloadtest/runs/x.zip", zip_sum, f"{self.base}/run.zip"),
        ]

    def test_downloads_once_and_checks(self):
        root = os.path.join(self.tmp, "cache")
        m = self.manifest(self.good_rows())
        r = self.run_script(m, root)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), os.path.realpath(root))
        with open(os.path.join(root, "cranlogs/2012-10-17.csv.gz"), "rb") as a, open(SAMPLE, "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(len(Served.hits), 2)
        r = self.run_script(m, root)  # everything there and right: nothing downloaded again
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(Served.hits), 2)

    def test_wrong_sum_keeps_nothing(self):
        root = os.path.join(self.tmp, "cache")
        rows = self.good_rows()
        rows[1] = (rows[1][0], "0" * 64, rows[1][2])
        r = self.run_script(self.manifest(rows), root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("shinyloadtest/runs/x.zip", r.stderr)
        self.assertIn("SHA-256", r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        left = os.listdir(os.path.join(root, "shinyloadtest/runs"))
        self.assertEqual(left, [], "neither the file nor a .part may be left")

    def test_http_404_is_one_line(self):
        rows = [("cranlogs/2012-10-02.csv.gz", "1" * 64, f"{self.base}/nope.csv.gz")]
        r = self.run_script(self.manifest(rows), os.path.join(self.tmp, "cache"))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip().splitlines()[-1], f"error: test data cranlogs/2012-10-02.csv.gz: {self.base}/nope.csv.gz: HTTP 404")

    def test_offline_names_what_is_missing(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now: connection refused, as offline
        rows = [("cranlogs/2012-10-17.csv.gz", "2" * 64, f"http://127.0.0.1:{port}/day.csv.gz")]
        r = self.run_script(self.manifest(rows), os.path.join(self.tmp, "cache"))
        self.assertEqual(r.returncode, 1)
        lines = [l for l in r.stderr.splitlines() if l.startswith("error:")]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("cranlogs/2012-10-17.csv.gz is missing and cannot be downloaded", lines[0])
        self.assertNotIn("Traceback", r.stderr)

    def test_committed_manifest_matches_shared_copy(self):
        """The committed sums describe the team's files (skipped where ../shared is absent)."""
        shared = os.path.realpath(os.path.join(HERE, "..", "..", "shared", "data"))
        if not os.path.isdir(os.path.join(shared, "cranlogs")):
            self.skipTest("no ../shared/data here")
        env = {k: v for k, v in os.environ.items() if k != "CRANWHALES_TEST_DATA"}
        r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), shared)


if __name__ == "__main__":
    unittest.main()
