# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roce.fabric.k8s_objects_info through main(): the lab API server's captured answers behind its transport, its
refusals (401, 403) as the server wrote them, a kubeconfig that cannot be loaded and bad input. The module against
the running API server is tests/peer/test_k8s_peer.py."""

from __future__ import annotations

import json

import pytest

# The module needs the Kubernetes Python client (requirements.txt), as kubernetes.core does: an ansible-core without
# it (the compat tier's newest) has nothing to run these tests on.
pytest.importorskip("kubernetes")

from ansible_collections.roce.fabric.plugins.modules import k8s_objects_info  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.roce.fabric.tests.unit.plugins.module_utils import corpus  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module  # noqa: E402  pylint: disable=wrong-import-position

HOST = "https://127.0.0.1:6443"


def serve(monkeypatch, name, refusal=None):
    """The transport answers from the capture ``name``; ``refusal`` (a corpus file) answers the CRD list."""
    data = json.loads(corpus.read("k8s", name + ".json"))
    calls = []

    def getter(params):
        calls.append(params)

        def get(path, query):
            if refusal and path.endswith("customresourcedefinitions"):
                body = corpus.read("k8s", refusal)
                status = json.loads(body)
                raise k8s_objects_info.Refused(status["code"], status["reason"],
                                               k8s_objects_info.server_message(body, status["reason"]), path)
            return data["answers"][path + ("?" + "&".join("%s=%s" % pair for pair in query) if query else "")]
        return get, HOST
    monkeypatch.setattr(k8s_objects_info, "api_getter", getter)
    return data["objects"], calls


def args(objects, **extra):
    return dict(dict(objects=objects, label_selectors=["app.kubernetes.io/part-of=k8s-rdma-network"],
                     kubeconfig="/lab/kubeconfig"), **extra)


def test_it_reads_and_compares_and_changes_nothing_in_check_mode_too(monkeypatch):
    objects, calls = serve(monkeypatch, "edited")
    result = run_module(k8s_objects_info.main, args(objects, context="admin@lab-k8s1", validate_certs=False),
                        check_mode=True)
    assert result["changed"] is False and result["commands"] == []
    assert [obj["metadata"]["name"] for obj in result["pending"]] == ["sriovdp-config"]
    assert result["kinds"][0] == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert (calls[0]["context"], calls[0]["validate_certs"], calls[0]["timeout"]) == ("admin@lab-k8s1", False, 30)


@pytest.mark.parametrize("refusal, status, message", [
    ("unauthorized.json", 401, "answered GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions with 401 "
                               "Unauthorized: Unauthorized (with kubeconfig /lab/kubeconfig)"),
    ("forbidden.json", 403, 'with 403 Forbidden: customresourcedefinitions.apiextensions.k8s.io is forbidden: User '
                            '"viewer" cannot list resource "customresourcedefinitions"'),
])
def test_a_refusal_names_the_servers_answer(monkeypatch, refusal, status, message):
    objects, _calls = serve(monkeypatch, "applied", refusal)
    result = run_module(k8s_objects_info.main, args(objects))
    assert result["failed"] is True and result["status"] == status and message in result["msg"], result["msg"]
    assert result["msg"].startswith("the API server %s " % HOST)


def test_a_kubeconfig_that_cannot_be_loaded_is_named(tmp_path):
    missing = str(tmp_path / "nowhere")
    result = run_module(k8s_objects_info.main, args([], kubeconfig=missing, context="lab"))
    assert result["failed"] is True
    assert result["msg"].startswith("cannot load kubeconfig %s (context lab): " % missing), result["msg"]


@pytest.mark.parametrize("extra, message", [
    (dict(timeout=0), "timeout 0 is outside 1-600 seconds"),
    (dict(objects=[{"apiVersion": "v1", "metadata": {"name": "x"}}]), "objects 0 have no apiVersion, kind or metadata.name"),
])
def test_bad_input_is_refused_before_the_server_is_asked(monkeypatch, extra, message):
    objects, calls = serve(monkeypatch, "applied")
    result = run_module(k8s_objects_info.main, dict(args(objects), **extra))
    assert result["failed"] is True and message in result["msg"] and calls == []
