# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A Galaxy server on loopback that offers every collection of the ``ansible`` package's wheel.

The install tier asks it for the dependencies of the built collection the way a user's
``ansible-galaxy collection install roce.fabric`` asks galaxy.ansible.com: the real resolver of
ansible-core, following ``galaxy.yml``'s ``dependencies`` and nothing else, with no network.

Only the read side of the Galaxy v3 API that ``ansible-galaxy collection install`` calls is served
(the paths and fields read by ``ansible.galaxy.api.GalaxyAPI``): the API root with
``available_versions``, a collection's metadata, its versions list (one page), one version's
metadata (``download_url``, ``artifact.sha256``, ``metadata.dependencies``) and the artifact.

The ``ansible`` wheel carries each collection as installed, with its MANIFEST.json, but without the
files its packagers drop (tests, CI settings), so its FILES.json lists files the wheel lacks. An
artifact is therefore made as ``ansible-galaxy collection build`` makes one from that tree: the files
present, a FILES.json of them with their SHA-256, and MANIFEST.json's checksum of that FILES.json.
Artifacts are made on first request, so a run costs only the collections it resolves. ``publish``
adds a built artifact (the collection under test), so that it installs by name as from Galaxy.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "ansible_collections/"


def wheel_index(wheel_path):
    """{(namespace, name): {"version", "dependencies", "prefix"}} of every collection in the wheel."""
    index = {}
    with zipfile.ZipFile(wheel_path) as wheel:
        for member in wheel.namelist():
            parts = member.split("/")
            if len(parts) != 4 or parts[0] != "ansible_collections" or parts[3] != "MANIFEST.json":
                continue
            info = json.loads(wheel.read(member))["collection_info"]
            index[(info["namespace"], info["name"])] = {
                "version": info["version"],
                "dependencies": dict(info.get("dependencies") or {}),
                "prefix": "/".join(parts[:3]) + "/",
            }
    return index


def _tar_add(tar, name, data, mode=0o644):
    member = tarfile.TarInfo(name)
    member.size = len(data)
    member.mode = mode
    member.mtime = 0
    tar.addfile(member, io.BytesIO(data))


def build_artifact(wheel_path, prefix):
    """The bytes of a collection artifact (.tar.gz) made from the wheel's copy of one collection."""
    with zipfile.ZipFile(wheel_path) as wheel:
        members = sorted(
            m for m in wheel.namelist()
            if m.startswith(prefix) and not m.endswith("/") and m[len(prefix):] not in ("MANIFEST.json", "FILES.json")
        )
        contents = [(m[len(prefix):], wheel.read(m), (wheel.getinfo(m).external_attr >> 16) & 0o777) for m in members]
        manifest = json.loads(wheel.read(prefix + "MANIFEST.json"))
    files = [{"name": ".", "ftype": "dir", "chksum_type": None, "chksum_sha256": None, "format": 1}]
    seen_dirs = set()
    for name, data, _mode in contents:
        parts = name.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder not in seen_dirs:
                seen_dirs.add(folder)
                files.append({"name": folder, "ftype": "dir", "chksum_type": None, "chksum_sha256": None, "format": 1})
        files.append({"name": name, "ftype": "file", "chksum_type": "sha256",
                      "chksum_sha256": hashlib.sha256(data).hexdigest(), "format": 1})
    files_json = json.dumps({"files": files, "format": 1}, indent=4).encode()
    manifest["file_manifest_file"] = {"name": "FILES.json", "ftype": "file", "chksum_type": "sha256",
                                      "chksum_sha256": hashlib.sha256(files_json).hexdigest(), "format": 1}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        _tar_add(tar, "MANIFEST.json", json.dumps(manifest, indent=4).encode())
        _tar_add(tar, "FILES.json", files_json)
        for folder in sorted(seen_dirs):
            member = tarfile.TarInfo(folder)
            member.type = tarfile.DIRTYPE
            member.mode = 0o755
            tar.addfile(member)
        for name, data, mode in contents:
            _tar_add(tar, name, data, mode or 0o644)
    return out.getvalue()


def dependency_closure(index, dependencies):
    """Every collection reached from ``dependencies`` (a galaxy.yml mapping) through the index."""
    wanted, todo = set(), list(dependencies)
    while todo:
        fqcn = todo.pop()
        if fqcn in wanted:
            continue
        wanted.add(fqcn)
        entry = index.get(tuple(fqcn.split(".", 1)))
        if entry:
            todo.extend(entry["dependencies"])
    return wanted


class GalaxyStub(object):
    """Serves the wheel's collections on 127.0.0.1; ``requests`` lists the paths asked for."""

    def __init__(self, wheel_path):
        self.wheel_path = wheel_path
        self.index = wheel_index(wheel_path)
        self.requests = []
        self._artifacts = {}
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: the test reads stub.requests
                pass

            def do_GET(self):  # noqa: N802 (http.server's name)
                stub.requests.append(self.path)
                status, body, kind = stub.answer(self.path.split("?", 1)[0])
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/api/" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def publish(self, tarball):
        """Offer a built collection artifact too (as if published), by its MANIFEST.json."""
        with tarfile.open(tarball) as tar:
            member = next(m for m in tar.getmembers() if m.name.lstrip("./") == "MANIFEST.json")
            info = json.load(tar.extractfile(member))["collection_info"]
        with open(tarball, "rb") as handle:
            data = handle.read()
        key = (info["namespace"], info["name"])
        self.index[key] = {"version": info["version"], "dependencies": dict(info.get("dependencies") or {}),
                           "prefix": None}
        with self._lock:
            self._artifacts[key] = (data, hashlib.sha256(data).hexdigest())
        return "%s.%s" % key

    def artifact(self, key):
        with self._lock:
            if key not in self._artifacts:
                data = build_artifact(self.wheel_path, self.index[key]["prefix"])
                self._artifacts[key] = (data, hashlib.sha256(data).hexdigest())
            return self._artifacts[key]

    def downloaded(self):
        """The collections whose artifact was fetched, as namespace.name."""
        names = set()
        for path in self.requests:
            if path.startswith("/download/"):
                names.add(".".join(path[len("/download/"):].split("-")[:2]))
        return names

    def answer(self, path):
        def as_json(status, data):
            return status, json.dumps(data).encode(), "application/json"

        parts = [p for p in path.split("/") if p]
        if parts == ["api"]:
            return as_json(200, {"available_versions": {"v3": "v3/"}})
        if parts[:1] == ["download"] and len(parts) == 2:
            stem = parts[1][:-len(".tar.gz")] if parts[1].endswith(".tar.gz") else ""
            namespace, name = (stem.split("-") + ["", ""])[:2]
            if (namespace, name) in self.index:
                return 200, self.artifact((namespace, name))[0], "application/gzip"
            return as_json(404, {"detail": "not found"})
        if parts[:3] != ["api", "v3", "collections"] or len(parts) < 5:
            return as_json(404, {"detail": "not found"})
        key = (parts[3], parts[4])
        entry = self.index.get(key)
        if entry is None:
            return as_json(404, {"detail": "not found"})
        base = "/api/v3/collections/%s/%s/" % key
        if len(parts) == 5:
            return as_json(200, {"namespace": key[0], "name": key[1], "created_at": "2026-01-01T00:00:00Z",
                                 "updated_at": "2026-01-01T00:00:00Z", "highest_version": {"version": entry["version"]}})
        if parts[5:] == ["versions"]:
            return as_json(200, {"meta": {"count": 1}, "links": {"first": None, "previous": None, "next": None,
                                                                 "last": None},
                                 "data": [{"version": entry["version"], "href": base + "versions/%s/" % entry["version"]}]})
        if len(parts) == 7 and parts[5] == "versions" and parts[6] == entry["version"]:
            _data, digest = self.artifact(key)
            return as_json(200, {
                "namespace": {"name": key[0]}, "collection": {"name": key[1]}, "version": entry["version"],
                "href": base + "versions/%s/" % entry["version"],
                "download_url": self.url[:-len("/api/")] + "/download/%s-%s-%s.tar.gz" % (key[0], key[1], entry["version"]),
                "artifact": {"filename": "%s-%s-%s.tar.gz" % (key[0], key[1], entry["version"]), "sha256": digest},
                "metadata": {"dependencies": entry["dependencies"]}, "signatures": [],
            })
        return as_json(404, {"detail": "not found"})


if __name__ == "__main__":
    import sys
    import time

    with GalaxyStub(sys.argv[1]) as running:
        print(running.url, flush=True)
        while os.path.exists(sys.argv[1]):
            time.sleep(1)
