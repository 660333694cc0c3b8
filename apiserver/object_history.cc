#include "apiserver/object_history.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>

#include "apiserver/encoding.h"
#include "base/strings.h"

namespace kplane::apiserver {

StatusOr<ObjectHistory> ReadObjectHistory(const ObjectStore& store,
                                          std::string_view ns,
                                          std::string_view name,
                                          int max_versions) {
  max_versions = std::clamp(max_versions, 1, kMaxHistoryVersions);
  ObjectHistory h;
  h.key = store.Key(ns, name);
  int64_t at = 0;  // the newest first
  while (true) {
    etcdserverpb::RangeRequest req;
    req.set_key(h.key);
    req.set_revision(at);
    StatusOr<etcdserverpb::RangeResponse> resp = store.kv()->Range(req);
    if (!resp.ok() && resp.status().Is(StatusCode::kCompacted) &&
        !h.versions.empty()) {
      h.end = ObjectHistory::End::kCompacted;
      h.compact_revision = resp.status().detail();
      return h;
    }
    if (!resp.ok()) return resp.status();
    if (at == 0) h.read_revision = resp->header().revision();
    if (resp->kvs_size() == 0) {
      // Only possible for the first read: a key that exists at mod_revision
      // with version > 1 existed at every revision since its creation.
      return NotFoundError(store.resource().GroupResource() + " " +
                           GoQuote(name) + " not found");
    }
    const mvccpb::KeyValue& kv = resp->kvs(0);
    ObjectVersion v{.revision = kv.mod_revision(), .version = kv.version()};
    StatusOr<MutableObject> obj =
        store.Decode(kv.key(), kv.value(), kv.mod_revision());
    if (obj.ok()) {
      v.object = std::move(*obj);
    } else {
      v.error = obj.status().ToString();
    }
    h.versions.push_back(std::move(v));
    h.create_revision = kv.create_revision();
    if (kv.mod_revision() <= kv.create_revision()) {
      h.end = ObjectHistory::End::kCreated;
      return h;
    }
    if (static_cast<int>(h.versions.size()) >= max_versions) {
      h.end = ObjectHistory::End::kLimit;
      return h;
    }
    at = kv.mod_revision() - 1;
  }
}

std::string ObjectHistoryJson(const ObjectHistory& history) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("key");
  w.String(history.key.data(), history.key.size());
  w.Key("createRevision");
  w.Int64(history.create_revision);
  w.Key("readRevision");
  w.Int64(history.read_revision);
  w.Key("end");
  switch (history.end) {
    case ObjectHistory::End::kCreated:
      w.String("created");
      break;
    case ObjectHistory::End::kCompacted:
      w.String("compacted");
      w.Key("compactRevision");
      w.Int64(history.compact_revision);
      break;
    case ObjectHistory::End::kLimit:
      w.String("limit");
      break;
  }
  w.Key("versions");
  w.StartArray();
  for (const ObjectVersion& v : history.versions) {
    w.StartObject();
    w.Key("revision");
    w.Int64(v.revision);
    w.Key("version");
    w.Int64(v.version);
    if (v.object != nullptr) {
      const std::string json = RenderObject(RenderOptions{}, *v.object);
      w.Key("object");
      w.RawValue(json.data(), json.size(), rapidjson::kObjectType);
    } else {
      w.Key("error");
      w.String(v.error.data(), v.error.size());
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return buf.GetString();
}

}  // namespace kplane::apiserver
