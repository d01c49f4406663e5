"""Bytecode cache of the lab VMs for code that Python imports from zip archives.

Ansible runs every module from a zip archive of the module and the module_utils it needs, and
Python's zipimport compiles each source file of such an archive anew on every import: it can
neither find nor write a .pyc there. Under QEMU's TCG that compiling is most of the cost of a
module call (about 3 of 4.5 seconds for ``ping``). This file, imported at start-up by
``roce_lab_bytecode.pth``, keeps what zipimport compiles in a root-only directory, keyed by the
interpreter's version and the source's SHA-256, so the same source is compiled once per VM.
A cache that cannot be read or written is ignored. It exists in the lab's guest image only; the
collection never installs it.
"""

import marshal
import os
import sys
import zipimport

CACHE_DIR = "/var/cache/roce-lab-bytecode"
_COMPILE = getattr(zipimport, "_compile_source", None)


def _with_filename(code, filename):
    consts = tuple(_with_filename(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _compile_cached(pathname, source):
    import hashlib

    key = hashlib.sha256(b"%x\0" % sys.hexversion + source).hexdigest()
    path = os.path.join(CACHE_DIR, key)
    try:
        with open(path, "rb") as handle:
            code = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        code = _COMPILE(pathname, source)
        try:
            os.makedirs(CACHE_DIR, mode=0o700, exist_ok=True)
            tmp = "%s.%d" % (path, os.getpid())
            with open(tmp, "wb") as handle:
                marshal.dump(code, handle)
            os.replace(tmp, path)
        except OSError:
            pass
        return code
    return code if code.co_filename == pathname else _with_filename(code, pathname)


if _COMPILE is not None and os.geteuid() == 0:
    zipimport._compile_source = _compile_cached
