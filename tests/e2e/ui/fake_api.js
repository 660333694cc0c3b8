// A fake Kubernetes API inside the page, for page_test.py (issue 21,
// docs/ui.md "Performance"): window.fetch is replaced before app.js runs
// (CDP Page.addScriptToEvaluateOnNewDocument), so the page's informers list
// and watch generated nodes, leases and pods with no server and no network.
// The test drives it with window.fakeApi: push(path, type, obj) sends one
// watch event, churn(...) streams pod phase changes and lease renewals at a
// rate, truth() is what the server holds. The placeholders __PODS__ and
// __NODES__ are replaced by page_test.py.
'use strict';
(() => {
  const PODS = __PODS__, NODES = __NODES__;
  const enc = new TextEncoder();
  const watchers = new Map();  // path -> [ReadableStreamDefaultController]
  let rv = 1000;
  const t0 = new Date(Date.now() - 3600e3).toISOString();

  // A pod as kplane's API returns one once a simulated kubelet ran it
  // (about 2 KB of JSON).
  function pod(name, node, phase, owner, deleting) {
    const meta = {
      name, namespace: 'default', uid: 'uid-' + name, resourceVersion: String(++rv),
      creationTimestamp: t0, labels: { app: 'load', 'pod-template-hash': 'abc12' },
      managedFields: [
        { manager: 'load', operation: 'Update', apiVersion: 'v1', time: t0, fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } }, 'f:spec': { 'f:containers': {} } } },
        { manager: 'kubeletsim', operation: 'Update', apiVersion: 'v1', time: t0, fieldsType: 'FieldsV1',
          subresource: 'status', fieldsV1: { 'f:status': { 'f:phase': {}, 'f:conditions': {}, 'f:podIP': {} } } }],
    };
    if (owner) meta.ownerReferences = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: owner, uid: 'rs', controller: true }];
    if (deleting) meta.deletionTimestamp = t0;
    const cond = type => ({ type, status: phase === 'Running' ? 'True' : 'False', lastTransitionTime: t0 });
    return {
      kind: 'Pod', apiVersion: 'v1', metadata: meta,
      spec: {
        nodeName: node, restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler',
        terminationGracePeriodSeconds: 30, serviceAccountName: 'default',
        containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: {},
          terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'IfNotPresent' }],
        tolerations: [
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
          { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
      },
      status: {
        phase, hostIP: '10.0.0.1', podIP: '10.244.0.1', startTime: t0,
        conditions: [cond('PodReadyToStartContainers'), cond('Initialized'), cond('Ready'), cond('ContainersReady'), cond('PodScheduled')],
        containerStatuses: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', imageID: '', ready: phase === 'Running',
          restartCount: 0, started: phase === 'Running', state: phase === 'Running' ? { running: { startedAt: t0 } } : { waiting: { reason: 'ContainerCreating' } } }],
      },
    };
  }
  function node(name) {
    return { kind: 'Node', apiVersion: 'v1',
      metadata: { name, uid: 'n-' + name, resourceVersion: String(++rv), creationTimestamp: t0 },
      spec: {}, status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastTransitionTime: t0 }] } };
  }
  function lease(name) {
    return { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1',
      metadata: { name, namespace: 'kube-node-lease', resourceVersion: String(++rv) },
      spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new Date().toISOString() } };
  }

  // The server's state: name -> the pod's fields (not its JSON).
  const pods = new Map();
  for (let i = 0; i < PODS; i++) {
    pods.set('load-' + i, { node: 'node-' + (i % NODES), phase: i % 2 ? 'Running' : 'Pending', owner: '', deleting: false });
  }
  const podJson = (name, p) => pod(name, p.node, p.phase, p.owner, p.deleting);
  const lists = {
    '/api/v1/nodes': () => Array.from({ length: NODES }, (_, i) => node('node-' + i)),
    '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases': () => Array.from({ length: NODES }, (_, i) => lease('node-' + i)),
    '/api/v1/pods': () => Array.from(pods, ([name, p]) => podJson(name, p)),
    '/apis/apps/v1/deployments': () => [],
    '/api/v1/events': () => [],
  };

  const json = (body, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  window.fetch = async (url, init = {}) => {
    const u = new URL(url, location.href);
    if (u.pathname.endsWith('/selfsubjectreviews')) return json({ status: { userInfo: { username: 'fake' } } });
    if (u.pathname === '/ui/api/history') return json(window.fakeApi.history);
    if (u.searchParams.get('watch')) {
      let me = null;
      const stream = new ReadableStream({ start(c) { me = c; } });
      if (!watchers.has(u.pathname)) watchers.set(u.pathname, []);
      watchers.get(u.pathname).push(me);
      if (init.signal) init.signal.addEventListener('abort', () => {
        watchers.set(u.pathname, watchers.get(u.pathname).filter(c => c !== me));
      });
      return new Response(stream, { status: 200 });
    }
    const all = lists[u.pathname];
    if (!all) return json({ kind: 'Status', code: 404, message: 'not found' }, 404);
    // Paged as the API pages: limit, continue = the next offset.
    const items = all();
    const from = Number(u.searchParams.get('continue') || 0);
    const limit = Number(u.searchParams.get('limit') || items.length);
    const to = Math.min(items.length, from + limit);
    return json({ kind: 'List', metadata: { resourceVersion: String(rv), continue: to < items.length ? String(to) : undefined },
      items: items.slice(from, to) });
  };

  function send(path, lines) {
    const bytes = enc.encode(lines.join('\n') + '\n');
    for (const c of watchers.get(path) || []) c.enqueue(bytes);
  }
  const PODS_PATH = '/api/v1/pods';
  window.fakeApi = {
    history: null,  // what /ui/api/history answers
    watching: path => (watchers.get(path) || []).length,
    // change: { type: 'ADDED'|'MODIFIED'|'DELETED', name, node?, phase?, owner?, deleting? }
    apply(changes) {
      const lines = [];
      for (const ch of changes) {
        let p = pods.get(ch.name);
        if (ch.type === 'DELETED') {
          if (!p) continue;
          pods.delete(ch.name);
          lines.push(JSON.stringify({ type: 'DELETED', object: podJson(ch.name, p) }));
          continue;
        }
        p = Object.assign({ node: '', phase: 'Pending', owner: '', deleting: false }, p || {}, ch);
        delete p.type; delete p.name;
        pods.set(ch.name, p);
        lines.push(JSON.stringify({ type: ch.type, object: podJson(ch.name, p) }));
      }
      send(PODS_PATH, lines);
    },
    // What the server holds: [[name, {node, phase, owner, deleting}], ...].
    truth: () => Array.from(pods),
    // podsPerSecond phase flips, leasesPerSecond renewals and nodesPerSecond
    // Ready flips, sent every
    // 100 ms; returns a function that stops it.
    // Node status changes (the nodes' watch): [[name, ready], ...].
    nodes(changes) {
      send('/api/v1/nodes', changes.map(([name, ready]) => {
        const n = node(name);
        n.status.conditions[0].status = ready ? 'True' : 'False';
        return JSON.stringify({ type: 'MODIFIED', object: n });
      }));
    },
    churn(podsPerSecond, leasesPerSecond, nodesPerSecond = 0) {
      const names = Array.from(pods.keys());
      let next = 0, nextLease = 0, nextNode = 0;
      const timer = setInterval(() => {
        const lines = [];
        for (let k = 0; k < podsPerSecond / 10; k++) {
          const name = names[next++ % names.length];
          const p = pods.get(name);
          if (!p) continue;
          p.phase = p.phase === 'Running' ? 'Succeeded' : 'Running';
          lines.push(JSON.stringify({ type: 'MODIFIED', object: podJson(name, p) }));
        }
        if (lines.length) send(PODS_PATH, lines);
        const ls = [];
        for (let k = 0; k < leasesPerSecond / 10; k++) {
          ls.push(JSON.stringify({ type: 'MODIFIED', object: lease('node-' + (nextLease++ % NODES)) }));
        }
        if (ls.length) send('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', ls);
        const ns = [];
        for (let k = 0; k < nodesPerSecond / 10; k++) {
          const n = node('node-' + (nextNode++ % NODES));
          n.status.conditions[0].status = nextNode % 2 ? 'True' : 'False';
          ns.push(JSON.stringify({ type: 'MODIFIED', object: n }));
        }
        if (ns.length) send('/api/v1/nodes', ns);
      }, 100);
      return () => clearInterval(timer);
    },
  };
})();
