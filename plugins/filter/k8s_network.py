# -*- coding: utf-8 -*-
# Copyright: roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the k8s_rdma_network role: input checks, rendered-object checks, node resources."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.roce.fabric.plugins.module_utils.k8s.network import (
    access_denied,
    access_reviews,
    apply_outcome,
    bad_resource_names,
    dhcp_needed,
    input_errors,
    node_resources,
    nodes_missing_resources,
    object_errors,
    pending_objects,
    removal,
    send_lists,
    sort_objects,
)


def k8s_network_input_errors(inputs):
    if not isinstance(inputs, dict):
        raise AnsibleFilterError("k8s_network_input_errors expects a dict, got %s" % type(inputs).__name__)
    return input_errors(inputs)


def k8s_network_object_errors(objects):
    if not isinstance(objects, list):
        raise AnsibleFilterError("k8s_network_object_errors expects a list, got %s" % type(objects).__name__)
    return object_errors(objects)


def k8s_nodes_missing_resources(nodes, resources, minimum=1):
    if not isinstance(nodes, list) or not isinstance(resources, list):
        raise AnsibleFilterError("k8s_nodes_missing_resources expects a list of nodes and a list of resource names")
    return nodes_missing_resources(nodes, resources, minimum=int(minimum))


def k8s_bad_resource_names(names):
    if isinstance(names, dict):
        names = list(names)
    if not isinstance(names, list):
        raise AnsibleFilterError("k8s_bad_resource_names expects a list of resource names (or a dict keyed by them)")
    return bad_resource_names(names)


def k8s_access_reviews(objects, verb):
    if not isinstance(objects, list) or verb not in ("create", "update", "patch", "delete", "get", "list"):
        raise AnsibleFilterError("k8s_access_reviews expects a list of objects and a verb (create, update, patch, delete, get, list)")
    try:
        return access_reviews(objects, verb)
    except ValueError as exc:
        raise AnsibleFilterError("k8s_access_reviews: %s" % exc)


def k8s_access_denied(answers):
    if not isinstance(answers, list):
        raise AnsibleFilterError("k8s_access_denied expects the list of answered SelfSubjectAccessReview objects")
    return access_denied(answers)


def k8s_network_pending(desired, actual, missing_only=False):
    if not isinstance(desired, list) or not isinstance(actual, list):
        raise AnsibleFilterError("k8s_network_pending expects a list of wanted objects and a list of the cluster's objects")
    return pending_objects(desired, actual, missing_only=bool(missing_only))


def k8s_apply_outcome(sent, answer):
    if not isinstance(sent, list) or not isinstance(answer, dict):
        raise AnsibleFilterError("k8s_apply_outcome expects the list of objects sent and kubernetes.core.k8s's registered answer")
    return apply_outcome(sent, answer)


def k8s_send_lists(pending, builtins, customs, existing=None, check_mode=False):
    for name, value in (("pending", pending), ("builtins", builtins), ("customs", customs)):
        if not isinstance(value, list):
            raise AnsibleFilterError("k8s_send_lists: %s must be a list of objects" % name)
    if existing is not None and not isinstance(existing, dict):
        raise AnsibleFilterError("k8s_send_lists: existing must be the registered read of CRDs and Namespaces")
    return send_lists(pending, builtins, customs, existing=existing, check_mode=bool(check_mode))


def _inputs(inputs, name):
    if not isinstance(inputs, dict):
        raise AnsibleFilterError("%s expects the role's inputs (a dict), got %s" % (name, type(inputs).__name__))
    return inputs


def k8s_network_sort(objects, drop_kinds=None):
    if not isinstance(objects, list):
        raise AnsibleFilterError("k8s_network_sort expects the rendered objects (a list), got %s" % type(objects).__name__)
    return sort_objects(objects, drop_kinds or [])


def k8s_network_node_resources(inputs, shared_prefix, check_resources=None):
    return node_resources(_inputs(inputs, "k8s_network_node_resources"), shared_prefix, check_resources or [])


def k8s_network_dhcp(inputs, daemon=False):
    return dhcp_needed(_inputs(inputs, "k8s_network_dhcp"), boolean(daemon, strict=False))


def k8s_network_removal(sorted_objects, present, remove_crds=False):
    if not isinstance(sorted_objects, dict):
        raise AnsibleFilterError("k8s_network_removal expects k8s_network_sort's result, got %s" % type(sorted_objects).__name__)
    return removal(sorted_objects, present if isinstance(present, list) else [], boolean(remove_crds, strict=False))


class FilterModule:

    def filters(self):
        return {
            "k8s_network_input_errors": k8s_network_input_errors,
            "k8s_network_object_errors": k8s_network_object_errors,
            "k8s_nodes_missing_resources": k8s_nodes_missing_resources,
            "k8s_network_pending": k8s_network_pending,
            "k8s_bad_resource_names": k8s_bad_resource_names,
            "k8s_access_reviews": k8s_access_reviews,
            "k8s_access_denied": k8s_access_denied,
            "k8s_apply_outcome": k8s_apply_outcome,
            "k8s_send_lists": k8s_send_lists,
            "k8s_network_sort": k8s_network_sort,
            "k8s_network_node_resources": k8s_network_node_resources,
            "k8s_network_dhcp": k8s_network_dhcp,
            "k8s_network_removal": k8s_network_removal,
        }
