#!/usr/bin/python3
"""The official Python client's dynamic client (python3-kubernetes,
kubernetes.dynamic.DynamicClient) against a custom resource: it finds the
kind through discovery, then creates, gets, lists (with a label selector),
watches, patches (merge and JSON patch) and deletes Gizmos, as operators
written in Python (kopf, ...) do.

Usage: dynamic_client_crd.py KUBECONFIG NAMESPACE. The CRD gizmos.example.io
(kind Gizmo, v1) must be established. Prints one line per check and "ok" at
the end; exits non-zero on the first failure.
"""
import sys
import threading

from kubernetes import config, dynamic
from kubernetes.client import api_client
from kubernetes.dynamic.exceptions import NotFoundError


def gizmo(name, cranks, labels=None):
    return {"apiVersion": "example.io/v1", "kind": "Gizmo",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"cranks": cranks, "color": "red"}}


def main():
    client = dynamic.DynamicClient(
        api_client.ApiClient(
            configuration=config.load_kube_config(config_file=sys.argv[1])))
    ns = sys.argv[2]
    gizmos = client.resources.get(api_version="example.io/v1", kind="Gizmo")
    assert gizmos.namespaced and gizmos.name == "gizmos", gizmos
    print("discovered", gizmos.group_version, gizmos.name)

    listed = gizmos.get(namespace=ns)
    events = []
    two_events = threading.Event()

    def watch_gizmos(rv):
        for event in gizmos.watch(namespace=ns, resource_version=rv,
                                  label_selector="team=a", timeout=30):
            events.append((event["type"], event["object"].metadata.name,
                           event["object"].spec.cranks))
            if len(events) >= 2:
                two_events.set()
                return

    watcher = threading.Thread(target=watch_gizmos,
                               args=(listed.metadata.resourceVersion,))
    watcher.start()

    created = gizmos.create(body=gizmo("g1", 1, {"team": "a"}), namespace=ns)
    assert created.metadata.uid and created.spec.cranks == 1, created
    gizmos.create(body=gizmo("other", 7, {"team": "b"}), namespace=ns)
    print("created g1 at", created.metadata.resourceVersion)

    got = gizmos.get(name="g1", namespace=ns)
    assert got.metadata.uid == created.metadata.uid, got
    selected = gizmos.get(namespace=ns, label_selector="team=a")
    assert [i.metadata.name for i in selected.items] == ["g1"], selected
    print("listed", len(selected.items), "with team=a")

    patched = gizmos.patch(name="g1", namespace=ns,
                           body={"spec": {"cranks": 2}},
                           content_type="application/merge-patch+json")
    assert patched.spec.cranks == 2 and patched.spec.color == "red", patched
    patched = gizmos.patch(
        name="g1", namespace=ns,
        body=[{"op": "replace", "path": "/spec/color", "value": "blue"}],
        content_type="application/json-patch+json")
    assert patched.spec.color == "blue" and patched.spec.cranks == 2, patched
    print("patched cranks", patched.spec.cranks, "color", patched.spec.color)

    assert two_events.wait(30), events
    watcher.join()
    assert events == [("ADDED", "g1", 1), ("MODIFIED", "g1", 2)], events
    print("watched", events)

    gizmos.delete(name="g1", namespace=ns)
    gizmos.delete(name="other", namespace=ns)
    try:
        gizmos.get(name="g1", namespace=ns)
        raise AssertionError("g1 still there")
    except NotFoundError:
        print("deleted g1: 404")
    print("ok")


if __name__ == "__main__":
    main()
