# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container family (container_image): the parser on podman output captured on the lab machine
(fixtures/container), the input checks, the context digest and the build decision."""

from __future__ import annotations

import os

import pytest

from ansible_collections.roce.fabric.plugins.module_utils.container import parsers, state
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus


def read(name):
    return corpus.read("container", name)


def params(**overrides):
    base = dict(name="localhost/roce-fabric/rdma-job", tag="inbox-1", context="/ctx", file="Containerfile",
                build_args={}, builder="auto", builder_args=[], push=False, force=False)
    base.update(overrides)
    return base


def test_podman_inspect_of_a_built_image():
    image = parsers.parse_inspect(read("podman_image_inspect.json"))
    assert image["id"] == "63122be201374aaa766e479955f441e32b5b81cb80b0090f125614ba002bb4c7"
    assert image["labels"] == {"a": "b", "io.buildah.version": "1.28.2", "org.roce-fabric.context": "abc"}


def test_an_image_podman_does_not_have():
    assert parsers.parse_inspect("[]") is None and parsers.parse_inspect("") is None
    assert parsers.not_found(read("podman_image_inspect_missing.txt"))
    assert not parsers.not_found("Error: short-name resolution enforced but cannot prompt without a TTY")


def test_buildah_shape_labels():
    # buildah inspect --type image prints one object; the labels sit under OCIv1.config.
    image = parsers.parse_inspect('{"FromImageID": "x1", "OCIv1": {"config": {"Labels": {"k": "v"}}}}')
    assert image == dict(id="x1", labels={"k": "v"})


def test_input_and_registry():
    want = state.check_input(params())
    assert want["ref"] == "localhost/roce-fabric/rdma-job:inbox-1" and want["registry"] == "localhost"
    assert state.check_input(params(name="registry.example.com:5000/ml/rdma-job", push=True))["registry"] == \
        "registry.example.com:5000"
    assert state.check_input(params(name="ml/rdma-job"))["registry"] is None


@pytest.mark.parametrize("overrides, message", [
    (dict(tag="latest"), "tag 'latest' moves"),
    (dict(tag="-x"), "tag"),
    (dict(tag="a b"), "tag"),
    (dict(name="ML/Job"), "must be an image name"),
    (dict(name="a//b"), "must be an image name"),
    (dict(name="ml/rdma-job", push=True), "push needs a name that starts with a registry host"),
    (dict(file="../Containerfile"), "must be a file name"),
    (dict(build_args={"A-B": "1"}), "build argument name"),
    (dict(build_args={"A": "1\nRUN x"}), "line break"),
    (dict(builder_args=["--network=host", "-t"]), "one --flag"),
    (dict(builder_args=["--file=/etc/passwd"]), "sets what the module sets itself"),
    (dict(builder_args=["--label=x=y"]), "sets what the module sets itself"),
    (dict(builder_args=["--network=host;rm"]), "one --flag"),
    (dict(builder="kaniko"), "builder must be"),
])
def test_bad_input_is_refused(overrides, message):
    with pytest.raises(state.ImageInputError, match=message):
        state.check_input(params(**overrides))


def write(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_context_digest_follows_content_names_mode_and_arguments(tmp_path):
    write(tmp_path, {"Containerfile": "FROM x\n", "files/a.txt": "a\n"})
    first = state.context_digest(str(tmp_path), "Containerfile", {})
    assert first == state.context_digest(str(tmp_path), "Containerfile", {})
    assert first != state.context_digest(str(tmp_path), "Containerfile", {"A": "1"})
    (tmp_path / "files" / "a.txt").write_text("b\n")
    second = state.context_digest(str(tmp_path), "Containerfile", {})
    assert second != first
    os.chmod(str(tmp_path / "files" / "a.txt"), 0o600)
    assert state.context_digest(str(tmp_path), "Containerfile", {}) != second
    os.symlink("a.txt", str(tmp_path / "files" / "link"))
    assert state.context_digest(str(tmp_path), "Containerfile", {}) != second
    with pytest.raises(state.ImageInputError, match="has no Dockerfile"):
        state.context_digest(str(tmp_path), "Dockerfile", {})


def test_plan():
    want = state.check_input(params(push=True))
    assert state.plan(want, None, "d1") == dict(build=True, push=True, reason="no image %s" % want["ref"])
    built = dict(id="x", labels={state.CONTEXT_LABEL: "d1"})
    assert state.plan(want, built, "d1")["build"] is False
    assert state.plan(want, built, "d2")["reason"].endswith("was built from another context")
    forced = state.check_input(params(force=True))
    assert state.plan(forced, built, "d1") == dict(build=True, push=False, reason="force")


def test_argv_for_each_builder():
    want = state.check_input(params(build_args={"B": "2", "A": "1"}, builder_args=["--runtime=runc"]))
    argv = state.build_argv("/usr/bin/podman", "podman", want, "d1")
    assert argv == ["/usr/bin/podman", "build", "--file", "/ctx/Containerfile", "--tag", want["ref"], "--label",
                    "org.roce-fabric.context=d1", "--build-arg", "A=1", "--build-arg", "B=2", "--runtime=runc", "/ctx"]
    assert state.inspect_argv("/usr/bin/buildah", "buildah", "r:1") == ["/usr/bin/buildah", "inspect", "--type", "image", "r:1"]
    assert state.inspect_argv("/usr/bin/docker", "docker", "r:1") == ["/usr/bin/docker", "image", "inspect", "r:1"]
    assert state.untag_argv("/usr/bin/docker", "docker", "r:1") == ["/usr/bin/docker", "image", "rm", "r:1"]
    assert state.push_argv("/usr/bin/podman", "podman", "r:1") == ["/usr/bin/podman", "push", "r:1"]
