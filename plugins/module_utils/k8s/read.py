# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster's copies of the objects a role renders, read in one pass (roce.fabric.k8s_objects_info).

PRIVATE to the roce.fabric collection: may change without notice.

Every CustomResourceDefinition is listed first: the kinds of the API groups the rendered CRDs define are asked for
only where a CRD of the cluster serves that group (a client's discovery may still name a kind whose CRD was just
deleted). Then each (API version, kind, namespace) of the other objects is listed once, by label. A kind's REST path
comes from its group version's discovery document (``/api/v1``, ``/apis/<group>/<version>``), asked once per group
version. The transport is a ``get(path, query)`` callable that returns the decoded JSON; the module gives it the
Kubernetes client's, the unit tests the lab API server's captured answers.
"""

from __future__ import annotations

from ansible_collections.roce.fabric.plugins.module_utils.k8s.network import pending_objects, sort_objects

CRD_LIST = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class ReadError(Exception):
    """A kind the API does not serve, or an answer that is not a list."""


def group_version_path(api_version):
    """``/api/v1`` for the core group, ``/apis/<group>/<version>`` for the others."""
    api_version = str(api_version or "")
    if "/" not in api_version:
        return "/api/%s" % api_version
    return "/apis/%s" % api_version


def kinds_to_list(objects, served_groups):
    """The (apiVersion, kind, namespace) triples to list, in the objects' order, each once: every built-in kind,
    and the kinds of the CRDs' groups where the cluster serves that group (``served_groups``)."""
    lists = sort_objects(objects)
    customs = [obj for obj in lists["customs"] if (obj.get("apiVersion") or "").split("/")[0] in served_groups]
    wanted = []
    for obj in lists["builtins"] + customs:
        triple = (obj.get("apiVersion") or "", obj.get("kind") or "", (obj.get("metadata") or {}).get("namespace") or "")
        if triple not in wanted:
            wanted.append(triple)
    return wanted


def kind_path(discovery, api_version, kind, namespace):
    """The list path of ``kind`` from its group version's discovery document (an APIResourceList)."""
    for resource in discovery.get("resources") or []:
        if resource.get("kind") == kind and "/" not in resource.get("name", "/"):
            base = group_version_path(api_version)
            if resource.get("namespaced") and namespace:
                return "%s/namespaces/%s/%s" % (base, namespace, resource["name"])
            return "%s/%s" % (base, resource["name"])
    raise ReadError("the API does not serve %s %s" % (api_version, kind))


def _items(answer, api_version, kind, path):
    if not isinstance(answer, dict) or not isinstance(answer.get("items"), list):
        raise ReadError("%s did not answer with a list" % path)
    items = []
    for item in answer["items"]:
        # A list's items carry no apiVersion and kind of their own: they are the list's.
        item = dict(item)
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
        items.append(item)
    return items


def read_objects(objects, get, label_selectors=()):
    """The cluster's copies of ``objects``: returns ``resources`` (every CRD, then the objects of each kind found
    by ``label_selectors``), ``pending`` (the objects an apply would change, module_utils/k8s/network.py
    pending_objects) and ``kinds`` (the paths listed)."""
    crds = _items(get(CRD_LIST, []), "apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD_LIST)
    served = set((crd.get("spec") or {}).get("group") for crd in crds) - set([None, ""])
    query = [("labelSelector", ",".join(label_selectors))] if label_selectors else []
    discovered, resources, paths = {}, list(crds), [CRD_LIST]
    for api_version, kind, namespace in kinds_to_list(objects, served):
        if api_version not in discovered:
            discovered[api_version] = get(group_version_path(api_version), [])
        path = kind_path(discovered[api_version], api_version, kind, namespace)
        resources.extend(_items(get(path, query), api_version, kind, path))
        paths.append(path)
    return {"resources": resources, "pending": pending_objects(objects, resources), "kinds": paths}
