"""Benchmark: a newcomer's path from an empty controller to a --check of the README's small site, timed per command.

    python3 tests/bench/newcomer_bench.py [--core 2.19.14] [--keep] [--out FILE]

Follows README.md "Install" and "A small site" word for word, with only what is not on this machine replaced:

1. ``python3 -m venv`` and ``pip install 'ansible-core==X'`` (the README's ``pip install 'ansible-core>=2.17'``,
   pinned here so that runs compare; PyPI as configured on this machine);
2. ``ansible-galaxy collection install roce.fabric`` from a Galaxy server on loopback (tests/install/galaxy_stub.py)
   that offers the collection built from this checkout beside every collection of the ``ansible`` wheel, so that the
   resolver downloads what Galaxy would give (the wheel is taken from tests/run's cache, ~/.cache/roce-fabric/wheels);
3. ``pip install -r .../roce/fabric/requirements.txt`` from the installed copy;
4. the small site copied from the installed examples into mysite/, its known_hosts file made, its vault variable
   given with -e (the README's ansible-vault and ssh-keyscan steps need a real site), and every address moved to a
   closed port on loopback (nothing here to reach, nothing leaves the machine);
5. ``ansible-playbook -i mysite/hosts.yml roce.fabric.roce --check --diff``: the preflight, every stage reading
   every host, the summary (every host unreachable).

Prints each step's command and wall seconds, and the total; with --out, writes them to a file too.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "install"))
sys.path.insert(0, os.path.join(REPO, "tests", "utils"))
from closed_site import write_closed_site  # noqa: E402  pylint: disable=wrong-import-position
from galaxy_stub import GalaxyStub  # noqa: E402  pylint: disable=wrong-import-position

CACHE = os.environ.get("ROCE_FABRIC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "roce-fabric")


class Steps(object):
    def __init__(self):
        self.rows = []

    def run(self, title, argv, env, cwd, shown=None):
        start = time.monotonic()
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - start
        self.rows.append((title, shown or " ".join(argv), seconds, proc.returncode))
        print("%6.1f s  rc=%d  %s" % (seconds, proc.returncode, shown or " ".join(argv)), flush=True)
        return proc


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--core", default="2.19.14", help="ansible-core release to install")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--out", help="also write the report here")
    args = parser.parse_args()
    wheels = glob.glob(os.path.join(CACHE, "wheels", "ansible-*.whl"))
    if not wheels:
        sys.exit("no ansible wheel in %s/wheels: run tests/run build once" % CACHE)
    top = tempfile.mkdtemp(prefix="newcomer-")
    home = os.path.join(top, "home")
    os.makedirs(home)
    env = dict(PATH="%s/venv/bin:/usr/bin:/bin" % top, HOME=home, LC_ALL="C.UTF-8", ANSIBLE_NOCOLOR="1",
               ANSIBLE_HOST_KEY_CHECKING="false")
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONFIG_FILE"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    steps = Steps()
    # The collection as Galaxy would serve it: built from this checkout (not a step of the newcomer's).
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection", "build",
                    "--output-path", top, REPO], check=True, capture_output=True)
    tarball = glob.glob(os.path.join(top, "roce-fabric-*.tar.gz"))[0]
    galaxy = GalaxyStub(sorted(wheels)[-1])
    galaxy.publish(tarball)
    total = time.monotonic()
    with galaxy:
        steps.run("venv", [sys.executable, "-m", "venv", os.path.join(top, "venv")], env, top,
                  "python3 -m venv venv")
        steps.run("ansible-core", ["pip", "install", "-q", "ansible-core==%s" % args.core], env, top,
                  "python3 -m pip install 'ansible-core==%s'" % args.core)
        steps.run("collection", ["ansible-galaxy", "collection", "install", "roce.fabric", "-s", galaxy.url], env, top,
                  "ansible-galaxy collection install roce.fabric")
        installed = os.path.join(home, ".ansible", "collections", "ansible_collections", "roce", "fabric")
        steps.run("requirements", ["pip", "install", "-q", "-r", os.path.join(installed, "requirements.txt")], env, top,
                  "python3 -m pip install -r ~/.ansible/collections/ansible_collections/roce/fabric/requirements.txt")
        write_closed_site(os.path.join(installed, "inventories", "examples", "small_site", "hosts.yml"),
                          os.path.join(top, "mysite"))
        check = steps.run("check", ["ansible-playbook", "-i", "mysite/hosts.yml", "roce.fabric.roce", "--check", "--diff",
                                    "-e", "vault_switch_password=not-shown"], env, top,
                          "ansible-playbook -i mysite/hosts.yml roce.fabric.roce --check --diff")
    total = time.monotonic() - total
    summary = [line for line in check.stdout.splitlines() if line.strip().startswith('"summary,')]
    lines = ["newcomer path, %s, %d cores" % (time.strftime("%Y-%m-%d"), os.cpu_count() or 0), ""]
    lines += ["| step | command | seconds | rc |", "| --- | --- | --- | --- |"]
    lines += ["| %s | `%s` | %.1f | %d |" % row for row in steps.rows]
    lines += ["", "total: %.1f s" % total, "the --check run's summary: %s" % (summary[0].strip() if summary else "none")]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(report + "\n")
    if not args.keep:
        shutil.rmtree(top, ignore_errors=True)
    return 0 if all(row[3] == 0 for row in steps.rows) else 1


if __name__ == "__main__":
    sys.exit(main())
