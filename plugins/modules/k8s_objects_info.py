#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: k8s_objects_info
short_description: Read the cluster's copies of rendered Kubernetes objects, and which of them an apply would change
version_added: 1.0.0
description:
  - Lists every CustomResourceDefinition, then each API version, kind and namespace of O(objects) once, by
    O(label_selectors), in one process and one connection to the API server. Kinds of the API groups that the
    CRDs among O(objects) define are listed only where a CRD of the cluster serves that group.
  - A kind's REST path comes from its group version's discovery document (C(/api/v1), C(/apis/<group>/<version>)),
    asked once per group version.
  - Returns the objects found (RV(resources)) and the objects of O(objects) that an apply would change
    (RV(pending)) - absent ones, ones whose last applied configuration differs from the one wanted, and ones the
    server no longer holds all of (someone edited them). Nothing is written.
  - The C(roce.fabric.k8s_rdma_network) role reads the cluster with it before it applies or removes anything; the
    writes stay C(kubernetes.core.k8s)'s.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  platform:
    description: Runs where the kubeconfig is, usually the controller.
    support: full
    platforms: posix
requirements:
  - kubernetes (the Kubernetes Python client, which kubernetes.core needs too)
options:
  objects:
    description: The rendered objects (each with C(apiVersion), C(kind) and C(metadata.name)).
    type: list
    elements: dict
    required: true
  label_selectors:
    description: Label selectors the objects of each kind are listed by (all of them must match); CRDs are listed
      whole.
    type: list
    elements: str
    default: []
  kubeconfig:
    description: The kubeconfig file; the client's default (C(~/.kube/config)) when left out.
    type: path
  context:
    description: The kubeconfig's context to use; its current context when left out.
    type: str
  validate_certs:
    description: Check the API server's certificate against the kubeconfig's certificate authority.
    type: bool
    default: true
  timeout:
    description: Seconds each request to the API server may take, 1 to 600.
    type: int
    default: 30
notes:
  - Needs list rights on CRDs and on every kind of O(objects) in its namespace; a refusal fails the task with the
    server's answer, and nothing is written in any case.
"""

EXAMPLES = r"""
- name: Read the cluster's copies of the role's objects
  roce.fabric.k8s_objects_info:
    objects: "{{ rendered }}"
    label_selectors: [app.kubernetes.io/part-of=k8s-rdma-network]
    kubeconfig: ~/.kube/config
  register: cluster

- name: Apply only what differs
  kubernetes.core.k8s:
    definition: "{{ cluster.pending }}"
    apply: true
  when: cluster.pending | length > 0
"""

RETURN = r"""
resources:
  description: Every CRD of the cluster, then the objects of each listed kind found by the label selectors, as the
    API returns them (with C(apiVersion) and C(kind)).
  returned: success
  type: list
  elements: dict
pending:
  description: The objects of O(objects) that an apply would change, in their order.
  returned: success
  type: list
  elements: dict
kinds:
  description: The paths listed.
  returned: success
  type: list
  elements: str
  sample: ["/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "/api/v1/namespaces/kube-system/configmaps"]
"""

import json

from ansible.module_utils.six.moves.urllib.parse import urlencode
from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun
from ansible_collections.roce.fabric.plugins.module_utils.k8s.read import ReadError, read_objects

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.rest import ApiException
    from kubernetes.config.config_exception import ConfigException
    from urllib3.exceptions import HTTPError as TransportError
    HAS_KUBERNETES = True
except ImportError:  # pragma: no cover - the module fails with missing_required_lib
    HAS_KUBERNETES = False


def api_getter(params):
    """A ``get(path, query)`` over the kubeconfig's cluster and credentials, each request under the timeout. It uses
    the client's REST layer only (its configuration, TLS and credentials), whose calls every supported release of
    the client shares."""
    configuration = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=params["kubeconfig"], context=params["context"],
                                client_configuration=configuration)
    if not params["validate_certs"]:
        configuration.verify_ssl = False
    rest = k8s_client.ApiClient(configuration).rest_client

    def get(path, query):
        headers = {"Accept": "application/json"}
        # The bearer token: under BearerToken in newer clients, authorization in older ones.
        token = (configuration.get_api_key_with_prefix("BearerToken")
                 or configuration.get_api_key_with_prefix("authorization"))
        if token:
            headers["Authorization"] = token
        url = configuration.host + path + ("?" + urlencode(query) if query else "")
        try:
            answer = rest.request("GET", url, headers=headers, _request_timeout=params["timeout"])
            status, reason = answer.status, answer.reason
            body = answer.data if answer.data is not None else answer.read()
        except ApiException as exc:  # older clients raise for an answer other than 2xx
            status, reason, body = exc.status, exc.reason, exc.body
        if not 200 <= status < 300:
            raise Refused(status, reason, server_message(body, reason), path)
        return json.loads(body)
    return get, configuration.host


class Refused(Exception):
    def __init__(self, status, reason, message, path):
        super(Refused, self).__init__(message)
        self.status, self.reason, self.path = status, reason, path


def server_message(body, reason):
    """The API server's own message of a refusal (its Status object), else the HTTP reason."""
    try:
        return json.loads(body).get("message") or reason
    except (TypeError, ValueError, AttributeError):
        return reason


def main():
    module = AnsibleModule(
        argument_spec=dict(
            objects=dict(type="list", elements="dict", required=True),
            label_selectors=dict(type="list", elements="str", default=[]),
            kubeconfig=dict(type="path"),
            context=dict(type="str"),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"))
    if not 1 <= params["timeout"] <= 600:
        module.fail_json(msg="timeout %d is outside 1-600 seconds" % params["timeout"])
    bad = [i for i, obj in enumerate(params["objects"]) if not (obj.get("apiVersion") and obj.get("kind")
                                                                and (obj.get("metadata") or {}).get("name"))]
    if bad:
        module.fail_json(msg="objects %s have no apiVersion, kind or metadata.name" % ", ".join(str(i) for i in bad))
    where = "kubeconfig %s%s" % (params["kubeconfig"] or "(the default)",
                                 " (context %s)" % params["context"] if params["context"] else "")
    run = ModuleRun(module)

    def body(run):
        try:
            get, host = api_getter(params)
        except (ConfigException, IOError, OSError, ValueError) as exc:
            run.fail("cannot load %s: %s" % (where, exc))
        try:
            run.update(**read_objects(params["objects"], get, params["label_selectors"]))
        except Refused as exc:
            run.fail("the API server %s answered GET %s with %s %s: %s (with %s)" % (
                host, exc.path, exc.status, exc.reason, exc, where), status=exc.status)
        except ValueError as exc:
            run.fail("the API server %s answered with something that is not JSON: %s" % (host, exc))
        except ReadError as exc:
            run.fail("%s (API server %s)" % (exc, host))
        except TransportError as exc:  # urllib3's connection and TLS errors, which the client does not wrap
            run.fail("cannot reach the API server %s with %s: %s" % (host, where, exc))

    run.execute(body)


if __name__ == "__main__":
    main()
