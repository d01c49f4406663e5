"""A Debian base image made on this machine, for the rdma_image role's build test (no registry can be reached).

``python lab/image/base.py [REF]`` makes ``localhost/roce-lab/debian:bookworm-minbase`` (or REF) once: debootstrap
``--variant=minbase`` of bookworm from the Debian mirror this machine's apt uses, imported with ``podman import``.
A no-op when podman already has the image. The collection never uses it; the lab's test names it as its base.
"""

import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rdma"))
from peer_qemu import debian_mirror  # noqa: E402  (the lab's one reading of the machine's apt sources)

REF = "localhost/roce-lab/debian:bookworm-minbase"
SUITE = "bookworm"


def exists(ref):
    return subprocess.run(["podman", "image", "exists", ref], check=False).returncode == 0


def make(ref=REF):
    # Tiers that build images may run at once (the image tier beside the VM lane): one makes the base, the others
    # wait for it.
    with open("/var/tmp/roce-lab-base.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not exists(ref):
            _make(ref)
    return ref


def _make(ref):
    work = tempfile.mkdtemp(prefix="roce-lab-base.", dir="/var/tmp")
    try:
        rootfs = os.path.join(work, "rootfs")
        print("lab: making the base image %s (debootstrap --variant=minbase %s, once)" % (ref, SUITE), flush=True)
        subprocess.run(["nice", "-n", "10", "debootstrap", "--variant=minbase", SUITE, rootfs, debian_mirror(SUITE)],
                       check=True, stdout=subprocess.DEVNULL)
        # Lists the build's apt-get update fetches again; the mirror stays the machine's own. The packages debootstrap
        # downloaded go, as in Debian's published images (about 120 MB that every image built on it would carry).
        shutil.rmtree(os.path.join(rootfs, "var", "lib", "apt", "lists"), ignore_errors=True)
        os.makedirs(os.path.join(rootfs, "var", "lib", "apt", "lists", "partial"))
        for path in glob.glob(os.path.join(rootfs, "var", "cache", "apt", "archives", "*.deb")) + \
                glob.glob(os.path.join(rootfs, "var", "cache", "apt", "*.bin")):
            os.unlink(path)
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        subprocess.run(["podman", "import", "--change", "CMD [\"/bin/bash\"]", "-", ref], stdin=tar.stdout, check=True,
                       stdout=subprocess.DEVNULL)
        if tar.wait() != 0:
            raise SystemExit("lab: tar of the base image's root failed")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    print(make(*sys.argv[1:2]))
