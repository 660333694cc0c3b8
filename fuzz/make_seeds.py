#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target into fuzz/corpus/<target>/.

Run from the repository top (`python3 fuzz/make_seeds.py`); the files are
committed, so this is only needed to change them. Protobuf seeds are encoded
by protoc from text format. Crashers found later are committed beside these
under their own names (docs/testing.md, "Fuzzing"); this script does not
touch other files. Hostile inputs of issue 15 are not copied here:
fuzz/CMakeLists.txt points the targets at testdata/hostile/ directly.
"""
import base64
import json
import os
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def protoc(message, text, protos=("schemas/raft.proto",
                                  "schemas/storage.proto",
                                  "schemas/rpc.proto")):
    return subprocess.run(
        ["protoc", "--proto_path=" + ROOT, "--encode=" + message] +
        list(protos),
        input=text.encode(), capture_output=True, check=True,
        cwd=ROOT).stdout


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


# --- net/http_parser.h. Byte 0 of each input is the read size.
STEP = b"\x07"
write("http_request", "get", STEP +
      b"GET /api/v1/namespaces/default/pods?labelSelector=app%3Dweb&watch=1"
      b" HTTP/1.1\r\nHost: a\r\nAccept: application/json\r\n\r\n")
write("http_request", "post_length", STEP +
      b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: a\r\n"
      b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
write("http_request", "post_chunked_pipelined", STEP +
      b"POST /v3/kv/put HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      b"5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n"
      b"GET /healthz HTTP/1.0\r\n\r\n")
write("http_request", "absolute_form", b"\x01"
      b"OPTIONS * HTTP/1.1\r\n\r\nGET http://h:1/a%20b?x=1+2&x=3 HTTP/1.1\n"
      b"Expect: 100-continue\nContent-Length: 0\n\n")
write("http_request", "conflicting_length", STEP +
      b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n"
      b"Transfer-Encoding: chunked\r\n\r\n")
write("http_response", "ok_length", b"\x00"
      b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
write("http_response", "chunked", b"\x01"
      b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
      b"3\r\nabc\r\n0\r\n\r\n")
write("http_response", "head_no_body", b"\x02"
      b"HTTP/1.0 204 No Content\r\nConnection: close\r\n\r\n")
write("http_response", "until_close", b"\x00"
      b"HTTP/1.1 500 Internal Server Error\r\n\r\nbody until close")
write("http_chunked", "simple", b"\x03" b"5\r\nhello\r\n0\r\n\r\n")
write("http_chunked", "extensions_trailers", b"\x01"
      b"A;name=v\r\n0123456789\r\n1\nx\n0\r\nX-T: 1\r\nY: 2\r\n\r\nNEXT")
write("http_chunked", "big_size", b"\x05" b"ffffffffffffffff\r\n")

# --- base/json.h (also reads testdata/hostile/json, etcd_json).
write("json", "object", '{"a":[1,-2,3.5e10,true,false,null],"b":{"c":"d\\u00e9\\n"}}')
write("json", "numbers", "[0,-0,1e308,-1e-308,18446744073709551615,"
      "-9223372036854775808,0.1,123456789012345678901234567890]")
write("json", "strings", '["\\ud83d\\ude00","\\u0000","\\/",""]')

# --- objects codecs (also objects/testdata, testdata/hostile/json).
write("k8s_json", "pod_special_fields",
      '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",'
      '"creationTimestamp":"2026-11-29T08:37:42Z","labels":{"a":"b"},'
      '"managedFields":[{"manager":"m","fieldsType":"FieldsV1",'
      '"fieldsV1":{"f:spec":{}}}]},"spec":{"containers":[{"name":"c",'
      '"resources":{"limits":{"cpu":"500m","memory":1024}},'
      '"ports":[{"containerPort":80}],"livenessProbe":{"httpGet":'
      '{"port":"http"}}}],"activeDeadlineSeconds":1e3},"x":1,"x":2}')
write("k8s_json", "list_raw",
      '{"apiVersion":"v1","kind":"List","items":[{"kind":"ConfigMap",'
      '"data":{"a":"b"}},[1,[2]],null]}')
write("k8s_json", "secret_bytes",
      '{"kind":"Secret","data":{"k":"aGVsbG8="},"stringData":{"x":"y"}}')

def octal(b):
    return "".join("\\%03o" % x for x in b)
def envelope(api_version, kind, message, text):
    raw = protoc(message, text, ("schemas/k8s/core.proto",))
    return b"k8s\0" + protoc(
        "k8s.io.apimachinery.pkg.runtime.Unknown",
        "typeMeta { apiVersion: '%s' kind: '%s' } raw: '%s'"
        % (api_version, kind, octal(raw)), ("schemas/k8s/runtime.proto",))
# (also objects/testdata/k8s-api/*.pb, Kubernetes' own fixtures)
write("k8s_protobuf", "configmap", envelope(
    "v1", "ConfigMap", "k8s.io.api.core.v1.ConfigMap",
    "metadata { name: 'a' labels { key: 'k' value: 'v' } } "
    "data { key: 'x' value: 'y' } binaryData { key: 'b' value: '\\001' }"))
write("k8s_protobuf", "list_raw", envelope(
    "v1", "List", "k8s.io.api.core.v1.List",
    "items { raw: '{\\\"kind\\\":\\\"Pod\\\",\\\"a\\\":[[1]]}' }"))

# --- YAML (also testdata/hostile/yaml, kubeconfig, examples/manifests).
write("yaml", "anchors_merge",
      "base: &b {a: 1, b: [x, y]}\nderived:\n  <<: *b\n  c: yes\n"
      "list: [*b, *b]\nnum: 0x1F\noct: 0o17\nflt: 1.0\ndate: 2024-01-02\n"
      "null: ~\n\"quoted\": 'it''s'\nblock: |\n  line1\n  line2\n")
write("yaml", "stream", "---\na: 1\n---\n---\n- b\n- !!str 2\n...\n")

# --- patches (body applied to a stored Pod and Deployment).
write("patch", "json_patch",
      '[{"op":"add","path":"/metadata/labels/x","value":"1"},'
      '{"op":"replace","path":"/spec/containers/0/image","value":"i"},'
      '{"op":"copy","from":"/metadata/labels","path":"/metadata/annotations"},'
      '{"op":"move","from":"/spec/containers/1","path":"/spec/containers/0"},'
      '{"op":"test","path":"/metadata/name","value":"web-0"},'
      '{"op":"remove","path":"/spec/tolerations/0"},'
      '{"op":"add","path":"/spec/containers/-","value":{"name":"z"}},'
      '{"op":"add","path":"/metadata/annotations/a~1b~0c","value":"x"}]')
write("patch", "merge", '{"metadata":{"labels":{"app":null,"new":"1"}},'
      '"spec":{"replicas":5,"containers":[{"name":"only"}]}}')
write("patch", "strategic_directives",
      '{"metadata":{"finalizers":["f/2"],"$deleteFromPrimitiveList/finalizers":'
      '["f/1"]},"spec":{"containers":[{"name":"nginx","image":"n:2",'
      '"ports":[{"containerPort":80,"$patch":"delete"}]},{"name":"side",'
      '"$patch":"delete"}],"$setElementOrder/containers":[{"name":"nginx"}],'
      '"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"B",'
      '"value":"2"}]}]}},"strategy":{"$retainKeys":["type"],"type":'
      '"Recreate"}}}')
write("patch", "strategic_replace",
      '{"spec":{"$patch":"replace","containers":[{"name":"n"}]},'
      '"status":{"$patch":"delete"}}')

# --- server-side apply (also testdata/hostile/yaml, examples/manifests).
write("apply", "pod_yaml",
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-0\n  namespace: "
      "default\n  labels: {app: other}\nspec:\n  containers:\n  - name: nginx\n"
      "    image: nginx:1.28\n    ports:\n    - containerPort: 8080\n")
write("apply", "deployment_json",
      '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},'
      '"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":'
      '"nginx","image":"nginx:2"},{"name":"new","image":"b"}]}}}}')
write("apply", "wrong_kind", "apiVersion: v1\nkind: ConfigMap\n")

# --- selectors. Byte 0: 0 label selector, 1 field selector, 2 JSON.
write("selectors", "labels", b"\x00" b"app=web,tier!=db,env in (a,b),!x,"
      b"y notin (c),z,n>3,n<10,k==v")
write("selectors", "labels_set", b"\x00" b"a.b/c-d_e=x.y-z, q in ()")
write("selectors", "fields", b"\x01"
      b"metadata.name=a\\,b,status.phase!=Failed,spec.nodeName==n\\=1")
write("selectors", "json", b"\x02"
      b'{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"k",'
      b'"operator":"In","values":["a","b"]},{"key":"e","operator":"Exists"},'
      b'{"key":"x","operator":"Foo"}]}')

# --- quantities, durations, times.
for i, q in enumerate(["500m", "1.5Gi", "1e3", "-0.5", "9223372036854775807",
                       "100Ei", "0.000000001", "1h30m0.5s", "-1.5h",
                       "2026-11-29T08:37:42.123456789+05:30", "1E-3", "+.5k"]):
    write("quantity", "q%02d" % i, q)

# --- continue tokens (also testdata/hostile/continue_token).
def token(obj):
    return base64.urlsafe_b64encode(
        json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")
write("continue_token", "valid",
      token({"v": "meta.k8s.io/v1", "rv": 42, "start": "default/web\u0000"}))
write("continue_token", "minus_one",
      token({"v": "meta.k8s.io/v1", "rv": -1, "start": "a"}))
write("continue_token", "big_rv",
      token({"v": "meta.k8s.io/v1", "rv": 9223372036854775807, "start": ""}))

# --- etcd JSON API (also testdata/hostile/etcd_json).
write("etcd_json", "range", '{"key":"YQ==","range_end":"Yg==","limit":"10",'
      '"revision":5,"sort_order":"DESCEND","sort_target":"MOD",'
      '"keys_only":true,"count_only":false}')
write("etcd_json", "put", '{"key":"YQ==","value":"Yg==","lease":"123",'
      '"prev_kv":true,"ignore_value":false}')
write("etcd_json", "txn",
      '{"compare":[{"result":"EQUAL","target":"MOD","key":"YQ==",'
      '"mod_revision":"3"},{"target":"VALUE","value":"eA=="}],'
      '"success":[{"request_put":{"key":"YQ==","value":"Yw=="}},'
      '{"request_range":{"key":"YQ=="}}],"failure":[{"request_delete_range":'
      '{"key":"YQ==","prev_kv":true}}]}')
write("etcd_json", "watch_create",
      '{"create_request":{"key":"YQ==","start_revision":"1","progress_notify":'
      'true,"filters":["NOPUT"],"prev_kv":true,"watch_id":7}}')
write("etcd_json", "range_response",
      '{"header":{"cluster_id":"1","member_id":"2","revision":"3",'
      '"raft_term":"4"},"kvs":[{"key":"YQ==","create_revision":"2",'
      '"mod_revision":"3","version":"2","value":"Yg=="}],"count":"1"}')
write("etcd_json", "error", '{"error":"etcdserver: mvcc: required revision '
      'has been compacted","message":"etcdserver: mvcc: required revision has'
      ' been compacted","code":11}')
write("etcd_json_stream", "watch", b"\x04"
      b'{"create_request":{"key":"YQ=="}}\n{"progress_request":{}}'
      b'{"cancel_request":{"watch_id":"1"}}\n')
write("etcd_json_stream", "results", b"\x03"
      b'{"result":{"header":{"revision":"5"},"events":[{"type":"DELETE",'
      b'"kv":{"key":"YQ==","mod_revision":"5"}}]}}\n'
      b'{"result":{"a":"}\\"{"}}\n{"error":{"grpc_code":14,"http_code":503,'
      b'"message":"etcdserver: no leader"}}\n')

# --- WAL segments and raft log records.
def record(rtype, index, payload):
    body = struct.pack("<IBQ", len(payload), rtype, index) + payload
    return struct.pack("<I", crc32c(body)) + body

identity = protoc("storagepb.MemberIdentity",
                  "member_id: 1 cluster_id: 2 name: 'm1'")
hard = protoc("raftpb.HardState", "term: 2 vote: 1 commit: 2")
put = protoc("storagepb.InternalRaftRequest",
             "id: 7 put { key: 'a' value: 'b' }")
entries = [protoc("raftpb.Entry", "Term: 1 Index: %d Data: '%s'" % (
    i, "".join("\\%03o" % b for b in (put if i > 1 else b""))))
    for i in (1, 2, 3)]
snap = protoc("raftpb.SnapshotMetadata",
              "conf_state { voters: 1 } index: 1 term: 1")
segment = (record(4, 0, identity) + record(3, 1, snap) +
           b"".join(record(1, i + 1, e) for i, e in enumerate(entries)) +
           record(2, 0, hard))
write("wal", "segment", b"\x00" + segment)
write("wal", "torn_tail", b"\x00" + segment + record(1, 4, entries[0])[:9])
write("wal", "zero_tail", b"\x00" + segment + b"\x00" * 40)
# Structured (byte 0 odd): [type][index][len][payload] per record.
def structured(recs):
    return b"\x01" + b"".join(bytes([t, i, len(p)]) + p for t, i, p in recs)
write("wal", "records", structured(
    [(4, 0, identity), (3, 1, snap)] +
    [(1, i + 1, e) for i, e in enumerate(entries)] + [(2, 0, hard)]))
overwrite = protoc("raftpb.Entry", "Term: 2 Index: 2")
write("wal", "records_overwrite", structured(
    [(1, i + 1, e) for i, e in enumerate(entries)] + [(1, 2, overwrite),
     (5, 9, protoc("raftpb.SnapshotMetadata", "index: 9 term: 3"))]))

# --- raft messages from peers (one frame's payload).
member = protoc("storagepb.MemberRecord",
                "id: 4 name: 'm4' peer_urls: 'http://127.0.0.1:2380'")
conf = protoc("raftpb.ConfChange", "type: ConfChangeAddNode node_id: 4 "
              "context: '%s'" % octal(member))
write("raft_message", "app", protoc("raftpb.Message",
      "type: MsgApp to: 1 from: 2 term: 3 logTerm: 2 index: 5 commit: 5 "
      "entries { Term: 3 Index: 6 Data: '%s' } "
      "entries { Term: 3 Index: 7 Type: EntryConfChange Data: '%s' }"
      % (octal(put), octal(conf))))
write("raft_message", "prop", protoc("raftpb.Message",
      "type: MsgProp to: 1 from: 2 entries { Data: '%s' }" % octal(put)))
write("raft_message", "heartbeat", protoc("raftpb.Message",
      "type: MsgHeartbeat to: 1 from: 2 term: 3 commit: 4 context: 'x'"))
write("raft_message", "snap", protoc("raftpb.Message",
      "type: MsgSnap to: 1 from: 2 term: 3 snapshot { metadata { "
      "conf_state { voters: 1 voters: 2 learners: 3 } index: 9 term: 3 } }"))
write("raft_message", "hup", protoc("raftpb.Message", "type: MsgHup to: 1"))


# raft_step: a role byte (0 follower of 2 at term 2, 1 leader, 2 candidate,
# 3 pre-candidate), then records of [flags][2-byte length][raftpb.Message].
def raft_steps(role, *msgs):
    out = bytes([role])
    for flags, text in msgs:
        m = protoc("raftpb.Message", text)
        out += bytes([flags]) + struct.pack(">H", len(m)) + m
    return out


write("raft_step", "append", raft_steps(0, (0,
      "type: MsgApp to: 1 from: 2 term: 2 logTerm: 2 index: 8 commit: 9 "
      "entries { Term: 2 Index: 9 }")))
write("raft_step", "vote", raft_steps(0, (1,
      "type: MsgPreVote to: 1 from: 3 term: 3 logTerm: 2 index: 8"), (1,
      "type: MsgVote to: 1 from: 3 term: 3 logTerm: 2 index: 8")))
write("raft_step", "leader-acks", raft_steps(1, (0,
      "type: MsgAppResp to: 1 from: 2 term: 3 index: 9"), (0,
      "type: MsgHeartbeatResp to: 1 from: 3 term: 3")))
# Inputs a review found (2026-12-07), most of them an abort before:
# a heartbeat committing past the log, with no term (read as local) ...
write("raft_step", "heartbeat-commit-past-log", raft_steps(0, (0,
      "type: MsgHeartbeat to: 1 from: 2 commit: 18446744073709551615")))
# ... and with a newer term (the leader steps down first);
write("raft_step", "heartbeat-commit-past-log-leader", raft_steps(1, (0,
      "type: MsgHeartbeat to: 1 from: 2 term: 9 commit: 1000")))
# a read index request without its context entry, to a leader that has
# committed an entry of its term (before that it only queues them);
write("raft_step", "read-index-without-entry", raft_steps(1, (0,
      "type: MsgAppResp to: 1 from: 2 term: 3 index: 9"), (0,
      "type: MsgReadIndex to: 1 from: 2")))
# a request only forwarded to a leader, with a term, to a follower;
write("raft_step", "forwarded-with-term", raft_steps(0, (0,
      "type: MsgReadIndex to: 1 from: 3 term: 2 entries { Data: 'c' }")))
write("raft_step", "transfer-to-a-follower", raft_steps(0, (0,
      "type: MsgTransferLeader to: 1 from: 3 term: 2")))
# (not a crasher: an append over committed entries, which the core answers
# with its commit index);
write("raft_step", "append-over-committed", raft_steps(0, (0,
      "type: MsgApp to: 1 from: 2 term: 2 logTerm: 1 index: 3 commit: 5 "
      "entries { Term: 2 Index: 4 } entries { Term: 2 Index: 5 }")))
# an append whose entries are not contiguous (the Ready loop then spun on
# entries the storage refused);
write("raft_step", "append-with-a-gap", raft_steps(0, (0,
      "type: MsgApp to: 1 from: 2 term: 2 logTerm: 2 index: 8 commit: 5 "
      "entries { Term: 2 Index: 9 } entries { Term: 2 Index: 20 }")))
# a snapshot on the message stream.
write("raft_step", "snapshot-on-the-stream", raft_steps(0, (0,
      "type: MsgSnap to: 1 from: 2 term: 9 snapshot { metadata { index: "
      "4611686018427387904 term: 1 conf_state { voters: 1 } } }")))

# --- snapshot files.
def packed(files):
    out = b"KPSNAP1\n"
    for name, data in files:
        h = protoc("storagepb.SnapshotFile", "name: '%s' size: %d crc32c: %d"
                   % (name, len(data), crc32c(data)))
        out += struct.pack(">I", len(h)) + h + data
    last = protoc("storagepb.SnapshotFile", "last: true")
    return out + struct.pack(">I", len(last)) + last
write("snapshot", "packed", packed([("db/CURRENT", b"MANIFEST-000005\n"),
                                    ("cluster.pb", b"\x08\x01")]))
write("snapshot", "packed_bad_crc",
      packed([("db/x", b"abc")]).replace(b"abc", b"abd"))
# A minimal bbolt file: two meta pages (4 KiB pages), a freelist page and
# an empty root leaf, then etcd's 32-byte sha256 trailer.
PAGE = 4096
def meta(txid):
    m = struct.pack("<IIIIQQQQQ", 0xED0CDAED, 2, PAGE, 0, 3, 0, 2, 4, txid)
    # fnv-1a 64 over the meta up to the checksum.
    h = 0xcbf29ce484222325
    for b in m:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return m + struct.pack("<Q", h)
def page(pid, flags, count, body=b""):
    p = struct.pack("<QHHI", pid, flags, count, 0) + body
    return p + b"\x00" * (PAGE - len(p))
bolt = (page(0, 0x04, 0, meta(1)) + page(1, 0x04, 0, meta(2)) +
        page(2, 0x10, 0) + page(3, 0x02, 0))
write("snapshot", "bolt_empty", bolt + b"\x00" * 32)

# --- kubeconfig (also testdata/hostile/kubeconfig).
write("kubeconfig", "kubeconfig",
      "apiVersion: v1\nkind: Config\ncurrent-context: dev\ncontexts:\n"
      "- name: dev\n  context: {cluster: c, user: u, namespace: team-a}\n"
      "clusters:\n- name: c\n  cluster: {server: '127.0.0.1:6443/'}\n"
      "users:\n- name: u\n  user: {token: abc}\n")
write("kubeconfig", "https", "current-context: x\ncontexts: [{name: x, "
      "context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: "
      "'https://h'}}]\n")

# --- service_account_token: selector byte, then a raw token (even) or
# "<header>\n<claims>" the harness signs (odd). Now is 2026-01-01 (1767225600).
def sa_claims(**extra):
    c = {"aud": ["https://kplane.test"], "exp": 1767229200, "iat": 1767225600,
         "nbf": 1767225600, "iss": "https://kplane.test",
         "sub": "system:serviceaccount:default:builder",
         "kubernetes.io": {"namespace": "default",
                           "serviceaccount": {"name": "builder",
                                              "uid": "u-builder"}}}
    c.update(extra)
    return json.dumps(c, separators=(",", ":"))
RS256 = '{"alg":"RS256","kid":"k"}'
write("service_account_token", "signed_valid", "\x01" + RS256 + "\n" + sa_claims())
write("service_account_token", "signed_bound_pod", "\x01" + RS256 + "\n" + sa_claims(
    **{"kubernetes.io": {"namespace": "default",
                         "serviceaccount": {"name": "builder", "uid": "u-builder"},
                         "pod": {"name": "p", "uid": "b-p"}}}))
write("service_account_token", "signed_expired", "\x01" + RS256 + "\n" + sa_claims(exp=1767000000))
write("service_account_token", "signed_wrong_uid", "\x01" + RS256 + "\n" + sa_claims(
    **{"kubernetes.io": {"namespace": "default",
                         "serviceaccount": {"name": "builder", "uid": "other"}}}))
write("service_account_token", "signed_alg_none", "\x01" + '{"alg":"none"}' + "\n" + sa_claims())
write("service_account_token", "signed_nested", "\x01" + RS256 + "\n" + "[" * 20000)
def b64u(s):
    return base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")
write("service_account_token", "raw_unsigned",
      "\x00" + b64u(RS256) + "." + b64u(sa_claims()) + ".c2ln")
write("service_account_token", "raw_alg_none",
      "\x00" + b64u('{"alg":"none"}') + "." + b64u(sa_claims()) + ".")
write("service_account_token", "raw_not_jwt", "\x00abc.def")


# --- spdy: net/spdy.h's server session (pods/exec from kubectl < 1.30).
# First byte: caps (mode); second: piece size; then SPDY/3 frames as
# kubectl sends them (header blocks through one zlib stream primed with the
# draft's dictionary).
def spdy_dictionary():
    words = ("options head post put delete trace accept accept-charset "
             "accept-encoding accept-language accept-ranges age allow "
             "authorization cache-control connection content-base "
             "content-encoding content-language content-length "
             "content-location content-md5 content-range content-type date "
             "etag expect expires from host if-match if-modified-since "
             "if-none-match if-range if-unmodified-since last-modified "
             "location max-forwards pragma proxy-authenticate "
             "proxy-authorization range referer retry-after server te "
             "trailer transfer-encoding upgrade user-agent vary via warning "
             "www-authenticate method get status").split()
    words += ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie",
              "keep-alive", "origin"]
    d = b"".join(struct.pack(">I", len(w)) + w.encode() for w in words)
    return d + (
        "100101201202205206300302303304305306307402405406407408409410411412"
        "413414415416417502504505203 Non-Authoritative Information204 No "
        "Content301 Moved Permanently400 Bad Request401 Unauthorized403 "
        "Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
        "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov "
        "Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,"
        "image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,"
        "text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdch"
        "charset=utf-8charset=iso-8859-1,utf-,*,enq=0.").encode()


def spdy_seeds():
    import zlib
    comp = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY,
                            spdy_dictionary())

    def control(ftype, flags, payload):
        return struct.pack(">HHI", 0x8003, ftype,
                           (flags << 24) | len(payload)) + payload

    def block(headers):
        raw = struct.pack(">I", len(headers))
        for k, v in headers:
            raw += struct.pack(">I", len(k)) + k + struct.pack(">I", len(v)) + v
        return comp.compress(raw) + comp.flush(zlib.Z_SYNC_FLUSH)

    def syn(sid, stype, flags=0):
        return control(1, flags, struct.pack(">IIBB", sid, 0, 0, 0) +
                       block([(b"streamtype", stype)]))

    def data(sid, payload, fin=False):
        return struct.pack(">II", sid, ((1 if fin else 0) << 24) |
                           len(payload)) + payload

    exec_v4 = (syn(1, b"error") + syn(3, b"stdin") + syn(5, b"stdout") +
               syn(7, b"stderr") + data(3, b"echo hi\n") + data(3, b"", True) +
               control(6, 0, struct.pack(">I", 1)) +
               control(7, 0, struct.pack(">II", 7, 0)))
    write("spdy", "exec_v4", b"\x03\x40" + exec_v4)
    write("spdy", "exec_bytewise", b"\x03\x00" + exec_v4)
    comp = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY,
                            spdy_dictionary())
    tty = (syn(1, b"error") + syn(3, b"stdout") + syn(5, b"resize") +
           data(5, b'{"Width":80,"Height":24}') +
           control(4, 0, struct.pack(">IBBHI", 1, 0, 0, 7, 65536)) +
           control(9, 0, struct.pack(">II", 3, 1024)) +
           control(3, 0, struct.pack(">II", 5, 5)))
    write("spdy", "tty_resize", b"\x0b\x40" + tty)
    comp = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY,
                            spdy_dictionary())
    hostile = (syn(3, b"error") + syn(1, b"stdin") + data(9, b"x") +
               control(10, 0, b"cred"))
    write("spdy", "hostile", b"\x00\x20" + hostile)


spdy_seeds()
# --- unstructured: selector byte (even: one object, odd: a LIST body), then
# the JSON text.
WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget",
          "metadata": {"name": "w1", "namespace": "default",
                       "labels": {"app": "w"}, "resourceVersion": "7"},
          "spec": {"replicas": 3, "suspend": False, "x": {"y": "z"}},
          "data": {"a": "b"}}
write("unstructured", "object", "\x00" + json.dumps(WIDGET))
write("unstructured", "object_wrong_shapes", "\x00" + json.dumps(
    {"apiVersion": 1, "kind": None, "metadata": {"name": 5, "labels": []},
     "spec": "s", "data": {"a": 1}}))
write("unstructured", "object_bad_metadata",
      "\x00" + '{"metadata":{"creationTimestamp":"yesterday"}}')
write("unstructured", "object_escapes",
      "\x00" + '{"metadata":{"name":"a\\u0000b\\ud83d\\ude00"},"s":"\\ude00"}')
write("unstructured", "object_numbers",
      "\x00" + '{"spec":{"replicas":1e400,"n":-0.0,"m":18446744073709551616}}')
write("unstructured", "object_deep", "\x00" + '{"spec":' + "[" * 10001)
write("unstructured", "object_duplicate", "\x00" + '{"a":1,"a":2}')
write("unstructured", "list", "\x01" + json.dumps(
    {"apiVersion": "example.com/v1", "kind": "WidgetList",
     "metadata": {"resourceVersion": "9", "continue": "c",
                  "remainingItemCount": 4},
     "items": [WIDGET, WIDGET]}))
write("unstructured", "list_null_items", "\x01" + '{"items":null}')
write("unstructured", "list_bad_item", "\x01" + '{"items":[1]}')

# --- pod_log_options: selector byte (even: a one-container pod, odd: an
# init container and two containers), then the raw query string.
for name, query in [
        ("plain", ""),
        ("all", "container=app&follow=true&previous=false&timestamps=1"
                "&tailLines=10&limitBytes=500&sinceSeconds=60"),
        ("since_time", "sinceTime=2026-01-02T03:04:05Z"),
        ("since_both", "sinceTime=2026-01-02T03:04:05Z&sinceSeconds=5"),
        ("huge", "tailLines=99999999999999999999&limitBytes=9223372036854775807"),
        ("negative", "tailLines=-1&limitBytes=-5&sinceSeconds=0"),
        ("not_numbers", "tailLines=ten&limitBytes=0x10&sinceSeconds=1e3"),
        ("garbage_time", "sinceTime=yesterday"),
        ("bad_flag", "follow=yes"),
        ("escaped", "container=side%20car&tailLines=%2B5"),
        ("repeated", "tailLines=1&tailLines=-1"),
        ("unknown", "insecureSkipTLSVerifyBackend=true&x=y")]:
    write("pod_log_options", name, "\x00" + query)
write("pod_log_options", "several_no_container", "\x01tailLines=1")
write("pod_log_options", "several_init", "\x01container=init")


# --- etcd_jwt: selector byte mod 3: 0 a raw token, 1 "<header>\n<claims>"
# the harness signs (HS256), 2 an --auth-token value (files ec, pub, secret).
# Now is 2026-01-01 (1767225600).
def jwt_b64u(s):
    return base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")
JWT_HS = '{"alg":"HS256","typ":"JWT"}'
JWT_CLAIMS = '{"exp":1767229200,"revision":3,"username":"alice"}'
write("etcd_jwt", "raw_alg_none",
      "\x00" + jwt_b64u('{"alg":"none"}') + "." + jwt_b64u(JWT_CLAIMS) + ".")
write("etcd_jwt", "raw_unsigned",
      "\x00" + jwt_b64u(JWT_HS) + "." + jwt_b64u(JWT_CLAIMS) + ".c2ln")
write("etcd_jwt", "raw_padded",
      "\x00" + jwt_b64u(JWT_HS) + "=." + jwt_b64u(JWT_CLAIMS) + ".c2ln")
write("etcd_jwt", "raw_simple_token", "\x00abcdefghijklmnop.42")
write("etcd_jwt", "signed_valid", "\x01" + JWT_HS + "\n" + JWT_CLAIMS)
write("etcd_jwt", "signed_expired", "\x01" + JWT_HS + "\n" +
      '{"exp":1767000000,"revision":3,"username":"alice"}')
write("etcd_jwt", "signed_no_exp", "\x01" + JWT_HS + "\n" +
      '{"revision":3,"username":"alice"}')
write("etcd_jwt", "signed_float_claims", "\x01" + JWT_HS + "\n" +
      '{"exp":1.8e9,"revision":3.0,"username":"alice","nbf":1.7e9}')
write("etcd_jwt", "signed_huge_numbers", "\x01" + JWT_HS + "\n" +
      '{"exp":1e308,"revision":-1e308,"username":"a","nbf":-9e18}')
write("etcd_jwt", "signed_alg_none", "\x01" + '{"alg":"none"}' + "\n" + JWT_CLAIMS)
write("etcd_jwt", "signed_crit", "\x01" +
      '{"alg":"HS256","crit":["exp"]}' + "\n" + JWT_CLAIMS)
write("etcd_jwt", "signed_nested", "\x01" + JWT_HS + "\n" + "[" * 20000)
write("etcd_jwt", "option_es256", "\x02jwt,priv-key=ec,pub-key=pub,sign-method=ES256,ttl=1m")
write("etcd_jwt", "option_verify_only", "\x02jwt,pub-key=pub,sign-method=ES256")
write("etcd_jwt", "option_hs512", "\x02jwt,priv-key=secret,sign-method=HS512,ttl=1ns")
write("etcd_jwt", "option_huge_ttl", "\x02jwt,priv-key=secret,sign-method=HS256,ttl=2562047h")
write("etcd_jwt", "option_bad", "\x02jwt,priv-key=ec,sign-method=RS256,ttl=x,=,,")
write("etcd_jwt", "option_simple", "\x02simple")
