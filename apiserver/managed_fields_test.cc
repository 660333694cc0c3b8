// TrackManagedFields' fast path (TrackOwnedValueChanges) against its general
// path through JSON: wherever the fast path answers, both give the same
// object; where ownership or the shape changes it must not answer.
// And writes that change nothing (kube's managedFieldsUpdater): no entry's
// time moves, so the store writes nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apiserver/node_lease_testing.h"
#include "apiserver/patching.h"
#include "apiserver/test_server.h"
#include "base/json.h"
#include "objects/codec.h"
#include "objects/patch/apply.h"
#include "objects/scheme.h"
#include "objects/time.h"
#include "objects/types.h"

namespace kplane::apiserver {
namespace {

using objects::coordinationv1::Lease;
using objects::corev1::Node;
using testing::NodeLease;

const objects::KindInfo& KindOf(const google::protobuf::Message& m) {
  const objects::KindInfo* k =
      objects::Scheme::Default().KindFor(m.GetDescriptor());
  EXPECT_NE(k, nullptr);
  return *k;
}

// What the API server stores after `manager` creates `l`.
template <typename T>
T Created(T l, const std::string& manager) {
  EXPECT_TRUE(TrackManagedFields(nullptr, &l, KindOf(l), manager,
                                 "2026-12-04T01:00:00Z", {})
                  .ok());
  EXPECT_GT(l.metadata().managedfields_size(), 0);
  return l;
}

struct Outcome {
  bool fast = false;
  std::string through_json;  // serialized result of the general path
  std::string result;        // serialized result of TrackManagedFields
};

// Runs `manager`'s update of `stored` to `want` both ways.
template <typename T>
Outcome Update(const T& stored, const T& want, const std::string& manager,
               const std::vector<std::vector<std::string>>& ignored = {}) {
  const std::string time = "2026-12-04T01:00:10Z";
  Outcome out;
  T fast = want;
  out.fast = TrackOwnedValueChanges(&stored, &fast, KindOf(want), manager, time,
                                    ignored);
  if (!out.fast) {
    EXPECT_EQ(fast.SerializeAsString(), want.SerializeAsString())
        << "a fast path that gives up leaves the object alone";
  }
  T general = want;
  EXPECT_TRUE(TrackManagedFieldsThroughJson(&stored, &general, KindOf(want),
                                            manager, time, ignored)
                  .ok());
  out.through_json = general.SerializeAsString();
  T tracked = want;
  EXPECT_TRUE(TrackManagedFields(&stored, &tracked, KindOf(want), manager, time,
                                 ignored)
                  .ok());
  out.result = tracked.SerializeAsString();
  EXPECT_EQ(out.result, out.through_json);
  return out;
}

TEST(ManagedFieldsFastPathTest, LeaseRenewalByItsOwnerIsFastAndTheSame) {
  const Lease stored = Created(NodeLease(1000), "kubelet");
  Outcome o = Update(stored, NodeLease(1010), "kubelet");
  EXPECT_TRUE(o.fast);
  Lease got;
  ASSERT_TRUE(got.ParseFromString(o.result));
  ASSERT_EQ(got.metadata().managedfields_size(), 1);
  EXPECT_EQ(got.metadata().managedfields(0).time().seconds(),
            objects::ParseRfc3339("2026-12-04T01:00:10Z")->seconds);
  // The client may also send the stored managedFields back unchanged.
  Lease with_fields = NodeLease(1020);
  *with_fields.mutable_metadata()->mutable_managedfields() =
      stored.metadata().managedfields();
  EXPECT_TRUE(Update(stored, with_fields, "kubelet").fast);
  // A no-op update leaves the writer's entry (and its time) as it was.
  Outcome noop = Update(stored, NodeLease(1000), "kubelet");
  EXPECT_TRUE(noop.fast);
  ASSERT_TRUE(got.ParseFromString(noop.result));
  ASSERT_EQ(got.metadata().managedfields_size(), 1);
  EXPECT_EQ(got.metadata().managedfields(0).SerializeAsString(),
            stored.metadata().managedfields(0).SerializeAsString());
  // So does another writer's: no entry is added for it.
  Outcome other = Update(stored, NodeLease(1000), "intruder");
  EXPECT_TRUE(other.fast);
  ASSERT_TRUE(got.ParseFromString(other.result));
  EXPECT_EQ(got.metadata().SerializeAsString(),
            stored.metadata().SerializeAsString());
}

// Every node's Lease is owned by its own Node, so each kubelet entry's
// fieldsV1 names a different owner uid: all of them take the fast path.
TEST(ManagedFieldsFastPathTest, LeasesOwnedByTheirOwnNodesTakeTheFastPath) {
  for (int i = 0; i < 100; ++i) {
    Lease lease = NodeLease(1000);
    lease.mutable_metadata()->set_name("node-" + std::to_string(i));
    lease.mutable_metadata()->mutable_ownerreferences(0)->set_uid(
        "node-uid-" + std::to_string(i));
    const Lease stored = Created(lease, "kubelet");
    ASSERT_NE(stored.metadata().managedfields(0).fieldsv1().raw().find(
                  "node-uid-" + std::to_string(i)),
              std::string::npos);
    Lease renewed = lease;
    objects::SetMicroTime(renewed.mutable_spec()->mutable_renewtime(), 1020 + i,
                          0);
    ASSERT_TRUE(Update(stored, renewed, "kubelet").fast) << i;
  }
}

// An entry whose fieldsV1 is not what the JSON round trip writes (here a
// space) is left to the general path, which rewrites it; the cached verdict
// says the same on the second try.
TEST(ManagedFieldsFastPathTest, NonCanonicalFieldsV1TakesTheGeneralPath) {
  Lease stored = Created(NodeLease(1000), "kubelet");
  std::string* raw = stored.mutable_metadata()
                         ->mutable_managedfields(0)
                         ->mutable_fieldsv1()
                         ->mutable_raw();
  ASSERT_EQ(raw->substr(0, 2), "{\"");
  raw->insert(1, " ");
  for (int round = 0; round < 2; ++round) {
    Outcome o = Update(stored, NodeLease(1010 + round), "kubelet");
    EXPECT_FALSE(o.fast) << round;
    Lease got;
    ASSERT_TRUE(got.ParseFromString(o.result));
    ASSERT_EQ(got.metadata().managedfields_size(), 1);
    EXPECT_EQ(got.metadata().managedfields(0).fieldsv1().raw().substr(0, 2),
              "{\"");
  }
}

// The reference: what the general path makes of fieldsV1 bytes (parse,
// field set, and the JSON round trip that writes them back), as the fast
// path decided before it read them in one pass. Nullopt unless the round
// trip gives the same bytes.
std::optional<patch::FieldSet> ThroughJson(const std::string& raw) {
  rapidjson::Document parsed;
  if (!json::ParseDom(raw, &parsed).ok()) return std::nullopt;
  StatusOr<patch::FieldSet> fields = patch::FieldSet::FromJson(parsed);
  if (!fields.ok()) return std::nullopt;
  rapidjson::Document scratch;
  auto& alloc = scratch.GetAllocator();
  scratch.SetObject();
  scratch.AddMember("fieldsV1", fields->ToJson(alloc), alloc);
  objects::metav1::ManagedFieldsEntry round_trip;
  if (!objects::DecodeJsonValue(scratch, &round_trip).ok() ||
      round_trip.fieldsv1().raw() != raw) {
    return std::nullopt;
  }
  return *std::move(fields);
}

// A random field set: keys of the four kinds, with quotes, backslashes and
// other characters inside; members and children at any level.
patch::FieldSet RandomFieldSet(std::mt19937& rng, int depth) {
  patch::FieldSet f;
  const int n = depth >= 4 ? 0 : static_cast<int>(rng() % 4);
  static const std::vector<std::string> kPieces = {
      "a", "spec", "uid", "\"", "\\", "{", "}", ":", ",", ".", " ", "/", "\t"};
  for (int i = 0; i < n; ++i) {
    std::string key = std::string(1, "fkvi"[rng() % 4]) + ":";
    for (int j = static_cast<int>(rng() % 4); j >= 0; --j) {
      key += kPieces[rng() % kPieces.size()];
    }
    f.children[key] = RandomFieldSet(rng, depth + 1);
  }
  f.member = f.children.empty() || rng() % 3 == 0;
  return f;
}

// ParseCanonicalFieldsV1 accepts exactly what the round trip writes, and
// reads it as the general path does: every canonical encoding of random
// field sets, and random damage to them (a byte changed, dropped or
// doubled, whitespace, keys swapped), wherever it accepts, agree with the
// JSON round trip.
TEST(ManagedFieldsFastPathTest, CanonicalFieldsV1ReaderAgreesWithTheRoundTrip) {
  std::mt19937 rng(11);
  int canonical = 0, accepted_damaged = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    patch::FieldSet set = RandomFieldSet(rng, 0);
    rapidjson::Document scratch;
    auto& alloc = scratch.GetAllocator();
    scratch.SetObject();
    scratch.AddMember("fieldsV1", set.ToJson(alloc), alloc);
    objects::metav1::ManagedFieldsEntry entry;
    ASSERT_TRUE(objects::DecodeJsonValue(scratch, &entry).ok());
    const std::string raw = entry.fieldsv1().raw();
    std::optional<patch::FieldSet> reference = ThroughJson(raw);
    std::optional<patch::FieldSet> fast = ParseCanonicalFieldsV1(raw);
    ASSERT_TRUE(reference.has_value()) << raw;
    // The reader refuses escapes other than \" and \\ (a tab here):
    // the general path is taken, as for any bytes it does not read.
    if (raw.find("\\t") == std::string::npos) {
      ASSERT_TRUE(fast.has_value()) << raw;
      EXPECT_TRUE(*fast == *reference) << raw;
      ++canonical;
    }
    for (int d = 0; d < 8; ++d) {
      std::string damaged = raw;
      const size_t at = rng() % damaged.size();
      switch (rng() % 4) {
        case 0:
          damaged[at] = "{}\":,. \\fkvi"[rng() % 13];
          break;
        case 1:
          damaged.erase(at, 1);
          break;
        case 2:
          damaged.insert(at, 1, damaged[at]);
          break;
        default:
          damaged.insert(at, " ");
      }
      std::optional<patch::FieldSet> f = ParseCanonicalFieldsV1(damaged);
      if (!f.has_value()) {
        ++refused;
        continue;
      }
      ++accepted_damaged;
      std::optional<patch::FieldSet> r = ThroughJson(damaged);
      ASSERT_TRUE(r.has_value()) << damaged;
      EXPECT_TRUE(*f == *r) << damaged;
    }
  }
  EXPECT_GT(canonical, 1000);
  EXPECT_GT(refused, 1000);
  RecordProperty("accepted_damaged", accepted_damaged);
  // Out of order, duplicated and lone "." keys are not what the writer
  // writes.
  EXPECT_FALSE(ParseCanonicalFieldsV1(R"({"f:b":{},"f:a":{}})"));
  EXPECT_FALSE(ParseCanonicalFieldsV1(R"({"f:a":{},"f:a":{}})"));
  EXPECT_FALSE(ParseCanonicalFieldsV1(R"({".":{}})"));
  EXPECT_FALSE(ParseCanonicalFieldsV1(R"({"f:a":{},".":{}})"));
  EXPECT_FALSE(ParseCanonicalFieldsV1(R"({"x:a":{}})"));
  EXPECT_TRUE(ParseCanonicalFieldsV1(R"({".":{},"f:a":{}})"));
  // Deep nesting is refused, not recursed into.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{\"f:a\":";
  deep += "{}";
  for (int i = 0; i < 100000; ++i) deep += "}";
  EXPECT_FALSE(ParseCanonicalFieldsV1(deep));
}

TEST(ManagedFieldsFastPathTest, AnotherWriterTakesOwnershipTheGeneralWay) {
  const Lease stored = Created(NodeLease(1000), "kubelet");
  Outcome o = Update(stored, NodeLease(1010), "intruder");
  EXPECT_FALSE(o.fast);
  Lease got;
  ASSERT_TRUE(got.ParseFromString(o.result));
  ASSERT_EQ(got.metadata().managedfields_size(), 2);
  EXPECT_EQ(got.metadata().managedfields(1).manager(), "intruder");
  EXPECT_NE(got.metadata().managedfields(1).fieldsv1().raw().find("renewTime"),
            std::string::npos);
}

TEST(ManagedFieldsFastPathTest, SharedOwnershipIsLeftToTheGeneralPath) {
  Lease stored = Created(NodeLease(1000), "kubelet");
  // "tuner" changes the duration: it owns spec.leaseDurationSeconds now.
  Lease tuned = NodeLease(1000);
  tuned.mutable_spec()->set_leasedurationseconds(60);
  Outcome t = Update(stored, tuned, "tuner");
  EXPECT_FALSE(t.fast);
  ASSERT_TRUE(stored.ParseFromString(t.result));
  ASSERT_EQ(stored.metadata().managedfields_size(), 2);
  // The kubelet renewing what it alone owns: fast, the tuner's entry kept.
  Lease renewal = NodeLease(1010);
  renewal.mutable_spec()->set_leasedurationseconds(60);
  EXPECT_TRUE(Update(stored, renewal, "kubelet").fast);
  // The kubelet setting the duration back takes it from the tuner.
  Lease back = NodeLease(1010);
  Outcome b = Update(stored, back, "kubelet");
  EXPECT_FALSE(b.fast);
  Lease got;
  ASSERT_TRUE(got.ParseFromString(b.result));
  EXPECT_EQ(got.metadata().managedfields_size(), 1);  // the tuner owns nothing
}

TEST(ManagedFieldsFastPathTest, ShapeChangesTakeTheGeneralPath) {
  const Lease stored = Created(NodeLease(1000), "kubelet");
  Lease added = NodeLease(1010);
  added.mutable_spec()->set_leasetransitions(1);  // a new member
  EXPECT_FALSE(Update(stored, added, "kubelet").fast);
  Lease removed = NodeLease(1010);
  removed.mutable_spec()->clear_holderidentity();  // a member gone
  EXPECT_FALSE(Update(stored, removed, "kubelet").fast);
  Lease list = NodeLease(1010);
  list.mutable_metadata()->mutable_ownerreferences(0)->set_uid("other");
  EXPECT_FALSE(Update(stored, list, "kubelet").fast);
  Lease labels = NodeLease(1010);
  (*labels.mutable_metadata()->mutable_labels())["a"] = "b";
  EXPECT_FALSE(Update(stored, labels, "kubelet").fast);
  // Fields never tracked may change freely.
  Lease rv = NodeLease(1010);
  rv.mutable_metadata()->set_resourceversion("99");
  EXPECT_TRUE(Update(stored, rv, "kubelet").fast);
}

TEST(ManagedFieldsFastPathTest, IgnoredStatusOfANode) {
  Node n;
  n.mutable_metadata()->set_name("node-1");
  (*n.mutable_metadata()->mutable_labels())["zone"] = "a";
  n.mutable_spec()->set_podcidr("10.0.0.0/24");
  n.mutable_status()->mutable_nodeinfo()->set_kubeletversion("v1");
  const std::vector<std::vector<std::string>> status = {{"f:status"}};
  Node stored = n;
  ASSERT_TRUE(TrackManagedFields(nullptr, &stored, KindOf(n), "kubelet",
                                 "2026-12-04T01:00:00Z", status)
                  .ok());
  // A status change through the main resource is not tracked there.
  Node want = n;
  want.mutable_status()->mutable_nodeinfo()->set_kubeletversion("v2");
  EXPECT_TRUE(Update(stored, want, "kubelet", status).fast);
  // Another writer changing the pod CIDR takes it.
  Node cidr = n;
  cidr.mutable_spec()->set_podcidr("10.0.1.0/24");
  EXPECT_FALSE(Update(stored, cidr, "ipam", status).fast);
}

// A write through /status is the writer's entry with subresource "status"
// (kube's manager identifier holds the subresource), apart from its entry
// for the main resource, on the fast path as on the general one.
TEST(ManagedFieldsFastPathTest, StatusWritesAreTheirOwnEntry) {
  const std::string time = "2026-12-04T01:00:10Z";
  Node n;
  n.mutable_metadata()->set_name("node-1");
  (*n.mutable_metadata()->mutable_labels())["zone"] = "a";
  n.mutable_status()->mutable_nodeinfo()->set_kubeletversion("v1");
  Node stored = n;
  ASSERT_TRUE(TrackManagedFields(nullptr, &stored, KindOf(n), "kubelet",
                                 "2026-12-04T01:00:00Z", {{"f:status"}})
                  .ok());
  ASSERT_EQ(stored.metadata().managedfields_size(), 1);
  const std::string main_entry =
      stored.metadata().managedfields(0).SerializeAsString();
  // kubelet's first status write: a new entry, the main one as it was.
  Node v2 = stored;
  v2.mutable_status()->mutable_nodeinfo()->set_kubeletversion("v2");
  ASSERT_TRUE(
      TrackManagedFields(&stored, &v2, KindOf(n), "kubelet", time, {}, "status")
          .ok());
  ASSERT_EQ(v2.metadata().managedfields_size(), 2);
  EXPECT_EQ(v2.metadata().managedfields(0).SerializeAsString(), main_entry);
  const objects::metav1::ManagedFieldsEntry& st =
      v2.metadata().managedfields(1);
  EXPECT_EQ(st.manager(), "kubelet");
  EXPECT_EQ(st.operation(), "Update");
  EXPECT_EQ(st.subresource(), "status");
  EXPECT_EQ(st.fieldsv1().raw(),
            R"({"f:status":{"f:nodeInfo":{"f:kubeletVersion":{}}}})");
  // The next one changes a value the /status entry owns: the fast path,
  // with the general path's result; the main entry is no writer of it.
  Node v3 = v2;
  v3.mutable_status()->mutable_nodeinfo()->set_kubeletversion("v3");
  Node fast = v3;
  EXPECT_TRUE(TrackOwnedValueChanges(&v2, &fast, KindOf(n), "kubelet",
                                     "2026-12-04T01:00:20Z", {}, "status"));
  Node general = v3;
  ASSERT_TRUE(TrackManagedFieldsThroughJson(&v2, &general, KindOf(n), "kubelet",
                                            "2026-12-04T01:00:20Z", {},
                                            "status")
                  .ok());
  EXPECT_EQ(fast.SerializeAsString(), general.SerializeAsString());
  ASSERT_EQ(general.metadata().managedfields_size(), 2);
  EXPECT_EQ(general.metadata().managedfields(0).SerializeAsString(),
            main_entry);
  EXPECT_EQ(general.metadata().managedfields(1).subresource(), "status");
  Node main_write = v3;
  EXPECT_FALSE(TrackOwnedValueChanges(&v2, &main_write, KindOf(n), "kubelet",
                                      "2026-12-04T01:00:20Z", {}));
}

// A writer without a manager (no fieldManager, no User-Agent: kpctl bench,
// a bare HTTP client) over an object nobody tracks: no JSON round trip, and
// the general path's result (the object as sent).
TEST(ManagedFieldsFastPathTest, WriterWithoutManagerOverUntrackedIsFast) {
  const std::string time = "2026-12-04T01:00:10Z";
  auto both_ways = [&](const Lease* old, const Lease& want) {
    Lease fast = want;
    const bool answered = TrackWithoutManager(old, &fast, "");
    Lease general = want;
    EXPECT_TRUE(
        TrackManagedFieldsThroughJson(old, &general, KindOf(want), "", time, {})
            .ok());
    Lease tracked = want;
    EXPECT_TRUE(
        TrackManagedFields(old, &tracked, KindOf(want), "", time, {}).ok());
    EXPECT_EQ(tracked.SerializeAsString(), general.SerializeAsString());
    if (answered) {
      EXPECT_EQ(fast.SerializeAsString(), general.SerializeAsString());
    } else {
      EXPECT_EQ(fast.SerializeAsString(), want.SerializeAsString())
          << "a fast path that gives up leaves the object alone";
    }
    return answered;
  };
  // A create, and an update of what it stored.
  EXPECT_TRUE(both_ways(nullptr, NodeLease(1000)));
  const Lease untracked = NodeLease(1000);
  EXPECT_TRUE(both_ways(&untracked, NodeLease(1010)));
  // Entries the client sends are the starting point: the general path.
  Lease with_fields = NodeLease(1010);
  *with_fields.mutable_metadata()->mutable_managedfields() =
      Created(NodeLease(1000), "kubelet").metadata().managedfields();
  EXPECT_FALSE(both_ways(&untracked, with_fields));
  EXPECT_FALSE(both_ways(nullptr, with_fields));
  // Over a tracked object the stored entries are kept: the general path.
  const Lease tracked = Created(NodeLease(1000), "kubelet");
  EXPECT_FALSE(both_ways(&tracked, NodeLease(1010)));
  Lease kept = NodeLease(1010);
  ASSERT_TRUE(
      TrackManagedFields(&tracked, &kept, KindOf(kept), "", time, {}).ok());
  EXPECT_EQ(kept.metadata().managedfields_size(), 1);
  // A writer with a manager is never this case.
  Lease named = NodeLease(1010);
  EXPECT_FALSE(TrackWithoutManager(&untracked, &named, "kubelet"));
}

// The patch library alone: an apply or an update that changes no value
// keeps every entry's time (kube: Updater.Apply returns no object, and the
// "current-operation" set of an update is empty).
TEST(ManagedFieldsNoOpTest, ApplyAndUpdateWithoutChangeKeepTheTime) {
  rapidjson::Document doc;
  auto& alloc = doc.GetAllocator();
  auto parse = [&](const char* j) {
    rapidjson::Document d;
    d.Parse(j);
    EXPECT_FALSE(d.HasParseError()) << j;
    return rapidjson::Value(d, alloc);
  };
  auto times = [](const rapidjson::Value& obj) {
    std::string out;
    StatusOr<std::vector<patch::ManagedFieldsEntry>> entries =
        patch::ReadManagedFields(obj);
    EXPECT_TRUE(entries.ok());
    for (const patch::ManagedFieldsEntry& e : *entries) {
      out += e.manager + "/" + e.operation + "@" + e.time + ";";
    }
    return out;
  };
  const rapidjson::Value config =
      parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},)"
            R"("data":{"a":"1"}})");
  patch::ApplyOptions opts;
  opts.manager = "m";
  opts.api_version = "v1";
  opts.time = "2026-12-04T01:00:00Z";
  std::vector<patch::FieldConflict> conflicts;
  rapidjson::Value live;
  ASSERT_TRUE(
      patch::ServerSideApply(nullptr, config, opts, &live, alloc, &conflicts)
          .ok());
  opts.time = "2026-12-04T01:00:02Z";
  rapidjson::Value again;
  ASSERT_TRUE(
      patch::ServerSideApply(&live, config, opts, &again, alloc, &conflicts)
          .ok());
  EXPECT_EQ(times(again), "m/Apply@2026-12-04T01:00:00Z;");
  EXPECT_TRUE(again == live);
  // An update by the applier's name, then by another, changing nothing.
  for (const char* manager : {"m", "other"}) {
    opts.manager = manager;
    rapidjson::Value updated(live, alloc);
    ASSERT_TRUE(patch::UpdateManagedFields(&live, updated, opts, alloc).ok());
    EXPECT_EQ(times(updated), "m/Apply@2026-12-04T01:00:00Z;") << manager;
  }
  // A change stamps the writer's entry with the new time.
  opts.manager = "m";
  const rapidjson::Value changed =
      parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},)"
            R"("data":{"a":"2"}})");
  rapidjson::Value applied;
  ASSERT_TRUE(
      patch::ServerSideApply(&live, changed, opts, &applied, alloc, &conflicts)
          .ok());
  EXPECT_EQ(times(applied), "m/Apply@2026-12-04T01:00:02Z;");
  rapidjson::Value updated(changed, alloc);
  ASSERT_TRUE(patch::UpdateManagedFields(&live, updated, opts, alloc).ok());
  // (The applier owned only data.a: its entry is left empty and dropped.)
  EXPECT_EQ(times(updated), "m/Update@2026-12-04T01:00:02Z;");
}

using testing::Response;
using testing::SkewedClock;
using testing::TestServer;

constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";

// Writes through a real ApiServer that change nothing: kube-apiserver
// leaves managedFields as they were, and its GuaranteedUpdate then finds
// the same bytes and writes nothing (resourceVersion kept, no watch event).
class NoOpWriteTest : public ::testing::Test {
 protected:
  NoOpWriteTest()
      : server_([this](ApiServerOptions* o) { o->clock = &clock_; }) {}

  static std::string Url(const std::string& name, const std::string& query) {
    return std::string(kConfigMaps) + "/" + name + query;
  }
  static std::string ConfigMap(const std::string& name,
                               const std::string& data) {
    return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" +
           name + R"("},"data":)" + data + "}";
  }
  Response Apply(const std::string& name, const std::string& data,
                 const std::string& manager) {
    return server_.Patch(Url(name, "?fieldManager=" + manager),
                         ConfigMap(name, data), "application/apply-patch+yaml");
  }
  Response MergePatch(const std::string& name, const std::string& patch,
                      const std::string& manager) {
    return server_.Patch(Url(name, "?fieldManager=" + manager), patch,
                         "application/merge-patch+json");
  }
  // "manager/operation@time;" of each entry ("@-" without a time).
  static std::string Entries(const Response& r) {
    std::string out;
    const rapidjson::Value* mf = r.At({"metadata", "managedFields"});
    if (mf == nullptr || !mf->IsArray()) return out;
    for (const rapidjson::Value& e : mf->GetArray()) {
      auto str = [&](const char* k) -> std::string {
        return e.HasMember(k) && e[k].IsString() ? e[k].GetString() : "-";
      };
      out += str("manager") + "/" + str("operation") + "@" + str("time") + ";";
    }
    return out;
  }
  static std::string Rv(const Response& r) {
    return r.Str({"metadata", "resourceVersion"});
  }
  // Asserts the stored object is still `before` (same resourceVersion,
  // same managedFields).
  void ExpectStored(const std::string& name, const Response& before) {
    Response got = server_.Get(Url(name, ""));
    ASSERT_EQ(got.code, 200) << got.body;
    EXPECT_EQ(Rv(got), Rv(before));
    EXPECT_EQ(Entries(got), Entries(before));
  }

  SkewedClock clock_;
  TestServer server_;
};

TEST_F(NoOpWriteTest, RepeatedApplyWritesNothing) {
  Response first = Apply("x", R"({"a":"1"})", "m");
  ASSERT_EQ(first.code, 201) << first.body;
  clock_.Skip(seconds(2));
  Response second = Apply("x", R"({"a":"1"})", "m");
  ASSERT_EQ(second.code, 200) << second.body;
  EXPECT_EQ(Rv(second), Rv(first));
  EXPECT_EQ(Entries(second), Entries(first));
  ExpectStored("x", first);
  // A change still moves the applier's time.
  clock_.Skip(seconds(2));
  Response changed = Apply("x", R"({"a":"2"})", "m");
  ASSERT_EQ(changed.code, 200) << changed.body;
  EXPECT_NE(Rv(changed), Rv(first));
  EXPECT_NE(Entries(changed), Entries(first));
  EXPECT_EQ(Entries(changed).rfind("m/Apply@", 0), 0u) << Entries(changed);
}

TEST_F(NoOpWriteTest, RepeatedMergePatchWritesNothingAndFiresNoEvent) {
  ASSERT_EQ(Apply("x", R"({"p":"1"})", "m").code, 201);
  Response patched = MergePatch("x", R"({"data":{"p":"2"}})", "upd");
  ASSERT_EQ(patched.code, 200) << patched.body;
  std::unique_ptr<testing::WatchStream> watch = server_.Watch(
      std::string(kConfigMaps) + "?watch=1&resourceVersion=" + Rv(patched));
  clock_.Skip(seconds(2));
  Response again = MergePatch("x", R"({"data":{"p":"2"}})", "upd");
  ASSERT_EQ(again.code, 200) << again.body;
  EXPECT_EQ(Rv(again), Rv(patched));
  EXPECT_EQ(Entries(again), Entries(patched));
  ExpectStored("x", patched);
  // A change moves the patcher's time; it is the first event the watch sees.
  clock_.Skip(seconds(2));
  Response changed = MergePatch("x", R"({"data":{"p":"3"}})", "upd");
  ASSERT_EQ(changed.code, 200) << changed.body;
  EXPECT_NE(Rv(changed), Rv(patched));
  EXPECT_NE(Entries(changed), Entries(patched));
  rapidjson::Document event = watch->NextJson();
  ASSERT_TRUE(event.IsObject());
  EXPECT_STREQ(event["type"].GetString(), "MODIFIED");
  EXPECT_STREQ(event["object"]["metadata"]["resourceVersion"].GetString(),
               Rv(changed).c_str());
}

TEST_F(NoOpWriteTest, IdenticalReplaceWritesNothing) {
  Response created = server_.Post(std::string(kConfigMaps) + "?fieldManager=c",
                                  ConfigMap("x", R"({"a":"1"})"));
  ASSERT_EQ(created.code, 201) << created.body;
  clock_.Skip(seconds(2));
  // The object as read back (managedFields included), and the body as
  // first sent, by the creator.
  Response got = server_.Get(Url("x", ""));
  Response replaced = server_.Put(Url("x", "?fieldManager=c"), got.body);
  ASSERT_EQ(replaced.code, 200) << replaced.body;
  EXPECT_EQ(Rv(replaced), Rv(created));
  EXPECT_EQ(Entries(replaced), Entries(created));
  Response plain =
      server_.Put(Url("x", "?fieldManager=c"), ConfigMap("x", R"({"a":"1"})"));
  ASSERT_EQ(plain.code, 200) << plain.body;
  EXPECT_EQ(Rv(plain), Rv(created));
  EXPECT_EQ(Entries(plain), Entries(created));
  ExpectStored("x", created);
}

// kube's Update by a manager without an entry that changes nothing: the
// "current-operation" set is empty, so no entry is added and nothing is
// written. An apply by a new applier that changes no value still records
// what it applies (Updater.Apply sets its field set), but no time: the
// object it returns is nil, so managedFieldsUpdater stamps nothing.
TEST_F(NoOpWriteTest, NoOpWriteByAnotherManager) {
  Response created = Apply("x", R"({"a":"1"})", "m");
  ASSERT_EQ(created.code, 201) << created.body;
  clock_.Skip(seconds(2));
  Response got = server_.Get(Url("x", ""));
  Response replaced = server_.Put(Url("x", "?fieldManager=other"), got.body);
  ASSERT_EQ(replaced.code, 200) << replaced.body;
  EXPECT_EQ(Rv(replaced), Rv(created));
  EXPECT_EQ(Entries(replaced), Entries(created));
  Response patched = MergePatch("x", R"({"data":{"a":"1"}})", "other");
  ASSERT_EQ(patched.code, 200) << patched.body;
  EXPECT_EQ(Rv(patched), Rv(created));
  EXPECT_EQ(Entries(patched), Entries(created));
  ExpectStored("x", created);
  // A second applier of the same value: shared ownership, entry without a
  // time.
  Response shared = Apply("x", R"({"a":"1"})", "second");
  ASSERT_EQ(shared.code, 200) << shared.body;
  EXPECT_NE(Rv(shared), Rv(created));
  EXPECT_EQ(Entries(shared), Entries(created) + "second/Apply@-;");
  // Applying it again changes nothing at all.
  clock_.Skip(seconds(2));
  Response again = Apply("x", R"({"a":"1"})", "second");
  ASSERT_EQ(again.code, 200) << again.body;
  EXPECT_EQ(Rv(again), Rv(shared));
  EXPECT_EQ(Entries(again), Entries(shared));
}

// A Service's ports are keyed by port and protocol in server-side apply, as
// kube's OpenAPI lists them (+listMapKey=port, +listMapKey=protocol): an
// apply that drops the UDP one of two port-53 ports keeps the TCP one
// (kplane merged by port alone: 422 spec.ports[1].name: Duplicate value).
TEST(ServiceApplyTest, PortsDifferingByProtocolAreKeyedApart) {
  TestServer server;
  const std::string url =
      "/api/v1/namespaces/default/services/dns?fieldManager=m";
  auto svc = [](const std::string& ports) {
    return R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"dns"},)"
           R"("spec":{"ports":)" +
           ports + "}}";
  };
  auto ports = [](const Response& r) {
    std::string out;
    const rapidjson::Value* p = r.At({"spec", "ports"});
    if (p == nullptr || !p->IsArray()) return out;
    for (const rapidjson::Value& e : p->GetArray()) {
      out += std::string(e["name"].GetString()) + "/" +
             std::to_string(e["port"].GetInt()) + "/" +
             e["protocol"].GetString() + ";";
    }
    return out;
  };
  auto port_keys = [](const Response& r) {
    std::string out;
    const rapidjson::Value* mf = r.At({"metadata", "managedFields"});
    if (mf == nullptr || !mf->IsArray() || mf->Size() != 1) return out;
    const rapidjson::Value& f = (*mf)[0]["fieldsV1"];
    if (!f.HasMember("f:spec") || !f["f:spec"].HasMember("f:ports")) return out;
    for (const auto& m : f["f:spec"]["f:ports"].GetObject()) {
      out += std::string(m.name.GetString()) + ";";
    }
    return out;
  };
  Response created =
      server.Patch(url,
                   svc(R"([{"name":"dns","port":53,"protocol":"UDP"},)"
                       R"({"name":"dns-tcp","port":53,"protocol":"TCP"}])"),
                   "application/apply-patch+yaml");
  ASSERT_EQ(created.code, 201) << created.body;
  EXPECT_EQ(ports(created), "dns/53/UDP;dns-tcp/53/TCP;");
  EXPECT_EQ(
      port_keys(created),
      R"(k:{"port":53,"protocol":"TCP"};k:{"port":53,"protocol":"UDP"};)");

  Response applied = server.Patch(
      url, svc(R"([{"name":"dns-tcp","port":53,"protocol":"TCP"}])"),
      "application/apply-patch+yaml");
  ASSERT_EQ(applied.code, 200) << applied.body;
  EXPECT_EQ(ports(applied), "dns-tcp/53/TCP;");
  EXPECT_EQ(port_keys(applied), R"(k:{"port":53,"protocol":"TCP"};)");

  // Without protocol the port is TCP's (kube's key default), the same one.
  Response again = server.Patch(url, svc(R"([{"name":"dns-tcp","port":53}])"),
                                "application/apply-patch+yaml");
  ASSERT_EQ(again.code, 200) << again.body;
  EXPECT_EQ(ports(again), "dns-tcp/53/TCP;");
  EXPECT_EQ(port_keys(again), R"(k:{"port":53,"protocol":"TCP"};)");
}

}  // namespace
}  // namespace kplane::apiserver
