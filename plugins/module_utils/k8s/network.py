# -*- coding: utf-8 -*-
# Copyright: roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks for Kubernetes RDMA networking: role inputs, rendered objects, CNI JSON, node resources.

Pure functions (no Ansible, no Kubernetes client), used by the roce.fabric.k8s_network_* filters
and unit-tested on their own. Every check returns a list of messages; an empty list means valid.
"""

from __future__ import annotations

import ipaddress
import json
import re

# Linux interface names: at most 15 bytes, no '/', ':' or whitespace. The SR-IOV device plugin also
# accepts a VF range after '#' (enp5s0f0#0-3 or enp5s0f0#0,2-3).
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,15}$")
PF_SELECTOR_RE = re.compile(r"^(?P<ifname>[A-Za-z0-9_.\-]{1,15})(#\d+(-\d+)?(,\d+(-\d+)?)*)?$")
# The SR-IOV and RDMA shared device plugins accept resource names of letters, digits and '_'.
RESOURCE_NAME_RE = re.compile(r"^[A-Za-z0-9_]{1,63}$")
# A DNS-1123 label: what a NetworkAttachmentDefinition may be called and what pods refer to.
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# A resource prefix is a DNS subdomain (intel.com, nvidia.com, rdma).
PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# A qualified extended resource name (intel.com/sriov_111, aliyun/erdma, rdma/hca_shared_devices_a): an optional
# DNS-subdomain prefix and a name of at most 63 characters, as the API server validates them.
EXTENDED_RESOURCE_RE = re.compile(
    r"^(?:(?P<prefix>%s)/)?(?P<name>[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$" % PREFIX_RE.pattern[1:-1])
HEX_ID_RE = re.compile(r"^[0-9a-fA-F]{4}$")
PCI_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
MACVLAN_MODES = ("bridge", "private", "vepa", "passthru")
IPAM_TYPES = ("whereabouts", "dhcp", "static", "host-local")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _hex_ids(value):
    """A device or vendor ID given as '101c', 4124-looking YAML ints or a list of those."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return ["%s" % item for item in items]


def check_hex_ids(value, what):
    errors = []
    ids = _hex_ids(value)
    if not ids:
        errors.append("%s: at least one ID is needed" % what)
    for item in ids:
        if not HEX_ID_RE.match(item):
            errors.append("%s: '%s' is not a PCI ID of four hexadecimal digits (e.g. 15b3, 101c)" % (what, item))
    return errors


def check_ipam_range(value, what):
    try:
        ipaddress.ip_network("%s" % value, strict=False)
    except ValueError:
        return ["%s: ipam_range '%s' is not a CIDR range (e.g. 10.111.0.0/24)" % (what, value)]
    if "/" not in "%s" % value:
        return ["%s: ipam_range '%s' has no prefix length" % (what, value)]
    return []


def _check_ipam(entry, default_type, what):
    ipam_type = entry.get("ipam_type") or default_type
    if ipam_type not in IPAM_TYPES:
        return ["%s: ipam_type '%s' is not one of %s" % (what, ipam_type, ", ".join(IPAM_TYPES))]
    if ipam_type in ("whereabouts", "host-local"):
        if not entry.get("ipam_range"):
            return ["%s: ipam_type %s needs ipam_range" % (what, ipam_type)]
        return check_ipam_range(entry["ipam_range"], what)
    return []


def check_cni_config(text, what):
    """A NetworkAttachmentDefinition's spec.config: JSON of one CNI network or a conflist."""
    if not isinstance(text, str):
        return ["%s: CNI config must be a JSON string, not %s" % (what, type(text).__name__)]
    try:
        config = json.loads(text)
    except ValueError as exc:
        return ["%s: CNI config is not valid JSON (%s)" % (what, exc)]
    if not isinstance(config, dict):
        return ["%s: CNI config must be a JSON object" % what]
    errors = []
    if not isinstance(config.get("cniVersion"), str) or not config.get("cniVersion"):
        errors.append("%s: CNI config has no cniVersion" % what)
    if "plugins" in config:
        plugins = config["plugins"]
        if not isinstance(plugins, list) or not plugins:
            errors.append("%s: CNI conflist 'plugins' must be a non-empty list" % what)
        else:
            for index, plugin in enumerate(plugins):
                if not isinstance(plugin, dict) or not isinstance(plugin.get("type"), str) or not plugin.get("type"):
                    errors.append("%s: CNI conflist plugin %d has no type" % (what, index))
    elif not isinstance(config.get("type"), str) or not config.get("type"):
        errors.append("%s: CNI config has no type (nor a plugins list)" % what)
    ipam = config.get("ipam")
    if ipam is not None and (not isinstance(ipam, dict) or (ipam and not ipam.get("type"))):
        errors.append("%s: CNI config's ipam must be an object with a type" % what)
    if config.get("type") == "sriov" and "vlan" in config:
        vlan = config["vlan"]
        if not _is_int(vlan) or not 0 <= vlan <= 4094:
            errors.append("%s: sriov vlan %r is out of range 0-4094" % (what, vlan))
    return errors


def input_errors(inputs):
    """Every problem in the role's inputs (a dict of its variables without the prefix), in order."""
    errors = []
    prefix = inputs.get("resource_prefix") or ""
    if not PREFIX_RE.match(prefix):
        errors.append("resource_prefix '%s' is not a DNS subdomain (e.g. intel.com)" % prefix)
    sriov = inputs.get("sriov_resources") or []
    if sriov:
        errors.extend(check_hex_ids(inputs.get("sriov_vendor"), "sriov_vendor"))
        errors.extend(check_hex_ids(inputs.get("sriov_dev_id"), "sriov_dev_id"))
    num_vf = inputs.get("sriov_num_vf")
    if num_vf is not None and (not _is_int(num_vf) or not 0 <= num_vf <= 256):
        errors.append("sriov_num_vf %r is not a number of VFs from 0 to 256" % (num_vf,))

    resource_names = {}
    network_names = {}

    def claim_resource(name, what):
        if name in resource_names:
            errors.append("%s: resource name '%s' is already used by %s" % (what, name, resource_names[name]))
        else:
            resource_names[name] = what

    def claim_network(name, what):
        if not isinstance(name, str) or not DNS_LABEL_RE.match(name):
            errors.append("%s: network name '%s' is not a DNS-1123 label (lower-case letters, digits, '-', at most 63)" % (what, name))
        elif name in network_names:
            errors.append("%s: network name '%s' is already used by %s" % (what, name, network_names[name]))
        else:
            network_names[name] = what

    for index, entry in enumerate(sriov):
        what = "sriov_resources[%d]" % index
        if not isinstance(entry, dict):
            errors.append("%s: must be a dict with pf_name, vlan_id, res_name, network_name" % what)
            continue
        missing = [key for key in ("pf_name", "vlan_id", "res_name", "network_name") if entry.get(key) in (None, "")]
        if missing:
            errors.append("%s: missing %s" % (what, ", ".join(missing)))
            continue
        pf_names = entry["pf_name"] if isinstance(entry["pf_name"], list) else [entry["pf_name"]]
        for pf in pf_names:
            if not isinstance(pf, str) or not PF_SELECTOR_RE.match(pf):
                errors.append("%s: pf_name '%s' is not an interface name (at most 15 of A-Z a-z 0-9 _ . -, optionally #first-last VFs)"
                              % (what, pf))
        vlan = entry["vlan_id"]
        if not _is_int(vlan) or not 0 <= vlan <= 4094:
            errors.append("%s: vlan_id %r is out of range 0-4094 (0 means untagged)" % (what, vlan))
        res = entry["res_name"]
        if not isinstance(res, str) or not RESOURCE_NAME_RE.match(res):
            errors.append("%s: res_name '%s' may only hold letters, digits and '_' (at most 63)" % (what, res))
        else:
            claim_resource(res, what)
        claim_network(entry["network_name"], what)
        for key in ("spoofchk", "trust"):
            if key in entry and entry[key] not in ("on", "off"):
                errors.append("%s: %s must be 'on' or 'off', not %r" % (what, key, entry[key]))
        errors.extend(_check_ipam(entry, inputs.get("sriov_ipam_type") or "whereabouts", what))

    for index, entry in enumerate(inputs.get("rdma_shared_resources") or []):
        what = "rdma_shared_resources[%d]" % index
        if not isinstance(entry, dict) or not entry.get("name"):
            errors.append("%s: must be a dict with a name" % what)
            continue
        if not RESOURCE_NAME_RE.match("%s" % entry["name"]):
            errors.append("%s: name '%s' may only hold letters, digits and '_' (at most 63)" % (what, entry["name"]))
        else:
            claim_resource(entry["name"], what)
        selectors = [key for key in ("ifnames", "vendors", "device_ids") if entry.get(key)]
        if not selectors:
            errors.append("%s: needs at least one selector (ifnames, vendors or device_ids)" % what)
        for ifname in entry.get("ifnames") or []:
            if not IFNAME_RE.match("%s" % ifname):
                errors.append("%s: ifname '%s' is not an interface name" % (what, ifname))
        for key in ("vendors", "device_ids"):
            if entry.get(key):
                errors.extend(check_hex_ids(entry[key], "%s.%s" % (what, key)))
        hca_max = entry.get("rdma_hca_max", 63)
        if not _is_int(hca_max) or not 1 <= hca_max <= 10000:
            errors.append("%s: rdma_hca_max %r is out of range 1-10000" % (what, hca_max))

    for index, entry in enumerate(inputs.get("host_device_networks") or []):
        what = "host_device_networks[%d]" % index
        if not isinstance(entry, dict) or not entry.get("name"):
            errors.append("%s: must be a dict with a name" % what)
            continue
        claim_network(entry["name"], what)
        sources = [key for key in ("device", "pci_address") if entry.get(key)]
        if len(sources) != 1:
            errors.append("%s: give exactly one of device or pci_address" % what)
        elif entry.get("device") and not IFNAME_RE.match("%s" % entry["device"]):
            errors.append("%s: device '%s' is not an interface name" % (what, entry["device"]))
        elif entry.get("pci_address") and not PCI_RE.match("%s" % entry["pci_address"]):
            errors.append("%s: pci_address '%s' is not a PCI address (0000:3b:00.0)" % (what, entry["pci_address"]))
        errors.extend(_check_ipam(entry, "whereabouts", what))

    for index, entry in enumerate(inputs.get("macvlan_networks") or []):
        what = "macvlan_networks[%d]" % index
        if not isinstance(entry, dict) or not entry.get("name"):
            errors.append("%s: must be a dict with a name" % what)
            continue
        claim_network(entry["name"], what)
        if not IFNAME_RE.match("%s" % entry.get("master", "")):
            errors.append("%s: master '%s' is not an interface name" % (what, entry.get("master")))
        if "mtu" in entry and (not _is_int(entry["mtu"]) or not 576 <= entry["mtu"] <= 9216):
            errors.append("%s: mtu %r is out of range 576-9216" % (what, entry["mtu"]))
        if entry.get("mode", "bridge") not in MACVLAN_MODES:
            errors.append("%s: mode '%s' is not one of %s" % (what, entry.get("mode"), ", ".join(MACVLAN_MODES)))
        errors.extend(_check_ipam(entry, "whereabouts", what))

    for index, entry in enumerate(inputs.get("extra_networks") or []):
        what = "extra_networks[%d]" % index
        if not isinstance(entry, dict) or not entry.get("name"):
            errors.append("%s: must be a dict with a name and a config" % what)
            continue
        claim_network(entry["name"], what)
        errors.extend(check_cni_config(entry.get("config"), "%s (%s)" % (what, entry["name"])))
    return errors


def object_errors(objects):
    """Problems in rendered Kubernetes objects that the API server would not catch.

    The server checks that a NetworkAttachmentDefinition's spec.config is a string; whether that
    string is a CNI network, and whether device plugin configurations name each resource once,
    is ours to check.
    """
    errors = []
    seen = {}
    for obj in objects:
        if not isinstance(obj, dict):
            errors.append("rendered object is not a mapping: %r" % (obj,))
            continue
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        ident = "%s %s/%s" % (kind, meta.get("namespace", "-"), meta.get("name"))
        if not obj.get("apiVersion") or not kind or not meta.get("name"):
            errors.append("%s: apiVersion, kind and metadata.name are required" % ident)
            continue
        key = (obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else "", kind, meta.get("namespace"), meta["name"])
        if key in seen:
            errors.append("%s: rendered twice" % ident)
        seen[key] = True
        if kind == "NetworkAttachmentDefinition":
            errors.extend(check_cni_config((obj.get("spec") or {}).get("config"), ident))
        if kind == "ConfigMap":
            for data_key, text in sorted((obj.get("data") or {}).items()):
                if not data_key.endswith(".json"):
                    continue
                try:
                    parsed = json.loads(text)
                except ValueError as exc:
                    errors.append("%s: %s is not valid JSON (%s)" % (ident, data_key, exc))
                    continue
                names = []
                if isinstance(parsed, dict):
                    names = [r.get("resourceName") for r in parsed.get("resourceList") or parsed.get("configList") or []
                             if isinstance(r, dict)]
                dups = sorted(set(n for n in names if names.count(n) > 1))
                if dups:
                    errors.append("%s: %s names resources more than once: %s" % (ident, data_key, ", ".join(dups)))
    return errors


def bad_resource_names(names):
    """The entries of ``names`` that are not qualified extended resource names (a prefix of at most 253 characters,
    a name of at most 63), in their order; non-strings are returned as they are."""
    bad = []
    for name in names or []:
        match = EXTENDED_RESOURCE_RE.match(name) if isinstance(name, str) else None
        if not match or len(match.group("name")) > 63 or len(match.group("prefix") or "") > 253:
            bad.append(name)
    return bad


def nodes_missing_resources(nodes, resources, minimum=1):
    """For each node (a Node object as the API returns it), the resources it does not advertise.

    Returns a dict with ``missing`` (node name -> list of resource names that are absent from
    status.allocatable or below ``minimum``), ``advertised`` (node name -> {resource: count}) and
    ``nodes`` (the names checked) and ``summary`` ("node1 lacks a, b; node2 lacks a", '' when none lacks one).
    """
    missing = {}
    advertised = {}
    names = []
    for node in nodes or []:
        name = (node.get("metadata") or {}).get("name")
        names.append(name)
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        counts = {}
        for resource in resources:
            raw = allocatable.get(resource)
            try:
                count = int("%s" % raw) if raw is not None else 0
            except ValueError:
                count = 0
            counts[resource] = count
            if count < minimum:
                missing.setdefault(name, []).append(resource)
        advertised[name] = counts
    summary = "; ".join("%s lacks %s" % (name, ", ".join(absent)) for name, absent in missing.items())
    return {"missing": missing, "advertised": advertised, "nodes": names, "summary": summary}


# The API resource (plural) of each kind the collection's Kubernetes roles write, as the API server serves it.
KIND_RESOURCES = {
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "ConfigMap": "configmaps",
    "CustomResourceDefinition": "customresourcedefinitions",
    "DaemonSet": "daemonsets",
    "Deployment": "deployments",
    "Job": "jobs",
    "MPIJob": "mpijobs",
    "Namespace": "namespaces",
    "NetworkAttachmentDefinition": "network-attachment-definitions",
    "Pod": "pods",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "Secret": "secrets",
    "Service": "services",
    "ServiceAccount": "serviceaccounts",
    "ServiceMonitor": "servicemonitors",
}


def access_reviews(objects, verb):
    """The SelfSubjectAccessReview objects that ask whether ``verb`` is allowed on each distinct (API group,
    resource, namespace) of ``objects``, in their first order: one review per kind and namespace that is about to
    be written, whatever the kind. A kind outside KIND_RESOURCES raises ValueError (its resource name cannot be
    guessed safely: NetworkAttachmentDefinition is network-attachment-definitions)."""
    reviews, seen = [], set()
    for obj in objects or []:
        kind = obj.get("kind")
        if kind not in KIND_RESOURCES:
            raise ValueError("no API resource known for kind %r" % (kind,))
        api_version = obj.get("apiVersion") or ""
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        namespace = (obj.get("metadata") or {}).get("namespace")
        key = (group, KIND_RESOURCES[kind], namespace)
        if key in seen:
            continue
        seen.add(key)
        attributes = {"group": group, "resource": KIND_RESOURCES[kind], "verb": verb}
        if namespace:
            attributes["namespace"] = namespace
        reviews.append({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": attributes}})
    if verb in ("create", "patch"):
        reviews.extend(rbac_reviews(objects))
    return reviews


def _review(attributes):
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes}}


def rbac_reviews(objects):
    """What RBAC asks besides create or patch (Kubernetes' RBAC "privilege escalation prevention"): writing a Role
    or ClusterRole that grants what the writer does not hold needs ``escalate`` on it; writing a binding needs
    ``bind`` on the role it refers to. Asked for every such object, so that a review that passes cannot end in a
    partial apply refused at the first role or binding (a writer that holds every rule itself passes the API's
    own check without them; such a writer is given escalate and bind, or runs the role as one that has them)."""
    reviews, seen = [], set()
    for obj in objects or []:
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        if kind in ("Role", "ClusterRole"):
            attributes = {"group": "rbac.authorization.k8s.io", "resource": KIND_RESOURCES[kind], "verb": "escalate",
                          "name": meta.get("name")}
            if kind == "Role" and meta.get("namespace"):
                attributes["namespace"] = meta["namespace"]
        elif kind in ("RoleBinding", "ClusterRoleBinding"):
            ref = obj.get("roleRef") or {}
            resource = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
            attributes = {"group": "rbac.authorization.k8s.io", "resource": resource, "verb": "bind",
                          "name": ref.get("name")}
            if kind == "RoleBinding" and meta.get("namespace"):
                attributes["namespace"] = meta["namespace"]
        else:
            continue
        key = tuple(sorted(attributes.items()))
        if key not in seen:
            seen.add(key)
            reviews.append(_review(attributes))
    return reviews


def access_denied(answers):
    """What the answered reviews (the API's SelfSubjectAccessReview replies) do not allow, each as ``verb resource``
    or ``verb resource in namespace``, in order and once; a reply without ``status.allowed`` true is a denial."""
    denied = []
    for answer in answers or []:
        if ((answer or {}).get("status") or {}).get("allowed") is True:
            continue
        attributes = ((answer or {}).get("spec") or {}).get("resourceAttributes") or {}
        text = "%s %s" % (attributes.get("verb"), attributes.get("resource"))
        if attributes.get("name"):
            text += " %s" % attributes["name"]
        if attributes.get("namespace"):
            text += " in %s" % attributes["namespace"]
        if text not in denied:
            denied.append(text)
    return denied


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def object_key(obj):
    """(API group, kind, namespace, name) of an object: how the API tells objects apart."""
    api_version = obj.get("apiVersion") or ""
    group = api_version.split("/")[0] if "/" in api_version else ""
    meta = obj.get("metadata") or {}
    return (group, obj.get("kind"), meta.get("namespace") or "", meta.get("name"))


def _scalar_equal(want, have):
    if isinstance(want, bool) or isinstance(have, bool):
        return want is have
    if isinstance(want, (int, float)) and isinstance(have, str) or isinstance(want, str) and isinstance(have, (int, float)):
        # The API stores quantities as strings (cpu: 1 comes back as "1").
        return "%s" % want == "%s" % have
    return want == have


def is_subset(want, have):
    """True when everything in ``want`` is in ``have`` (which may hold more: fields the server defaults)."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        return all(key in have and is_subset(value, have[key]) for key, value in want.items())
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return False
        return all(is_subset(w, h) for w, h in zip(want, have))
    return _scalar_equal(want, have)


def _normalized(obj):
    return json.loads(json.dumps(obj, sort_keys=True))


def pending_objects(desired, actual, missing_only=False):
    """The objects of ``desired`` that an apply would change.

    ``actual`` holds the objects as the API returns them. An object is pending when it is absent,
    when the last configuration applied to it (its last-applied annotation) differs from the one
    wanted now (so fields removed from the inputs are removed from the cluster), or when the
    server's object no longer holds everything wanted (someone edited it). Objects that are not
    pending need no request at all: that is what keeps a second run free of writes. With
    ``missing_only`` only the absent objects are returned.
    """
    index = dict((object_key(obj), obj) for obj in actual or [] if isinstance(obj, dict))
    pending = []
    for obj in desired:
        have = index.get(object_key(obj))
        if have is None:
            pending.append(obj)
            continue
        if missing_only:
            continue
        annotations = (have.get("metadata") or {}).get("annotations") or {}
        try:
            last = json.loads(annotations.get(LAST_APPLIED, "null"))
        except ValueError:
            last = None
        if last != _normalized(obj) or not is_subset(_normalized(obj), have):
            pending.append(obj)
    return pending


STATUS_RE = re.compile(r'[{]"kind":"Status".*[}]')


def _truncate(text, length=400, end="...", leeway=5):
    """Shorten a server's message at a word boundary (as Jinja's truncate does)."""
    if len(text) <= length + leeway:
        return text
    return text[:length - len(end)].rsplit(" ", 1)[0] + end


def _object_name(obj):
    metadata = obj.get("metadata") or {}
    namespace = ("%s/" % metadata["namespace"]) if metadata.get("namespace") is not None else ""
    return "%s %s%s" % (obj.get("kind"), namespace, metadata.get("name"))


def apply_outcome(sent, answer):
    """What one apply of several objects did, from the objects sent (in order) and kubernetes.core.k8s's registered
    answer (``result.results`` for several objects, itself for one): ``applied`` and ``unchanged`` names, and
    ``refused`` names each with the server's own words (the Status message it answered with, else the error).
    An object without an answer counts as refused ("no answer")."""
    answer = answer or {}
    result = answer.get("result")
    answers = result["results"] if isinstance(result, dict) and "results" in result else [answer]
    out = {"applied": [], "unchanged": [], "refused": []}
    for index, obj in enumerate(sent or []):
        reply = answers[index] if index < len(answers) else {"error": {"msg": "no answer"}}
        name = _object_name(obj)
        if "error" in reply:
            error = reply["error"]
            raw = "%s" % (error.get("msg", error) if isinstance(error, dict) else error)
            found = STATUS_RE.search(raw)
            words = raw
            if found:
                try:
                    words = json.loads(found.group(0)).get("message") or raw
                except ValueError:
                    words = raw
            out["refused"].append("%s (%s)" % (name, _truncate("%s" % words)))
        elif reply.get("changed"):
            out["applied"].append(name)
        else:
            out["unchanged"].append(name)
    return out


def send_lists(pending, builtins, customs, existing=None, check_mode=False):
    """The objects to send, sorted into the three applies: ``crds`` (first, waited for until Established),
    ``builtins`` (the node components) and ``customs`` (the networks and other custom resources), and ``waiting``
    (names of objects check mode cannot dry-run).

    ``pending``: the objects that differ from the cluster's copies (``pending_objects``); ``builtins`` and
    ``customs``: the role's two groups they come from; ``existing``: the registered loop that read the cluster's
    CustomResourceDefinitions and Namespaces (check mode). A real run sends every pending object. Check mode sends
    each as a server-side dry run, so the server validates it; one whose namespace, or whose API group's CRD, does
    not exist yet cannot be dry-run and waits for them."""
    crds = [obj for obj in pending if obj.get("kind") == "CustomResourceDefinition"]
    pending_builtins = [obj for obj in pending if obj in builtins]
    pending_customs = [obj for obj in pending if obj in customs]
    if check_mode:
        results = (existing or {}).get("results") or [{}, {}]
        groups = set((crd.get("spec") or {}).get("group") for crd in (results[0] or {}).get("resources") or [])
        namespaces = set((ns.get("metadata") or {}).get("name") for ns in (results[1] or {}).get("resources") or [])

        def namespace_exists(obj):
            namespace = (obj.get("metadata") or {}).get("namespace")
            return namespace is None or namespace in namespaces

        pending_builtins = [obj for obj in pending_builtins if namespace_exists(obj)]
        pending_customs = [obj for obj in pending_customs if (obj.get("metadata") or {}).get("namespace") in namespaces
                           and (obj.get("apiVersion") or "").split("/")[0] in groups and "/" in (obj.get("apiVersion") or "")]
    sent = crds + pending_builtins + pending_customs
    waiting = [(obj.get("metadata") or {}).get("name") for obj in pending if obj not in sent]
    return {"crds": crds, "builtins": pending_builtins, "customs": pending_customs, "waiting": waiting}


# --- what the role sends, in which order --------------------------------------------------------------------------

def _group(obj):
    api_version = obj.get("apiVersion") or ""
    return api_version.split("/")[0] if "/" in api_version else ""


def sort_objects(objects, drop_kinds=()):
    """The rendered objects in the three lists the role sends in turn: ``crds`` (CustomResourceDefinitions),
    ``customs`` (objects of the API groups those CRDs define, which wait for them to be served) and ``builtins``
    (every other object, kinds of operators installed otherwise included); ``objects`` is the input without the
    kinds of ``drop_kinds`` (a ServiceMonitor where its CRD is not served), which none of the lists holds."""
    kept = [obj for obj in objects or [] if isinstance(obj, dict) and obj.get("kind") not in set(drop_kinds or ())]
    crds = [obj for obj in kept if obj.get("kind") == "CustomResourceDefinition"]
    groups = set((obj.get("spec") or {}).get("group") for obj in crds) - set([None, ""])
    customs = [obj for obj in kept if obj.get("kind") != "CustomResourceDefinition" and _group(obj) in groups]
    builtins = [obj for obj in kept if obj.get("kind") != "CustomResourceDefinition" and _group(obj) not in groups]
    return {"objects": kept, "crds": crds, "builtins": builtins, "customs": customs}


def node_resources(inputs, shared_prefix, check_resources=()):
    """The extended resources the nodes must advertise once the device plugins run: each SR-IOV resource under the
    resource prefix, each shared RDMA resource under its prefix (both as enabled in ``inputs``: the role's
    k8s_rdma_network__inputs), then the operator's own names to check."""
    names = ["%s/%s" % (inputs.get("resource_prefix"), entry.get("res_name")) for entry in inputs.get("sriov_resources") or []]
    names += ["%s/%s" % (shared_prefix, entry.get("name")) for entry in inputs.get("rdma_shared_resources") or []]
    return names + list(check_resources or [])


def dhcp_needed(inputs, daemon=False):
    """Whether the CNI dhcp daemon runs: when asked for, or when any network leases its addresses by DHCP (an SR-IOV
    resource without its own ipam_type takes the SR-IOV default; host-device and macvlan networks default to
    whereabouts)."""
    if daemon:
        return True
    sriov = [entry.get("ipam_type", inputs.get("sriov_ipam_type")) for entry in inputs.get("sriov_resources") or []]
    others = [entry.get("ipam_type", "whereabouts") for entry in
              list(inputs.get("host_device_networks") or []) + list(inputs.get("macvlan_networks") or [])]
    return "dhcp" in sriov + others


def removal(sorted_objects, present, remove_crds=False):
    """What a removal deletes, in the order it deletes them: the role's objects the cluster has (``present``: its
    copies), custom resources first, then built-in kinds, then the CRDs when asked; never a Namespace (deleting one
    deletes everything in it)."""
    candidates = (list(sorted_objects.get("crds") or []) if remove_crds else [])
    candidates += [obj for obj in sorted_objects.get("builtins") or [] if obj.get("kind") != "Namespace"]
    candidates += list(sorted_objects.get("customs") or [])
    missing = pending_objects(candidates, present, missing_only=True)
    return [obj for obj in reversed(candidates) if obj not in missing]
