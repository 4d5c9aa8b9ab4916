#!/usr/bin/env python3
"""Offline checks of deploy/: the surge Containerfile and the Kubernetes manifests (surge's Jobs
and manifold's Shiny Deployment).

Run by `make test-surge-deploy` with the project's venv (.venv, made by scripts/install-deps.sh),
which holds kubernetes-validate: the Kubernetes API's JSON schemas, bundled, so no cluster and
no network are needed. No container engine runs here, so the image is checked, not built: every
COPY source exists and is not ignored, the stages hand over what the next one expects, and the
build commands are the Makefile's. If `docker info` works, the image is also built for real.

The Job scripts are then run as the pods would run them (mount paths mapped to a temp dir), with
the real surge binary against the real Shiny app on loopback, followed by the merge Job's script.

Usage: deploy/check.py [SURGE_BINARY]   (default: the debug build in cargo's target directory)
"""

import fnmatch
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
CONTAINERFILE = ROOT / "deploy" / "surge" / "Containerfile"
# The newest API the validator knows, and an older one still run by managed clusters.
K8S_VERSIONS = ["1.37.0", "1.30.0"]
failures = []


def check(ok, what):
    """Records a failed check (all checks run; the exit status says whether any failed)."""
    if not ok:
        failures.append(what)
        print(f"FAIL {what}")


# ---------------------------------------------------------------- Containerfile

def instructions(path):
    """(keyword, rest) per instruction, continuation lines joined, comments dropped."""
    out, cur = [], ""
    for line in path.read_text().splitlines():
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            kw, _, rest = cur.partition(" ")
            out.append((kw.upper(), rest.strip()))
            cur = ""
    return out


def ignored(rel, patterns):
    """Whether .dockerignore drops `rel` (a path or any of its parents)."""
    parts = Path(rel).parts
    for i in range(1, len(parts) + 1):
        p = "/".join(parts[:i])
        for pat in patterns:
            pat = pat.rstrip("/")
            if fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, pat.replace("**/", "")):
                return True
    return False


def makefile_recipe(target):
    """The shell lines of a Makefile target, `$(CARGO)` spelled `cargo`."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(f"{target}:"))
    recipe = []
    for l in lines[start + 1:]:
        if not l.startswith("\t"):
            break
        recipe.append(l.strip().replace("$(CARGO)", "cargo").lstrip("@"))
    return recipe


def check_containerfile():
    ins = instructions(CONTAINERFILE)
    patterns = [l.strip() for l in (ROOT / ".dockerignore").read_text().splitlines()
                if l.strip() and not l.startswith("#")]
    stages, stage, workdir = {}, None, {}
    copied, runs, users = {}, {}, {}
    for kw, rest in ins:
        if kw == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            stage = m.group(2) or f"#{len(stages)}"
            stages[stage] = m.group(1)
            copied[stage], runs[stage] = [], []
        elif kw == "WORKDIR":
            workdir[stage] = rest
        elif kw == "RUN":
            runs[stage].append(rest)
        elif kw == "USER":
            users[stage] = rest
        elif kw == "COPY":
            args = shlex.split(rest)
            src_stage = next((a.split("=", 1)[1] for a in args if a.startswith("--from=")), None)
            paths = [a for a in args if not a.startswith("--")]
            srcs, dest = paths[:-1], paths[-1]
            for s in srcs:
                if src_stage is None:
                    check((ROOT / s).exists(), f"Containerfile: COPY source {s} does not exist")
                    check(not ignored(s, patterns), f"Containerfile: COPY source {s} is in .dockerignore")
                    copied[stage].append(s)
                else:
                    check(src_stage in stages and src_stage != stage,
                          f"Containerfile: COPY --from={src_stage}: no such earlier stage")
                    check(s.startswith(workdir.get(src_stage, "/") + "/"),
                          f"Containerfile: COPY --from={src_stage} {s} is outside that stage's WORKDIR")
                    copied[stage].append((src_stage, s, dest))
    # Stage 1 = `make web`: the same commands, on every file the build reads.
    web_recipes = [l.removeprefix("cd web && ") for l in
                   makefile_recipe("web/node_modules")[:1] + makefile_recipe("web")]
    check(runs.get("web") == web_recipes,
          f"Containerfile: web stage runs {runs.get('web')}, the Makefile {web_recipes}")
    tsconfig = json.loads((ROOT / "web/tsconfig.json").read_text())
    build_script = json.loads((ROOT / "web/package.json").read_text())["scripts"]["build"]
    needed = {f"web/{p}" for p in tsconfig["include"]} | {"web/index.html", "web/tsconfig.json"}
    needed |= {f"web/{c}" for c in re.findall(r"-c (\S+)", build_script)}
    for n in sorted(needed):
        check(n in copied.get("web", []), f"Containerfile: web stage does not copy {n}")
    out_dir = re.search(r'outDir:\s*"([^"]+)"', (ROOT / "web/vite.report.config.ts").read_text()).group(1)
    # Stage 2 = cargo: gets the runtime where crates/surge/build.rs reads it.
    build_rs = (ROOT / "crates/surge/build.rs").read_text()
    runtime = re.search(r'"\.\./\.\./([^"]+)/report\.js"', build_rs).group(1)
    handed = [c for c in copied.get("build", []) if isinstance(c, tuple)]
    check(("web", f"{workdir['web']}/{out_dir}", f"./{runtime}") in handed,
          f"Containerfile: build stage must get {workdir['web']}/{out_dir} as ./{runtime}: {handed}")
    for src in ["Cargo.toml", "Cargo.lock", "crates"]:
        check(src in copied.get("build", []), f"Containerfile: build stage does not copy {src}")
    cargo = [r for r in runs.get("build", []) if r.startswith("cargo build")]
    release = [l for l in makefile_recipe("release") if l.startswith("cargo build")][0]
    check(len(cargo) == 1 and "--release" in cargo[0] and "--release" in release
          and "-p surge" in cargo[0], f"Containerfile: cargo build {cargo} vs Makefile {release}")
    final = list(stages)[-1]
    check(("build", f"{workdir['build']}/target/release/surge", "/usr/local/bin/surge") in copied[final],
          "Containerfile: final stage must copy the release binary to /usr/local/bin/surge")
    check(users.get(final, "").isdigit(), "Containerfile: final stage must run as a numeric non-root USER")
    problem = ca_bundle_problem(runs[final])
    check(problem is None, f"Containerfile: {problem}")
    return int(users.get(final, "0") or 0)


# Where surge (rustls-native-certs, via openssl-probe) finds the platform's roots on Debian.
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def ca_bundle_problem(final_runs):
    """Why the final stage would have no CA bundle (then every https:// target fails verification
    inside the image), or None: it must apt-get install ca-certificates and remove no certs after."""
    installed = None
    for i, r in enumerate(final_runs):
        for cmd in re.split(r"&&|;|\|\|", r):
            words = cmd.split()
            if "apt-get" in words and "install" in words and "ca-certificates" in words:
                installed = i
    if installed is None:
        return (f"final stage installs no CA bundle: add `apt-get install ca-certificates` "
                f"({CA_BUNDLE}), or https:// targets fail verification in the image")
    for r in final_runs[installed:]:
        if re.search(r"rm\s[^&;|]*(/etc/ssl|/usr/share/ca-certificates)", r):
            return f"final stage removes the CA bundle after installing it: {r}"
    return None


def check_ca_bundle_check():
    """The CA bundle check fails a final stage without the install (its own negative case)."""
    ins = instructions(CONTAINERFILE)
    last = max(i for i, (kw, _) in enumerate(ins) if kw == "FROM")
    runs = [rest for kw, rest in ins[last:] if kw == "RUN"]
    without = [r for r in runs if "ca-certificates" not in r]
    check(ca_bundle_problem(runs) is None and ca_bundle_problem(without) is not None,
          "deploy check: the CA bundle check does not tell a final stage with the bundle from one without")
    check(ca_bundle_problem(runs + [f"rm -f {CA_BUNDLE}"]) is not None,
          "deploy check: the CA bundle check misses a bundle removed after its install")


def try_container_build():
    engine = next((e for e in ("docker", "podman") if shutil.which(e)
                   and subprocess.run([e, "info"], capture_output=True).returncode == 0), None)
    if engine is None:
        print("deploy check: no container engine reachable here: image checked, not built"
              " (`make image` builds it with buildah and locally made base images)")
        return
    tag = "surge-deploy-check"
    r = subprocess.run([engine, "build", "-f", str(CONTAINERFILE), "-t", tag, str(ROOT)])
    check(r.returncode == 0, f"{engine} build failed")
    if r.returncode == 0:
        v = subprocess.run([engine, "run", "--rm", tag, "--version"], capture_output=True, text=True)
        check(v.stdout.startswith("surge "), f"image runs surge: {v.stdout!r} {v.stderr!r}")
        ca = subprocess.run([engine, "run", "--rm", "--entrypoint", "test", tag, "-s", CA_BUNDLE])
        check(ca.returncode == 0, f"image has no CA bundle at {CA_BUNDLE}")


# ---------------------------------------------------------------- Kubernetes

def manifests():
    docs = {}
    for f in sorted(K8S.glob("*.yaml")):
        for d in yaml.safe_load_all(f.read_text()):
            if d:
                docs[(d["kind"], d["metadata"]["name"])] = (f.name, d)
    return docs


def pod_specs(docs):
    for (kind, name), (_, d) in docs.items():
        if kind == "Job":
            yield kind, name, d["spec"]["template"]["spec"]
        elif kind == "Pod":
            yield kind, name, d["spec"]


def check_k8s(docs, image_user):
    for (kind, name), (f, d) in docs.items():
        for v in K8S_VERSIONS:
            try:
                kubernetes_validate.validate(d, v, strict=True)
            except kubernetes_validate.ValidationError as e:
                check(False, f"{f}: {kind}/{name} invalid for Kubernetes {v}: {e.message}")
    images = set()
    for kind, name, spec in pod_specs(docs):
        check(spec["securityContext"].get("runAsUser") == image_user,
              f"{kind}/{name}: runAsUser differs from the image's USER {image_user}")
        for vol in spec.get("volumes", []):
            if "configMap" in vol:
                check(("ConfigMap", vol["configMap"]["name"]) in docs, f"{kind}/{name}: no ConfigMap {vol}")
            if "persistentVolumeClaim" in vol:
                claim = vol["persistentVolumeClaim"]["claimName"]
                check(("PersistentVolumeClaim", claim) in docs, f"{kind}/{name}: no claim {claim}")
        for c in spec["containers"]:
            images.add(c["image"])
            for ref in c.get("envFrom", []):
                check(("ConfigMap", ref["configMapRef"]["name"]) in docs, f"{kind}/{name}: no {ref}")
            mounts = {m["name"] for m in c.get("volumeMounts", [])}
            check(mounts <= {v["name"] for v in spec.get("volumes", [])}, f"{kind}/{name}: mount without volume")
    check(len(images) == 1, f"one surge image everywhere: {images}")

    job = docs[("Job", "surge-segments")][1]["spec"]
    plan = docs[("ConfigMap", "surge-plan")][1]["data"]
    check(job.get("completionMode") == "Indexed", "segments Job: completionMode must be Indexed")
    n = int(plan["SEGMENTS"])
    check(job["completions"] == n == job["parallelism"],
          f"segments Job: completions {job['completions']} and parallelism {job['parallelism']} must equal SEGMENTS {n}")
    check(job.get("backoffLimit") == 0, "segments Job: a retried segment would start late: backoffLimit 0")
    script = job["template"]["spec"]["containers"][0]["args"][0]
    unset = set(re.findall(r"\$\(?\(?\{?([A-Z_][A-Z0-9_]*)", script)) - set(plan) - {"JOB_COMPLETION_INDEX"}
    check(not unset, f"segments script uses variables the plan does not set: {unset}")
    for flag in ['--segment "$k/$SEGMENTS"', '--start-at "$START_AT"', "k=$((JOB_COMPLETION_INDEX + 1))"]:
        check(flag in script, f"segments script lacks {flag}")
    rec = docs[("ConfigMap", "surge-recording")][1]["data"]
    check("recording.log" in rec and rec["recording.log"].startswith("# version: 1"),
          "recording ConfigMap: recording.log key with a recording")
    datetime.fromisoformat(plan["START_AT"].replace("Z", "+00:00"))


# ---------------------------------------------------------------- the Job scripts, run

def script_of(docs, name):
    return docs[("Job", name)][1]["spec"]["template"]["spec"]["containers"][0]["args"][0]


def surge_supports_segments(surge):
    replay = subprocess.run([surge, "replay", "--help"], capture_output=True, text=True).stdout
    top = subprocess.run([surge, "--help"], capture_output=True, text=True).stdout
    return "--segment" in replay and "--start-at" in replay and re.search(r"^\s+merge\b", top, re.M)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_jobs(docs, surge):
    """Runs every segment pod's script at once, then the merge script, on a temp 'volume'."""
    if not surge_supports_segments(surge):
        print("deploy check: SKIPPED running the Job scripts: this surge has no --segment, "
              "--start-at or merge yet (issue 13, points 1-2)")
        return
    app = ROOT / "crates/manifold/tests/fixtures/shiny-replay"
    port = free_port()
    shiny = subprocess.Popen(["Rscript", "-e", f"shiny::runApp('{app}', host='127.0.0.1', port={port}, "
                              "launch.browser=FALSE)"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            check(time.time() < deadline and shiny.poll() is None, "Shiny app did not start")
            if failures:
                return
            time.sleep(0.2)
        with tempfile.TemporaryDirectory() as tmp:
            recording, results = Path(tmp, "recording"), Path(tmp, "results")
            recording.mkdir()
            results.mkdir()
            data = docs[("ConfigMap", "surge-recording")][1]["data"]["recording.log"]
            (recording / "recording.log").write_text(data)
            n = int(docs[("ConfigMap", "surge-plan")][1]["data"]["SEGMENTS"])
            start_at = (datetime.now(timezone.utc) + timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
            env = dict(os.environ, PATH=f"{Path(surge).parent}:{os.environ['PATH']}",
                       TARGET=f"http://127.0.0.1:{port}/", USERS=str(2 * n), START_INTERVAL="100ms",
                       LOADED_DURATION="0s", SEGMENTS=str(n), START_AT=start_at)

            def mapped(script):
                """The pod's mount paths (absolute, at a word start) mapped to the temp dirs."""
                script = re.sub(r"(?<![\w/.-])/recording(?=/)", str(recording), script)
                return re.sub(r"(?<![\w/.-])/results(?=[/ ]|$)", str(results), script)

            pods = [subprocess.Popen(["/bin/sh", "-c", mapped(script_of(docs, "surge-segments"))],
                                     env=dict(env, JOB_COMPLETION_INDEX=str(k)),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    for k in range(n)]
            for k, p in enumerate(pods):
                _, err = p.communicate(timeout=180)
                check(p.returncode == 0, f"segment pod {k}: exit {p.returncode}: {err.strip()[-300:]}")
                status = results / "exit" / f"segment-{k + 1}"
                check(status.is_file() and status.read_text().strip() == "0",
                      f"segment {k + 1}: surge exit status file {status}")
            merge = subprocess.run(["/bin/sh", "-c", mapped(script_of(docs, "surge-merge"))], env=env,
                                   capture_output=True, text=True, timeout=180)
            check(merge.returncode == 0, f"merge Job script failed: {merge.stderr.strip()[-300:]}")
            sessions = list((results / "merged" / "sessions").glob("*.csv"))
            check(len(sessions) == 2 * n, f"merged run has {len(sessions)} sessions, want {2 * n}")
            check((results / "report.html").is_file(), "merge Job wrote no report.html")
            print(f"deploy check: {n} segment scripts + merge ran: {len(sessions)} sessions merged")
    finally:
        shiny.terminate()
        shiny.wait(timeout=10)


# ---------------------------------------------------------------- manifold's Deployment, run

MANIFOLD_YAML = K8S / "manifold" / "manifold.yaml"


def seconds(d):
    """A manifold duration ('30s', '500ms', '2m') in seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", d)
    check(m is not None, f"{MANIFOLD_YAML.name}: duration {d!r} not understood by this check")
    if not m:
        return 0
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def check_manifold_k8s(manifold):
    """manifold.yaml: valid for each Kubernetes version, its references whole, its grace period
    covering manifold's bounded shutdown; then its container's arguments run with the real
    manifold on the ConfigMap's app (R Shiny), readiness answered on the probe's path, and a
    SIGTERM that ends within terminationGracePeriodSeconds."""
    docs = {}
    for d in yaml.safe_load_all(MANIFOLD_YAML.read_text()):
        if d:
            docs[(d["kind"], d["metadata"]["name"])] = d
            for v in K8S_VERSIONS:
                try:
                    kubernetes_validate.validate(d, v, strict=True)
                except kubernetes_validate.ValidationError as e:
                    check(False, f"{MANIFOLD_YAML.name}: {d['kind']}/{d['metadata']['name']} invalid for {v}: {e.message}")
    deps = [d for (k, _), d in docs.items() if k == "Deployment"]
    check(len(deps) == 1, f"{MANIFOLD_YAML.name}: one Deployment")
    if failures:
        return
    dep = deps[0]
    spec = dep["spec"]["template"]["spec"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    check(dep["spec"]["selector"]["matchLabels"].items() <= labels.items(), "Deployment selector matches its pods")
    for (kind, name), d in docs.items():
        if kind == "Service":
            check(d["spec"]["selector"].items() <= labels.items(), f"Service/{name} selects the Deployment's pods")
    for vol in spec.get("volumes", []):
        if "configMap" in vol:
            check(("ConfigMap", vol["configMap"]["name"]) in docs, f"Deployment: no ConfigMap {vol}")
    c = spec["containers"][0]
    args = c["args"]
    flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    bound = seconds(flags.get("drain-timeout", "0s")) + seconds(flags.get("stop-timeout", "5s"))
    check(grace >= bound, f"terminationGracePeriodSeconds {grace} < --drain-timeout + --stop-timeout ({bound} s)")
    ready = c["readinessProbe"]["httpGet"]["path"]
    check(ready == "/__manifold__/status", f"readinessProbe on {ready}, not manifold's status")
    if failures or shutil.which("Rscript") is None:
        if not failures:
            print("deploy check: SKIPPED running manifold.yaml's container: no Rscript")
        return
    with tempfile.TemporaryDirectory() as tmp:
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        mapped = []
        for a in args:
            if a in mounts:  # the app's mount path: the ConfigMap's files in a temp dir
                vol = next(v for v in spec["volumes"] if v["name"] == mounts[a])
                for fname, text in docs[("ConfigMap", vol["configMap"]["name"])]["data"].items():
                    Path(tmp, fname).write_text(text)
                a = tmp
            elif a.startswith("--listen="):
                port = free_port()
                a = f"--listen=127.0.0.1:{port}"
            mapped.append(a)
        proc = subprocess.Popen([manifold, *mapped], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline, status = time.time() + 90, None
            while time.time() < deadline and proc.poll() is None:
                status = http_status(url + ready)
                if status == 200:
                    break
                time.sleep(0.3)
            check(status == 200, f"manifold with manifold.yaml's args: readiness {ready} answered {status}")
            check(http_status(url + "/") == 200, "manifold with manifold.yaml's args: the app's page")
            started = time.time()
            proc.terminate()
            proc.wait(timeout=grace + 5)
            took = time.time() - started
            check(took <= grace, f"SIGTERM took {took:.1f} s, over terminationGracePeriodSeconds {grace}")
            print(f"deploy check: manifold.yaml's container ran (R Shiny app ready, SIGTERM done in {took:.1f} s of {grace} s)")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def http_status(url):
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def default_surge():
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return str(Path(json.loads(meta.stdout)["target_directory"]) / "debug" / "surge")


def main():
    surge = sys.argv[1] if len(sys.argv) > 1 else default_surge()
    check(Path(surge).is_file(), f"{surge} missing: cargo build -p surge --bin surge")
    user = check_containerfile()
    check_ca_bundle_check()
    try_container_build()
    docs = manifests()
    check_k8s(docs, user)
    print(f"deploy check: {len(docs)} manifests valid for Kubernetes {', '.join(K8S_VERSIONS)} (strict schema)")
    if surge and not failures:
        run_jobs(docs, surge)
    manifold = str(Path(surge).parent / "manifold")
    check(Path(manifold).is_file(), f"{manifold} missing: cargo build -p manifold")
    if not failures:
        check_manifold_k8s(manifold)
    if failures:
        print(f"deploy check: {len(failures)} failed")
        sys.exit(1)
    print("deploy check: ok")


if __name__ == "__main__":
    main()
