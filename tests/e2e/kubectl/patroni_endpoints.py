#!/usr/bin/python3
"""Patroni-style use of core/v1 Endpoints with the official Python client
(python3-kubernetes), as Patroni's Kubernetes DCS does in Endpoints mode:
create an Endpoints holding the leader lock in its annotations, take the
lock with a patch carrying the resourceVersion read (a stale one must be
refused with 409), and watch the cluster's Endpoints by label selector.

Usage: patroni_endpoints.py KUBECONFIG NAMESPACE. Prints one line per check
and "ok" at the end; exits non-zero on the first failure.
"""
import sys
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def main():
    config.load_kube_config(config_file=sys.argv[1])
    ns = sys.argv[2]
    v1 = client.CoreV1Api()
    labels = {"application": "spilo", "cluster-name": "demo"}
    selector = "application=spilo,cluster-name=demo"

    seen = []
    got_two = threading.Event()

    def watch_endpoints(rv):
        w = watch.Watch()
        for event in w.stream(v1.list_namespaced_endpoints, ns,
                              label_selector=selector, resource_version=rv,
                              timeout_seconds=30):
            obj = event["object"]
            seen.append((event["type"], obj.metadata.name,
                         (obj.metadata.annotations or {}).get("leader")))
            if len(seen) >= 2:
                got_two.set()
                w.stop()

    listed = v1.list_namespaced_endpoints(ns, label_selector=selector)
    watcher = threading.Thread(
        target=watch_endpoints, args=(listed.metadata.resource_version,))
    watcher.start()

    # Endpoints without a Service; an unrelated one the selector must skip.
    v1.create_namespaced_endpoints(ns, client.V1Endpoints(
        metadata=client.V1ObjectMeta(name="other",
                                     labels={"application": "x"})))
    created = v1.create_namespaced_endpoints(ns, client.V1Endpoints(
        metadata=client.V1ObjectMeta(
            name="demo", labels=labels,
            annotations={"leader": "", "ttl": "30"}),
        subsets=[client.V1EndpointSubset(
            addresses=[client.V1EndpointAddress(ip="10.244.1.5")],
            ports=[client.CoreV1EndpointPort(name="postgresql", port=5432)])]))
    print("created demo at", created.metadata.resource_version)
    assert created.subsets[0].ports[0].protocol == "TCP", created

    # Take the lock with the resourceVersion read: accepted.
    patched = v1.patch_namespaced_endpoints("demo", ns, {
        "metadata": {"resourceVersion": created.metadata.resource_version,
                     "annotations": {"leader": "pg-0"}}})
    print("leader", patched.metadata.annotations["leader"])
    assert patched.metadata.annotations["leader"] == "pg-0"

    # A second member with the stale resourceVersion: 409, lock unchanged.
    try:
        v1.patch_namespaced_endpoints("demo", ns, {
            "metadata": {"resourceVersion": created.metadata.resource_version,
                         "annotations": {"leader": "pg-1"}}})
        raise AssertionError("a stale resourceVersion was accepted")
    except ApiException as e:
        print("stale patch", e.status)
        assert e.status == 409, e
    now = v1.read_namespaced_endpoints("demo", ns)
    assert now.metadata.annotations["leader"] == "pg-0", now

    # A replace with the current resourceVersion (Patroni's update path).
    now.metadata.annotations["optime"] = "67108960"
    v1.replace_namespaced_endpoints("demo", ns, now)

    assert got_two.wait(30), seen
    watcher.join(30)
    print("watched", seen[:2])
    assert seen[0] == ("ADDED", "demo", ""), seen
    assert seen[1] == ("MODIFIED", "demo", "pg-0"), seen
    print("ok")


if __name__ == "__main__":
    main()
