# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Container images on a build host: the input checks, the build context's digest and the decision to build and
push, from one comparison of the digest the image carries (a label) with the context's.

PRIVATE to the roce.fabric collection: may change without notice.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat

CONTEXT_LABEL = "org.roce-fabric.context"
# An image reference without its tag: an optional registry host[:port], then lower-case path components
# (the distribution spec's grammar, without digests).
NAME_RE = re.compile(r"^(?:(?P<registry>[A-Za-z0-9][A-Za-z0-9.-]*(?::[0-9]{1,5})?)/)?"
                     r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
ARG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
FILE_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
# Extra builder options are flags only (``--runtime=runc``, ``--network=host``); never a second context, never a
# value that starts a new argument list.
BUILDER_ARG_RE = re.compile(r"^--[a-z][a-z0-9-]*(=[A-Za-z0-9_.:/=,+@-]*)?$")
# The flags the module sets itself: never from the inventory.
OWN_FLAGS = ("--file", "--tag", "--label", "--build-arg", "--output", "--iidfile")
BUILDERS = ("podman", "buildah", "docker")


class ImageInputError(ValueError):
    """Input the module refuses before it reads or changes anything."""


def check_input(params):
    name = str(params.get("name") or "")
    match = NAME_RE.match(name)
    if not match or len(name) > 255:
        raise ImageInputError("name %r must be an image name without a tag: [registry[:port]/]lower-case path "
                              "components of letters, digits and . _ -" % name[:80])
    # "localhost/x" and "host.example:5000/x" name a registry; a first component without a dot or port does not.
    registry = match.group("registry")
    if registry and not ("." in registry or ":" in registry or registry == "localhost"):
        registry = None
    tag = str(params.get("tag") or "")
    if not TAG_RE.match(tag):
        raise ImageInputError("tag %r must be 1-128 letters, digits, _ . - (not starting with . or -)" % tag[:80])
    if tag == "latest":
        raise ImageInputError("tag 'latest' moves; give the image a version tag")
    build_file = str(params.get("file") or "Containerfile")
    if not FILE_RE.match(build_file):
        raise ImageInputError("file %r must be a file name in the context (no path)" % build_file[:80])
    build_args = {}
    for key, value in sorted((params.get("build_args") or {}).items()):
        if not ARG_RE.match(str(key)):
            raise ImageInputError("build argument name %r must be letters, digits and _" % str(key)[:80])
        if "\n" in str(value) or "\x00" in str(value):
            raise ImageInputError("build argument %s holds a line break" % key)
        build_args[str(key)] = str(value)
    # Secrets reach the builder through its environment (--build-arg NAME takes NAME's value from there), never
    # through its argv, the commands record or the image's context label.
    secret_build_args = {}
    for key, value in sorted((params.get("secret_build_args") or {}).items()):
        if not ARG_RE.match(str(key)):
            raise ImageInputError("secret build argument name %r must be letters, digits and _" % str(key)[:80])
        if str(key) in build_args:
            raise ImageInputError("%s is both a build argument and a secret one" % key)
        if "\x00" in str(value):
            raise ImageInputError("secret build argument %s holds a NUL byte" % key)
        secret_build_args[str(key)] = str(value)
    builder_args = [str(arg) for arg in params.get("builder_args") or []]
    for arg in builder_args:
        if not BUILDER_ARG_RE.match(arg):
            raise ImageInputError("builder argument %r must be one --flag or --flag=value of plain characters"
                                  % arg[:80])
        if arg.split("=", 1)[0] in OWN_FLAGS:
            raise ImageInputError("builder argument %r sets what the module sets itself (%s)"
                                  % (arg[:80], ", ".join(OWN_FLAGS)))
    builder = str(params.get("builder") or "auto")
    if builder not in BUILDERS + ("auto",):
        raise ImageInputError("builder must be auto, podman, buildah or docker")
    if params.get("push") and not registry:
        raise ImageInputError("push needs a name that starts with a registry host (registry.example.com/team/image)")
    return dict(name=name, tag=tag, ref="%s:%s" % (name, tag), registry=registry, file=build_file,
                build_args=build_args, secret_build_args=secret_build_args, builder_args=builder_args,
                builder=builder, push=bool(params.get("push")),
                force=bool(params.get("force")), context=params.get("context"))


def context_digest(context, build_file, build_args, walk=os.walk, lstat=os.lstat, read=None):
    """SHA-256 over the build context: every file's relative path, type, mode and content, in sorted order, then
    the build file's name and the build arguments. Links are taken as links (their target), never followed."""
    read = read or _read
    digest = hashlib.sha256()
    entries = []
    for root, dirs, files in walk(context):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            entries.append((os.path.relpath(path, context), path))
    if not any(rel == build_file for rel, _path in entries):
        raise ImageInputError("%s has no %s" % (context, build_file))
    for rel, path in sorted(entries):
        info = lstat(path)
        digest.update(("%s\0%o\0" % (rel, info.st_mode)).encode("utf-8", "surrogateescape"))
        if stat.S_ISLNK(info.st_mode):
            digest.update(os.readlink(path).encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(info.st_mode):
            digest.update(read(path))
        digest.update(b"\0")
    digest.update(("file=%s\0" % build_file).encode("utf-8"))
    for key in sorted(build_args):
        digest.update(("arg=%s=%s\0" % (key, build_args[key])).encode("utf-8"))
    return digest.hexdigest()


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def plan(want, image, digest):
    """``dict(build, push, reason)``: build when the image is missing, carries another context digest or ``force``;
    push (where asked) whenever this run builds: an image whose push failed is untagged by the module, so the next
    run builds it again (from the builder's cache) and pushes."""
    if image is None:
        reason = "no image %s" % want["ref"]
    elif image["labels"].get(CONTEXT_LABEL) != digest:
        reason = "%s was built from another context" % want["ref"]
    elif want["force"]:
        reason = "force"
    else:
        return dict(build=False, push=False, reason="%s is built from this context" % want["ref"])
    return dict(build=True, push=want["push"], reason=reason)


def build_argv(builder_path, builder, want, digest):
    """The build command: ``podman build`` / ``buildah build`` / ``docker build``, the same flags for all three."""
    argv = [builder_path, "build", "--file", os.path.join(want["context"], want["file"]), "--tag", want["ref"],
            "--label", "%s=%s" % (CONTEXT_LABEL, digest)]
    for key in sorted(want["build_args"]):
        argv += ["--build-arg", "%s=%s" % (key, want["build_args"][key])]
    for key in sorted(want.get("secret_build_args") or {}):
        argv += ["--build-arg", key]  # the value from the builder's environment (build_env)
    return argv + want["builder_args"] + [want["context"]]


def build_env(want):
    """The environment the build command runs with: the secret build arguments' values."""
    return dict(want.get("secret_build_args") or {})


def inspect_argv(builder_path, builder, ref):
    if builder == "buildah":
        return [builder_path, "inspect", "--type", "image", ref]
    return [builder_path, "image", "inspect", ref]


def push_argv(builder_path, builder, ref):
    return [builder_path, "push", ref]


def untag_argv(builder_path, builder, ref):
    if builder == "buildah":
        return [builder_path, "rmi", ref]
    return [builder_path, "image", "rm", ref]
