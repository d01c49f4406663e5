#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_image
short_description: Build a container image from a context with podman, buildah or docker, only when its context changed
version_added: 1.0.0
description:
  - Builds O(name):O(tag) from a build context on the host with the builder it has (podman, then buildah, then
    docker, or the one O(builder) names) and pushes it when asked.
  - Idempotent without a registry or a cache of its own. The image carries a label, C(org.roce-fabric.context), the
    SHA-256 of its build context (every file's path, mode and content, links as links, the build file's name and
    the build arguments). An image whose label matches the context is left alone; a missing one, or one built from
    another context, is built. A second run with the same context runs one C(image inspect) and nothing else.
  - With O(push), an image this run built is pushed; if the push fails, the new tag is removed again so that the
    next run builds it (from the builder's layer cache) and pushes, instead of finding it built and not pushing.
  - Every value reaches the builder as one argument of an argv list; the name, tag, build file, build argument
    names and extra builder flags are checked first, and refused with nothing run.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
options:
  name:
    description:
      - Image name without its tag, C([registry[:port]/]path), lower-case path components of letters, digits and
        C(. _ -). O(push) needs a registry host (one with a dot or a port, or C(localhost)).
    type: str
    required: true
  tag:
    description: Tag, 1-128 letters, digits and C(_ . -); not C(latest), which moves.
    type: str
    required: true
  context:
    description: The build context, a directory on the host holding O(file).
    type: path
    required: true
  file:
    description: The build file's name in O(context).
    type: str
    default: Containerfile
  secret_build_args:
    description:
      - Build arguments whose values are secret (a token a build step needs). Each reaches the builder as
        C(--build-arg NAME) with its value in the builder's environment, so that it is in neither the command line
        (C(ps)), nor RV(commands), nor the context label; the values are C(no_log).
      - A change of a secret value alone does not make the image stale (the label holds no secret); use O(force).
      - A value a build step reads still ends up in that layer's history if the step writes it there; for a
        secret that must not reach the image, use the builder's C(--secret) through O(builder_args).
    type: dict
    default: {}
  build_args:
    description:
      - Build arguments (C(--build-arg NAME=VALUE)); names of letters, digits and C(_). Their values are on the
        builder's command line and in RV(commands); put secrets in O(secret_build_args).
    type: dict
    default: {}
  builder:
    description: Which builder; C(auto) takes the first of podman, buildah, docker the host has.
    type: str
    choices: [auto, podman, buildah, docker]
    default: auto
  builder_args:
    description:
      - Extra flags for the build, each one C(--flag) or C(--flag=value) of plain characters (for example
        C(--runtime=runc), C(--network=host), C(--pull=never)).
    type: list
    elements: str
    default: []
  push:
    description: Push the image this run builds to its registry.
    type: bool
    default: false
  force:
    description: Build even when the image carries this context's digest.
    type: bool
    default: false
  command_timeout:
    description:
      - Seconds one builder command may run before it is stopped and the task fails (1 to 86400). A build that
        compiles (nccl-tests) takes minutes; the default is one hour.
    type: int
    default: 3600
notes:
  - Registry credentials are the builder's own (C(podman login), C(docker login)); the module never takes them.
seealso:
  - module: containers.podman.podman_image
"""

EXAMPLES = r"""
- name: The job image, built where its Containerfile changed and pushed to the site registry
  roce.fabric.container_image:
    name: registry.example.com/ml/rdma-job
    tag: 24.10-1.1.4.0-cuda12.6
    context: /var/lib/roce-fabric/image/rdma-job
    push: true

- name: A local build with podman under runc
  roce.fabric.container_image:
    name: localhost/roce-fabric/rdma-job
    tag: inbox-1
    context: /var/lib/roce-fabric/image/rdma-job
    builder: podman
    builder_args: [--runtime=runc, --pull=never]
"""

RETURN = r"""
image:
  description: The image reference, the builder, the context's digest and why it was (or was not) built.
  returned: always
  type: dict
  sample: {ref: "registry.example.com/ml/rdma-job:24.10-1.1.4.0-cuda12.6", builder: podman,
           context_digest: 0d4c..., built: true, pushed: true, reason: no image registry.example.com/ml/rdma-job:24.10-1.1.4.0-cuda12.6}
build_output:
  description: The last 4000 characters of the builder's output, where it built.
  returned: when built
  type: str
commands:
  description: The build, push and untag commands that ran (in check mode, would run).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.run import FabricError, ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.container import state
from ansible_collections.roce.fabric.plugins.module_utils.container.transport import Builder


def converge(run, params):
    try:
        want = state.check_input(params)
        digest = state.context_digest(want["context"], want["file"], want["build_args"])
    except state.ImageInputError as exc:
        raise FabricError("Invalid input, nothing was changed: %s" % exc, kind="invalid")
    except OSError as exc:
        raise FabricError("cannot read the build context %s: %s; nothing was changed" % (want["context"], exc),
                          kind="invalid")
    builder = Builder(run.module, run, want["builder"])
    image = builder.inspect(want["ref"])
    decided = state.plan(want, image, digest)
    info = dict(ref=want["ref"], builder=builder.name, context_digest=digest, built=False, pushed=False,
                reason=decided["reason"])
    run.update(image=info)
    before = dict(ref=want["ref"], context_digest=(image or {}).get("labels", {}).get(state.CONTEXT_LABEL))
    if not decided["build"]:
        return
    run.diff("image", before, dict(ref=want["ref"], context_digest=digest))
    out = builder.change(state.build_argv(builder.path, builder.name, want, digest), "building %s" % want["ref"],
                         env=state.build_env(want))
    info["built"] = True
    if out:
        run.update(build_output=out[-4000:])
    if decided["push"]:
        try:
            builder.change(state.push_argv(builder.path, builder.name, want["ref"]), "pushing %s" % want["ref"])
        except FabricError as exc:
            # The next run must not find the image built and unpushed: take the tag away again.
            builder.change(state.untag_argv(builder.path, builder.name, want["ref"]), "untagging %s" % want["ref"])
            raise FabricError("%s; the new tag was removed so that the next run builds and pushes again" % exc,
                              **exc.details)
        info["pushed"] = True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            tag=dict(type="str", required=True),
            context=dict(type="path", required=True),
            file=dict(type="str", default="Containerfile"),
            build_args=dict(type="dict", default={}),
            secret_build_args=dict(type="dict", default={}, no_log=True),
            builder=dict(type="str", choices=["auto", "podman", "buildah", "docker"], default="auto"),
            builder_args=dict(type="list", elements="str", default=[]),
            push=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
            command_timeout=dict(type="int", default=3600),
        ),
        supports_check_mode=True,
    )
    ModuleRun(module, image={}).execute(lambda run: converge(run, module.params))


if __name__ == "__main__":
    main()
