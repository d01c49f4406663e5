"""Offline replacement for the get-pip script that ansible-test downloads.

ansible-test bootstraps pip in each of its virtual environments by running a cached copy of
get-pip (~/.ansible/test/cache/get_pip_<version>.py) and downloads it when the cache is empty.
This script takes its place: pip comes from the interpreter's own ensurepip wheel, then the
pinned pip version that ansible-test asked for is installed from the configured package index.
"""
import ensurepip
import os
import subprocess
import sys


def main():
    ensurepip.bootstrap(upgrade=True)
    # ensurepip points PIP_CONFIG_FILE at /dev/null for its own run; the index and CA settings
    # of the machine's pip configuration must apply to the install below.
    for name in ("PIP_CONFIG_FILE", "ENSUREPIP_OPTIONS"):
        os.environ.pop(name, None)
    requested = [arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
    return subprocess.call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check"] + requested)


if __name__ == "__main__":
    sys.exit(main())
