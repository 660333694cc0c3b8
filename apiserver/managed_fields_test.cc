// TrackManagedFields' fast path (TrackOwnedValueChanges) against its general
// path through JSON: wherever the fast path answers, both give the same
// object; where ownership or the shape changes it must not answer.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apiserver/node_lease_testing.h"
#include "apiserver/patching.h"
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
  // A no-op update still stamps the writer's entry.
  EXPECT_TRUE(Update(stored, NodeLease(1000), "kubelet").fast);
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

}  // namespace
}  // namespace kplane::apiserver
