// kplane's web view (issue 21, docs/ui.md). Plain JS, no framework, no build.
//
// Data: the Kubernetes API through the user's bearer token (sessionStorage),
// each resource kept by an Informer as client-go does it: list (paged), then
// watch from the list's resourceVersion over one streamed fetch
// (?watch=1, newline-delimited JSON); a 410 Gone re-lists. Nothing polls the
// API. The store panel reads /ui/api/store (the store has no status watch);
// the History tab reads /ui/api/history (one object's MVCC versions) when
// asked; node stop/resume POSTs /ui/api/nodes/<name>/stop|resume.
// Lists are virtualised (only visible rows exist in the DOM), renders are
// coalesced into animation frames, and the pods are kept sorted and counted
// per watch event (PodIndex), so a frame costs the visible rows, not a pass
// over 50,000 pods (docs/ui.md "Performance").
// All object text reaches the DOM through textContent, never as markup.
'use strict';

const TOKEN_KEY = 'kplane.token';
const ROW = 24;
// Items per list request. Each paged list request costs the API server a
// fixed ~3 s at 50,000 pods on a busy 2-core machine whatever its limit
// (docs/ui.md "Performance"), so 500 made the pods list 100 requests and
// 5 minutes; 5,000 makes it 10 (a 15 MB page of JSON, parsed in one go).
const LIST_PAGE = 5000;
const MAX_EVENTS = 5000;

// ---------------------------------------------------------------------------
// Authentication

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

class HttpError extends Error {
  constructor(status, body) {
    super((body && body.message) || ('HTTP ' + status));
    this.status = status;
  }
}

async function api(path, init = {}) {
  const headers = Object.assign({ Accept: 'application/json' }, init.headers || {});
  headers.Authorization = 'Bearer ' + token();
  const resp = await fetch(path, Object.assign({}, init, { headers, cache: 'no-store' }));
  if (resp.status === 401) { signOut('The token was not accepted (401 Unauthorized).'); }
  if (!resp.ok) {
    let body = null;
    try { body = await resp.json(); } catch (e) { /* not JSON */ }
    throw new HttpError(resp.status, body);
  }
  return resp;
}

// ---------------------------------------------------------------------------
// Informer: list, then watch; keeps a Map of (projected) objects by key.

class Informer {
  // path: "/api/v1/nodes"; project(obj) -> the fields the views keep.
  // index (optional): kept in step with items, event by event:
  // reset(values) after a list, upsert(old, projected) -> the object to
  // keep under the key, remove(old).
  constructor(path, project, onChange, onDenied, index) {
    this.path = path;
    this.project = project;
    this.onChange = onChange;
    this.onDenied = onDenied;
    this.index = index || null;
    this.items = new Map();
    this.rv = '';
    this.synced = false;
    this.stopped = false;
    this.controller = null;
    this.version = 0;  // bumped on every change (views cache derived data)
  }

  key(o) { return (o.metadata.namespace ? o.metadata.namespace + '/' : '') + o.metadata.name; }

  start() { this.run(); return this; }
  stop() { this.stopped = true; if (this.controller) this.controller.abort(); }

  changed() { this.version++; this.onChange(); }

  async list() {
    const items = new Map();
    let cont = '';
    let rv = '';
    do {
      const q = '?limit=' + LIST_PAGE + (cont ? '&continue=' + encodeURIComponent(cont) : '');
      const resp = await api(this.path + q, { signal: this.controller.signal });
      const body = await resp.json();
      for (const o of body.items || []) items.set(this.key(o), this.project(o));
      cont = body.metadata.continue || '';
      rv = body.metadata.resourceVersion;
    } while (cont);
    this.items = items;
    if (this.index) this.index.reset(items.values());
    this.rv = rv;
    this.synced = true;
    this.changed();
  }

  // One watch request; returns when it ends. Throws on errors; a 410 is
  // thrown as HttpError(410) whether it came as the status or an event.
  async watch() {
    const q = '?watch=1&allowWatchBookmarks=true&resourceVersion=' + encodeURIComponent(this.rv);
    const resp = await api(this.path + q, { signal: this.controller.signal });
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl;
      let at = 0;
      let any = false;
      while ((nl = buf.indexOf('\n', at)) >= 0) {
        const line = buf.slice(at, nl);
        at = nl + 1;
        if (!line.trim()) continue;
        const ev = JSON.parse(line);
        if (ev.type === 'ERROR') {
          throw new HttpError(ev.object.code || 500, ev.object);
        }
        this.rv = ev.object.metadata.resourceVersion || this.rv;
        if (ev.type === 'BOOKMARK') continue;
        this.apply(ev.type, ev.object);
        any = true;
      }
      buf = buf.slice(at);
      if (any) this.changed();
    }
  }

  apply(type, obj) {
    const k = this.key(obj);
    const old = this.items.get(k);
    if (type === 'DELETED') {
      if (!old) return;
      this.items.delete(k);
      if (this.index) this.index.remove(old);
      return;
    }
    let p = this.project(obj);
    if (this.index) p = this.index.upsert(old, p);
    this.items.set(k, p);
  }

  async run() {
    let backoff = 500;
    let needList = true;
    while (!this.stopped) {
      this.controller = new AbortController();
      try {
        if (needList) { await this.list(); needList = false; }
        await this.watch();  // ended by the server: watch again from rv
        backoff = 500;
      } catch (e) {
        if (this.stopped) return;
        if (e instanceof HttpError && e.status === 403) { this.onDenied(e.message); return; }
        if (e instanceof HttpError && e.status === 401) return;
        if (e instanceof HttpError && e.status === 410) { needList = true; continue; }
        // The server went away (restart, network): wait, then re-list.
        await new Promise(r => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 8000);
        needList = true;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Projections: only what the views show, so 50,000 pods stay small.

function condition(o, type) {
  for (const c of (o.status && o.status.conditions) || []) if (c.type === type) return c;
  return null;
}
function ownerOf(o, kind) {
  for (const r of o.metadata.ownerReferences || []) if (r.kind === kind) return r.name;
  return '';
}
function projectNode(o) {
  const ready = condition(o, 'Ready');
  return {
    name: o.metadata.name,
    ready: ready ? ready.status : 'Unknown',
    readyReason: ready ? ready.reason || '' : '',
    unschedulable: !!(o.spec && o.spec.unschedulable),
    taints: ((o.spec && o.spec.taints) || []).map(t => t.key + (t.value ? '=' + t.value : '') + ':' + t.effect),
  };
}
// Each node's renewal interval as observed (renewTime minus the previous
// one): a lease older than 2.5 intervals is shown stale. Before a second
// renewal is seen, a quarter of leaseDurationSeconds (the kubelet's interval).
const leaseIntervals = new Map();
function projectLease(o) {
  const renew = o.spec && o.spec.renewTime ? Date.parse(o.spec.renewTime) : 0;
  const name = o.metadata.name;
  const seen = leaseIntervals.get(name);
  let interval = ((o.spec && o.spec.leaseDurationSeconds) || 40) * 250;
  if (seen && renew > seen.renew) interval = renew - seen.renew;
  else if (seen) interval = seen.interval;
  leaseIntervals.set(name, { renew, interval });
  return { name, renew, interval };
}
function projectPod(o) {
  return {
    key: o.metadata.namespace + '/' + o.metadata.name,
    node: (o.spec && o.spec.nodeName) || '',
    phase: (o.status && o.status.phase) || 'Pending',
    deleting: !!o.metadata.deletionTimestamp,
    owner: ownerOf(o, 'ReplicaSet'),
    created: Date.parse(o.metadata.creationTimestamp) || 0,
  };
}

// The pods sorted by (node, namespace/name) and counted by phase, node and
// ReplicaSet, kept up to date per watch event: a pod changing phase is
// updated in place (its position does not change), one added, deleted or
// moved to another node is spliced in or out at its binary-searched
// position. Before, every batch of events rebuilt and sorted all 50,000
// pods once per animation frame (docs/ui.md "Performance").
function podPhase(p) { return p.deleting ? 'Terminating' : p.phase; }
function podOrder(a, b) {
  return a.node < b.node ? -1 : a.node > b.node ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
function bump(map, k, d) {
  const n = (map.get(k) || 0) + d;
  if (n) map.set(k, n); else map.delete(k);
}
// Counts kept for tests and docs/ui.md's profile: full sorts vs incremental edits.
const uiStats = { podSorts: 0, podInPlace: 0, podSplices: 0, nodeSorts: 0 };

// The nodes: a status change updates the node's object in place, so the
// name-sorted lists (Nodes tab, the Pods tab's node filter) are rebuilt only
// when nodes come or go (`members`), not on each of their status updates
// (5,000 nodes' updates would re-sort 5,000 names every frame).
class NodeIndex {
  constructor() { this.members = 0; }
  reset() { this.members++; }
  upsert(old, n) {
    if (!old) { this.members++; return n; }
    Object.assign(old, n);
    return old;
  }
  remove() { this.members++; }
}
const nodeIndex = new NodeIndex();

class PodIndex {
  constructor() {
    this.order = 0;
    this.sorted = [];
    this.byPhase = new Map();
    this.byNode = new Map();
    this.byRs = new Map();  // "namespace/replicaset" -> pods not being deleted
  }
  reset(values) {
    this.sorted = Array.from(values).sort(podOrder);
    this.byPhase = new Map();
    this.byNode = new Map();
    this.byRs = new Map();
    for (const p of this.sorted) this.count(p, 1);
    this.order++;
    uiStats.podSorts++;
  }
  count(p, d) {
    bump(this.byPhase, podPhase(p), d);
    bump(this.byNode, p.node, d);
    if (p.owner && !p.deleting) bump(this.byRs, p.key.slice(0, p.key.indexOf('/') + 1) + p.owner, d);
  }
  // The first position whose pod sorts at or after p.
  lowerBound(p) {
    let lo = 0, hi = this.sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (podOrder(this.sorted[mid], p) < 0) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  upsert(old, p) {
    if (old && old.node === p.node) {
      this.count(old, -1);
      Object.assign(old, p);
      this.count(old, 1);
      uiStats.podInPlace++;
      return old;
    }
    if (old) this.remove(old);
    this.sorted.splice(this.lowerBound(p), 0, p);
    this.count(p, 1);
    this.order++;
    uiStats.podSplices++;
    return p;
  }
  remove(old) {
    const i = this.lowerBound(old);
    if (this.sorted[i] === old) this.sorted.splice(i, 1);
    this.count(old, -1);
    this.order++;
    uiStats.podSplices++;
  }
  // The pods on one node: a slice of the sorted array.
  onNode(node) {
    const from = this.lowerBound({ node, key: '' });
    let to = from;
    while (to < this.sorted.length && this.sorted[to].node === node) to++;
    return this.sorted.slice(from, to);
  }
}
const podIndex = new PodIndex();

function projectDeployment(o) {
  const s = o.status || {};
  const progressing = condition(o, 'Progressing');
  return {
    key: o.metadata.namespace + '/' + o.metadata.name,
    uid: o.metadata.uid,
    desired: (o.spec && o.spec.replicas != null) ? o.spec.replicas : 1,
    updated: s.updatedReplicas || 0,
    ready: s.readyReplicas || 0,
    available: s.availableReplicas || 0,
    replicas: s.replicas || 0,
    observed: (s.observedGeneration || 0) >= (o.metadata.generation || 0),
    reason: progressing ? progressing.reason || '' : '',
  };
}
function projectEvent(o) {
  const t = o.lastTimestamp || o.eventTime || o.metadata.creationTimestamp;
  const io = o.involvedObject || {};
  return {
    time: Date.parse(t) || 0,
    type: o.type || '',
    reason: o.reason || '',
    object: (io.kind || '') + '/' + (io.namespace ? io.namespace + '/' : '') + (io.name || ''),
    message: o.message || '',
    count: o.count || 1,
  };
}

// ---------------------------------------------------------------------------
// Virtualised list: a spacer as tall as all rows, and a pool of row
// elements moved to the visible window.

class VList {
  // cls: grid class of the rows; fill(row, item, cells) sets the cells.
  // actions: [[action, label], ...] buttons in a last cell of every row;
  // a click on one calls onAction(item, action) instead of onClick.
  constructor(container, cls, columns, fill, onClick, actions, onAction) {
    this.container = container;
    this.cls = cls;
    this.columns = columns;
    this.fill = fill;
    this.onClick = onClick;
    this.actions = actions || [];
    this.onAction = onAction;
    this.items = [];
    this.pool = [];
    this.spacer = document.createElement('div');
    this.spacer.className = 'spacer';
    container.appendChild(this.spacer);
    container.addEventListener('scroll', () => this.render());
    if (onClick || onAction) {
      container.addEventListener('click', e => {
        const row = e.target.closest('.row');
        if (!row || !row.item) return;
        const b = e.target.closest('button[data-action]');
        if (b) onAction(row.item, b.dataset.action);
        else if (onClick) onClick(row.item);
      });
    }
  }
  setItems(items) { this.items = items; this.render(); }
  render() {
    const c = this.container;
    this.spacer.style.height = (this.items.length * ROW) + 'px';
    const first = Math.max(0, Math.floor(c.scrollTop / ROW) - 5);
    const visible = Math.ceil((c.clientHeight || 600) / ROW) + 10;
    const last = Math.min(this.items.length, first + visible);
    const need = last - first;
    while (this.pool.length < need) {
      const row = document.createElement('div');
      row.className = 'row ' + this.cls + (this.onClick ? ' clickable' : '');
      row.cells = [];
      for (let i = 0; i < this.columns; i++) {
        const s = document.createElement('span');
        row.appendChild(s);
        row.cells.push(s);
      }
      if (this.actions.length) {
        const s = document.createElement('span');
        s.className = 'actions';
        for (const [action, label] of this.actions) {
          const b = document.createElement('button');
          b.type = 'button';
          b.dataset.action = action;
          b.textContent = label;
          s.appendChild(b);
        }
        row.appendChild(s);
      }
      c.appendChild(row);
      this.pool.push(row);
    }
    for (let i = 0; i < this.pool.length; i++) {
      const row = this.pool[i];
      if (i >= need) { row.hidden = true; row.item = null; continue; }
      const item = this.items[first + i];
      row.hidden = false;
      row.item = item;
      row.style.transform = 'translateY(' + ((first + i) * ROW) + 'px)';
      this.fill(row, item, row.cells);
    }
  }
}

function setCell(cell, text, cls) {
  if (cell.textContent !== text) cell.textContent = text;
  const want = cls || '';
  if (cell.className !== want) cell.className = want;
}

function age(ms) {
  if (!ms) return '-';
  let s = Math.max(0, Math.floor((Date.now() - ms) / 1000));
  if (s < 120) return s + 's';
  const m = Math.floor(s / 60);
  if (m < 120) return m + 'm';
  const h = Math.floor(m / 60);
  return h < 48 ? h + 'h' : Math.floor(h / 24) + 'd';
}

function bytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' KiB';
  return (n / 1024 / 1024).toFixed(1) + ' MiB';
}

function counts(el, pairs) {
  // Rewritten only when a number changed (this runs every frame).
  const sig = JSON.stringify(pairs);
  if (el.countsSig === sig) return;
  el.countsSig = sig;
  el.textContent = '';
  for (const [label, n, cls] of pairs) {
    const d = document.createElement('span');
    d.className = 'count' + (cls ? ' ' + cls : '');
    d.dataset.count = label;
    const b = document.createElement('b');
    b.textContent = String(n);
    d.appendChild(b);
    d.appendChild(document.createTextNode(label));
    el.appendChild(d);
  }
}

// ---------------------------------------------------------------------------
// The views

const $ = id => document.getElementById(id);
const state = { informers: [], view: 'nodes', selectedNode: '', dirty: true, frame: 0, storeTimer: 0 };

function schedule() {
  state.dirty = true;
  if (!state.frame) state.frame = requestAnimationFrame(renderNow);
}

function denied(which) {
  return msg => { const el = $(which + '-denied'); el.hidden = false; el.textContent = msg; };
}

let nodes, leases, pods, deployments, events;
let nodeList, podList, deployList, eventList;

function nodeStatus(n) {
  if (n.ready === 'True') return n.unschedulable ? ['Ready,SchedulingDisabled', 's-ready'] : ['Ready', 's-ready'];
  const s = n.ready === 'False' ? 'NotReady' : 'Unknown';
  return [n.unschedulable ? s + ',SchedulingDisabled' : s, n.ready === 'False' ? 's-notready' : 's-unknown'];
}


// One collator for every name sort: localeCompare with options builds one
// per call (node: 645 ms to sort 5,000 node names, 18 ms with this).
const byName = new Intl.Collator(undefined, { numeric: true }).compare;

function renderNodes() {
  const all = cached('nodes', [nodeIndex.members], () => {
    uiStats.nodeSorts++;
    return Array.from(nodes.items.values()).sort((a, b) => byName(a.name, b.name));
  });
  let ready = 0, notReady = 0, cordoned = 0;
  for (const n of all) {
    if (n.ready === 'True') ready++; else notReady++;
    if (n.unschedulable) cordoned++;
  }
  counts($('node-counts'), [['nodes', all.length], ['Ready', ready, 's-ready'],
    ['NotReady', notReady, notReady ? 's-notready' : ''], ['cordoned', cordoned],
    ['pods', pods.items.size]]);
  nodeList.setItems(all);
}

function fillNode(row, n, cells) {
  row.dataset.name = n.name;
  row.classList.toggle('selected', n.name === state.selectedNode);
  const [status, cls] = nodeStatus(n);
  setCell(cells[0], n.name);
  setCell(cells[1], status, 'status ' + cls);
  const lease = leases.items.get('kube-node-lease/' + n.name);
  const stale = lease && lease.renew && (Date.now() - lease.renew) > Math.max(2000, 2.5 * lease.interval);
  setCell(cells[2], lease ? age(lease.renew) + ' ago' : '-', 'lease' + (stale ? ' s-stale' : ''));
  const every = lease ? 'renewed every ' + Math.round(lease.interval / 1000) + 's' : '';
  if (cells[2].title !== every) cells[2].title = every;
  setCell(cells[3], String(podIndex.byNode.get(n.name) || 0), 'pods');
  setCell(cells[4], n.taints.join(', '), 'taints');
}

function podNodeOptions() {
  const sel = $('pod-node');
  // Sorted once per change of the nodes, not on every render of the pods.
  const names = cached('nodeNames', [nodeIndex.members], () => {
    uiStats.nodeSorts++;
    return Array.from(nodes.items.keys()).sort(byName);
  });
  if (sel.options.length - 1 === names.length) return;
  const keep = sel.value;
  sel.textContent = '';
  const all = document.createElement('option');
  all.value = '';
  all.textContent = 'all';
  sel.appendChild(all);
  for (const n of names) {
    const o = document.createElement('option');
    o.value = n;
    o.textContent = n;
    sel.appendChild(o);
  }
  sel.value = keep;
}

// Derived lists are rebuilt only when their inputs changed: the once-a-
// second age refresh then costs the visible rows only.
const memo = {};
function cached(name, inputs, build) {
  const m = memo[name];
  if (m && m.inputs.length === inputs.length && m.inputs.every((v, i) => v === inputs[i])) return m.value;
  const value = build();
  memo[name] = { inputs, value };
  return value;
}

function renderPods() {
  podNodeOptions();
  const node = state.selectedNode;
  const filter = $('pod-filter').value.trim();
  // All pods: the index's own array (spliced in place). A node or a name
  // filter: a slice, rebuilt only when pods come, go or move (not when
  // they change phase: those objects are updated in place).
  const shown = !node && !filter ? podIndex.sorted
    : cached('pods', [podIndex.order, node, filter], () => {
      const on = node ? podIndex.onNode(node) : podIndex.sorted;
      return filter ? on.filter(p => p.key.includes(filter)) : on;
    });
  const pairs = [['pods', pods.items.size]];
  for (const ph of Array.from(podIndex.byPhase.keys()).sort()) {
    pairs.push([ph, podIndex.byPhase.get(ph), 's-' + ph.toLowerCase()]);
  }
  if (node || filter) pairs.push(['shown', shown.length]);
  counts($('pod-counts'), pairs);
  podList.setItems(shown);
}

function fillPod(row, p, cells) {
  row.dataset.name = p.key;
  const phase = p.deleting ? 'Terminating' : p.phase;
  setCell(cells[0], p.node || '(unscheduled)', 'node');
  setCell(cells[1], p.key, 'name');
  setCell(cells[2], phase, 'phase s-' + phase.toLowerCase());
  setCell(cells[3], p.owner, 'owner');
  setCell(cells[4], age(p.created), 'age');
}

function renderDeployments() {
  const all = Array.from(deployments.items.values()).sort((a, b) => a.key.localeCompare(b.key));
  let complete = 0;
  for (const d of all) if (d.updated === d.desired && d.available === d.desired && d.replicas === d.desired && d.observed) complete++;
  counts($('deploy-counts'), [['deployments', all.length], ['complete', complete, 's-ready'],
    ['rolling out', all.length - complete, all.length - complete ? 's-warning' : '']]);
  deployList.setItems(all);
}

function fillDeployment(row, d, cells) {
  row.dataset.name = d.key;
  setCell(cells[0], d.key, 'name');
  cells[1].textContent = '';
  const bar = document.createElement('span');
  bar.className = 'bar';
  const fill = document.createElement('i');
  fill.style.width = (d.desired ? Math.min(100, 100 * Math.min(d.updated, d.available) / d.desired) : 100) + '%';
  bar.appendChild(fill);
  cells[1].appendChild(bar);
  const done = d.updated === d.desired && d.available === d.desired && d.replicas === d.desired && d.observed;
  cells[1].appendChild(document.createTextNode(done ? 'complete' : (d.reason || 'progressing')));
  cells[1].className = 'rollout ' + (done ? 's-ready' : 's-warning');
  setCell(cells[2], String(d.desired));
  setCell(cells[3], String(d.updated), 'updated');
  setCell(cells[4], String(d.ready), 'ready');
  setCell(cells[5], String(d.available), 'available');
  // Pods per ReplicaSet of this deployment, from the pods' owners (the
  // ReplicaSets' names are <deployment>-<template hash>). ReplicaSets are
  // not watched: a browser keeps 6 connections per server, 5 are watches.
  const [ns] = d.key.split('/');
  const prefix = d.key.slice(ns.length + 1) + '-';
  const perRs = podIndex.byRs;
  const sets = [];
  for (const [k, n] of perRs) if (k.startsWith(ns + '/' + prefix) && /^[a-z0-9]+$/.test(k.slice(ns.length + 1 + prefix.length))) sets.push([k.slice(ns.length + 1), n]);
  sets.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  setCell(cells[6], sets.map(([name, n]) => name + ': ' + n).join('  '), 'replicasets');
}

function renderEvents() {
  const all = cached('events', [events.version], () => Array.from(events.items.values()).sort((a, b) => b.time - a.time));
  // Keep memory bounded: drop the oldest beyond MAX_EVENTS.
  if (all.length > MAX_EVENTS) {
    const keep = new Map();
    for (const [k, v] of events.items) if (v.time >= all[MAX_EVENTS - 1].time) keep.set(k, v);
    events.items = keep;
    events.version++;
  }
  let warnings = 0;
  for (const e of all) if (e.type === 'Warning') warnings++;
  counts($('event-counts'), [['events', all.length], ['Warning', warnings, warnings ? 's-warning' : '']]);
  eventList.setItems(all.slice(0, MAX_EVENTS));
}

function fillEvent(row, e, cells) {
  setCell(cells[0], age(e.time) + ' ago');
  setCell(cells[1], e.type, 's-' + e.type.toLowerCase());
  setCell(cells[2], e.reason + (e.count > 1 ? ' (x' + e.count + ')' : ''));
  setCell(cells[3], e.object);
  setCell(cells[4], e.message);
}

function renderNow() {
  state.frame = 0;
  if (!state.dirty) return;
  state.dirty = false;
  if (state.view === 'nodes') renderNodes();
  else if (state.view === 'pods') renderPods();
  else if (state.view === 'deployments') renderDeployments();
  else if (state.view === 'events') renderEvents();
}

// ---------------------------------------------------------------------------
// The store panel: /ui/api/store (authorized like any non-resource URL).

let lastStore = null;
async function refreshStore() {
  if (state.view !== 'store' || !token()) return;
  try {
    const resp = await api('/ui/api/store');
    renderStore(await resp.json());
    $('store-denied').hidden = true;
  } catch (e) {
    denied('store')(e.message);
  }
  state.storeTimer = setTimeout(refreshStore, 1000);
}

function renderStore(s) {
  const changed = lastStore && lastStore.leader !== s.leader && lastStore.leader !== '';
  lastStore = s;
  const summary = $('store-summary');
  counts(summary, [['members', s.members.length], ['revision', s.revision], ['raft term', s.raftTerm]]);
  const leader = document.createElement('span');
  leader.className = 'count';
  leader.id = 'store-leader';
  leader.textContent = 'leader ' + (s.leader || 'none') + (changed ? ' (changed)' : '');
  summary.appendChild(leader);
  const tbody = document.querySelector('#store-members tbody');
  tbody.textContent = '';
  for (const m of s.members) {
    const tr = document.createElement('tr');
    tr.dataset.endpoint = m.endpoint;
    const cell = (text, cls) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (cls) td.className = cls;
      tr.appendChild(td);
    };
    cell(m.endpoint);
    if (m.error) {
      cell('-'); cell('unreachable', 'down role');
      const td = document.createElement('td');
      td.colSpan = 7;
      td.textContent = m.error;
      tr.appendChild(td);
    } else {
      cell(m.memberID);
      cell(m.leader ? 'leader' : (m.isLearner ? 'learner' : 'follower'), (m.leader ? 'leader ' : '') + 'role');
      cell(String(m.raftTerm)); cell(String(m.revision)); cell(String(m.raftIndex));
      cell(String(m.raftAppliedIndex)); cell(bytes(m.dbSize)); cell(bytes(m.dbSizeInUse));
      cell(m.alarms.length ? m.alarms.join(', ') : 'none');
    }
    tbody.appendChild(tr);
  }
}

// ---------------------------------------------------------------------------
// Start/stop of a simulated node: the API server proxies to the fleet's
// control endpoint (authorized as `create` on nodes/proxy).

async function nodeAction(n, action) {
  if (action === 'history') {
    openHistory({ group: '', version: 'v1', resource: 'nodes', namespace: '', name: n.name });
    return;
  }
  const msg = $('node-action');
  msg.className = 'hint';
  msg.textContent = n.name + ': ' + action + '...';
  try {
    await api('/ui/api/nodes/' + encodeURIComponent(n.name) + '/' + action, { method: 'POST' });
    msg.textContent = n.name + (action === 'stop'
      ? ': stopped (its heartbeats stop: stale lease, then NotReady after the node monitor grace period)'
      : ': resumed');
  } catch (e) {
    msg.className = 'error';
    msg.textContent = n.name + ': ' + action + ' failed: ' + e.message;
  }
}

// ---------------------------------------------------------------------------
// History of one object: /ui/api/history lists the versions the store
// still holds (newest first); each is shown as a line diff against the
// version before it.

const HISTORY_FIELDS = ['group', 'version', 'resource', 'namespace', 'name'];

function historyRef() {
  const ref = {};
  for (const f of HISTORY_FIELDS) ref[f] = $('h-' + f).value.trim();
  return ref;
}

function openHistory(ref) {
  for (const f of HISTORY_FIELDS) $('h-' + f).value = ref[f];
  show('history');
  loadHistory(ref);
}

let historySeq = 0;
async function loadHistory(ref) {
  const seq = ++historySeq;
  $('history-denied').hidden = true;
  $('history-versions').textContent = '';
  $('history-summary').textContent = '';
  $('history-end').textContent = 'loading...';
  $('history-end').className = '';
  try {
    const resp = await api('/ui/api/history?' + new URLSearchParams(ref).toString());
    const h = await resp.json();
    if (seq === historySeq) renderHistory(ref, h);
  } catch (e) {
    if (seq !== historySeq) return;
    $('history-end').textContent = '';
    denied('history')(e.message);
  }
}

// The object as text to compare: resourceVersion is the revision shown
// above each version, and managedFields (every writer's field list and
// time) are left out as kubectl leaves them out; the full object keeps them.
function historyLines(obj, full) {
  const o = JSON.parse(JSON.stringify(obj));
  if (o.metadata) {
    delete o.metadata.resourceVersion;
    if (!full) delete o.metadata.managedFields;
  }
  return JSON.stringify(o, null, 2).split('\n');
}

// A line diff: [op, line] with op ' ', '-' or '+'. Common head and tail
// are cut first; the rest is a longest-common-subsequence table (objects
// are short; past 4M cells the middle is shown as replaced).
function lineDiff(a, b) {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const A = a.slice(pre, a.length - suf), B = b.slice(pre, b.length - suf);
  const ops = a.slice(0, pre).map(l => [' ', l]);
  const n = A.length, m = B.length, w = m + 1;
  if (n * m > 4e6) {
    for (const l of A) ops.push(['-', l]);
    for (const l of B) ops.push(['+', l]);
  } else {
    const L = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        L[i * w + j] = A[i] === B[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
      }
    }
    let i = 0, j = 0;
    while (i < n && j < m) {
      if (A[i] === B[j]) { ops.push([' ', A[i]]); i++; j++; }
      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) ops.push(['-', A[i++]]);
      else ops.push(['+', B[j++]]);
    }
    while (i < n) ops.push(['-', A[i++]]);
    while (j < m) ops.push(['+', B[j++]]);
  }
  for (let k = a.length - suf; k < a.length; k++) ops.push([' ', a[k]]);
  return ops;
}

// The changed lines with 3 lines of context; skipped runs as one line.
function renderDiff(ops) {
  const pre = document.createElement('pre');
  pre.className = 'diff';
  const keep = new Uint8Array(ops.length);
  ops.forEach(([op], i) => {
    if (op === ' ') return;
    for (let k = Math.max(0, i - 3); k <= Math.min(ops.length - 1, i + 3); k++) keep[k] = 1;
  });
  let skipped = 0;
  const line = (cls, text) => {
    const d = document.createElement('div');
    d.className = cls;
    d.textContent = text;
    pre.appendChild(d);
  };
  const flush = () => { if (skipped) line('gap', '... ' + skipped + ' unchanged lines'); skipped = 0; };
  ops.forEach(([op, text], i) => {
    if (!keep[i]) { skipped++; return; }
    flush();
    line(op === '+' ? 'add' : op === '-' ? 'del' : 'ctx', op + ' ' + text);
  });
  flush();
  if (!ops.some(([op]) => op !== ' ')) line('gap', 'no change but its managedFields');
  return pre;
}

function renderHistory(ref, h) {
  const vs = h.versions;
  const summary = [['versions', vs.length], ['created at revision', h.createRevision]];
  // Deleted since: the versions before its deletion, while not compacted.
  if (h.deletedRevision) summary.push(['deleted at revision', h.deletedRevision, 's-notready']);
  summary.push(['store revision', h.readRevision]);
  counts($('history-summary'), summary);
  const end = $('history-end');
  end.className = h.end;
  const oldest = vs[vs.length - 1].revision;
  end.textContent = (h.deletedRevision
    ? h.key + ' was deleted at revision ' + h.deletedRevision + ' (its versions stay in the store until a compaction passes them). '
    : '') + (h.end === 'created'
    ? h.key + ': every version since its creation at revision ' + h.createRevision + '.'
    : h.end === 'compacted'
      ? h.key + ': versions before revision ' + oldest + ' were compacted (the store keeps history from revision ' + h.compactRevision + ' on).'
      : h.key + ': the newest ' + vs.length + ' versions (the limit); older ones are still in the store.');
  const box = $('history-versions');
  box.textContent = '';
  vs.forEach((v, i) => {
    const div = document.createElement('div');
    div.className = 'version';
    div.dataset.revision = String(v.revision);
    const title = document.createElement('h3');
    const older = vs[i + 1];
    title.textContent = 'revision ' + v.revision + ' (version ' + v.version + ')' +
      (v.version === 1 ? ': created' : older ? ': compared with revision ' + older.revision : ': the oldest still stored');
    div.appendChild(title);
    if (v.error) {
      const p = document.createElement('p');
      p.className = 'error';
      p.textContent = v.error;
      div.appendChild(p);
    } else {
      const lines = historyLines(v.object);
      if (older && older.object) div.appendChild(renderDiff(lineDiff(historyLines(older.object), lines)));
      const full = document.createElement('details');
      const sum = document.createElement('summary');
      sum.textContent = 'the object at revision ' + v.revision;
      const pre = document.createElement('pre');
      pre.textContent = historyLines(v.object, true).join('\n');
      full.appendChild(sum);
      full.appendChild(pre);
      if (!older || !older.object) full.open = true;
      div.appendChild(full);
    }
    box.appendChild(div);
  });
}

// ---------------------------------------------------------------------------
// Wiring

function show(view) {
  state.view = view;
  for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('active', b.dataset.view === view);
  for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== 'view-' + view;
  clearTimeout(state.storeTimer);
  if (view === 'store') refreshStore();
  schedule();
}

function signOut(message) {
  for (const i of state.informers) i.stop();
  state.informers = [];
  sessionStorage.removeItem(TOKEN_KEY);
  $('app').hidden = true;
  $('tabs').hidden = true;
  $('signout').hidden = true;
  $('who').textContent = '';
  $('login').hidden = false;
  $('login-error').textContent = message || '';
}

async function whoAmI() {
  try {
    const resp = await api('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
    });
    const r = await resp.json();
    $('who').textContent = 'signed in as ' + r.status.userInfo.username;
  } catch (e) {
    if (!(e instanceof HttpError && e.status === 401)) $('who').textContent = 'signed in';
  }
}

function start() {
  $('login').hidden = true;
  $('app').hidden = false;
  $('tabs').hidden = false;
  $('signout').hidden = false;
  whoAmI();
  nodes = new Informer('/api/v1/nodes', projectNode, schedule, denied('nodes'), nodeIndex);
  leases = new Informer('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', projectLease, schedule, () => {});
  pods = new Informer('/api/v1/pods', projectPod, schedule, denied('pods'), podIndex);
  deployments = new Informer('/apis/apps/v1/deployments', projectDeployment, schedule, denied('deployments'));
  events = new Informer('/api/v1/events', projectEvent, schedule, denied('events'));
  state.informers = [nodes, leases, pods, deployments, events].map(i => i.start());
  show(state.view);
}

document.addEventListener('DOMContentLoaded', () => {
  nodeList = new VList($('node-list'), 'nodes', 5, fillNode, n => {
    state.selectedNode = n.name;
    $('pod-node').value = n.name;
    show('pods');
  }, [['stop', 'stop'], ['resume', 'resume'], ['history', 'history']], nodeAction);
  podList = new VList($('pod-list'), 'pods', 5, fillPod, null, [['history', 'history']],
    p => openHistory({ group: '', version: 'v1', resource: 'pods', namespace: p.key.split('/')[0], name: p.key.split('/')[1] }));
  deployList = new VList($('deploy-list'), 'deployments', 7, fillDeployment, null, [['history', 'history']],
    d => openHistory({ group: 'apps', version: 'v1', resource: 'deployments', namespace: d.key.split('/')[0], name: d.key.split('/')[1] }));
  eventList = new VList($('event-list'), 'events', 5, fillEvent);
  for (const b of document.querySelectorAll('#tabs button')) b.addEventListener('click', () => show(b.dataset.view));
  $('pod-node').addEventListener('change', e => { state.selectedNode = e.target.value; schedule(); });
  $('pod-filter').addEventListener('input', schedule);
  $('signout').addEventListener('click', () => signOut(''));
  $('history-form').addEventListener('submit', e => {
    e.preventDefault();
    loadHistory(historyRef());
  });
  $('login-form').addEventListener('submit', e => {
    e.preventDefault();
    const t = $('token').value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    $('token').value = '';
    start();
  });
  // Ages count up between events (the lease column): re-render the visible
  // rows once a second from memory; no request is made.
  setInterval(() => { if (state.informers.length) schedule(); }, 1000);
  if (token()) start(); else signOut('');
});
