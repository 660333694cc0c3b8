#include "apiserver/storage/object_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "apiserver/storage/test_store.h"
#include "base/base64.h"
#include "base/testing/hostile_inputs.h"
#include "objects/envelope.h"
#include "objects/meta.h"
#include "storage/forwarding_kv.h"

namespace kplane::apiserver {
namespace {

using objects::corev1::ConfigMap;
using testing::EmbeddedStore;
using testing::MakeConfigMap;
using testing::Resource;

class ObjectStoreTest : public ::testing::Test {
 protected:
  ObjectStoreTest()
      : configmaps_(Resource("", "configmaps")),
        store_(db_.server(), configmaps_,
               ObjectStoreOptions{.clock = &clock_, .metrics = &metrics_}) {}

  int64_t CurrentRevision() { return db_.server()->mvcc()->CurrentRevision(); }

  const ConfigMap& AsConfigMap(const ObjectPtr& p) {
    return static_cast<const ConfigMap&>(*p);
  }

  ObjectPtr MustCreate(const ConfigMap& cm, int64_t ttl = 0) {
    auto r = store_.Create(cm, ttl);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : nullptr;
  }

  // An update function that sets data["key"] = value.
  static ObjectStore::UpdateFn SetValue(std::string value) {
    return
        [value](
            const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
          MutableObject next(cur->New());
          next->CopyFrom(*cur);
          (*static_cast<ConfigMap*>(next.get())->mutable_data())["key"] = value;
          return next;
        };
  }

  EmbeddedStore db_;
  FakeClock clock_;
  metrics::Registry metrics_;
  const objects::ResourceInfo* configmaps_;
  ObjectStore store_;
};

TEST(VersionerTest, ParsesDecimalRevisionsOnly) {
  EXPECT_EQ(*Versioner::Parse(""), 0);
  EXPECT_EQ(*Versioner::Parse("0"), 0);
  EXPECT_EQ(*Versioner::Parse("12345"), 12345);
  EXPECT_EQ(Versioner::ToResourceVersion(42), "42");
  for (const char* bad :
       {"-1", "abc", "1.5", " 1", "+3", "99999999999999999999"}) {
    auto r = Versioner::Parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              std::string("invalid resource version \"") + bad + "\"");
  }
}

TEST(ContinueTokenTest, MatchesKubeApiserverEncoding) {
  std::string token = EncodeContinueToken(5, std::string("web-1\0", 6));
  // base64url without padding of the JSON kube-apiserver writes.
  std::string json = R"({"v":"meta.k8s.io/v1","rv":5,"start":"web-1\u0000"})";
  std::string expected = Base64Encode(json);
  while (expected.back() == '=') expected.pop_back();
  for (char& c : expected) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  EXPECT_EQ(token, expected);

  auto decoded = DecodeContinueToken(token);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->first, 5);
  EXPECT_EQ(decoded->second, std::string("web-1\0", 6));
}

TEST(ContinueTokenTest, RejectsGarbageAndTraversal) {
  auto invalid = [](std::string_view token) {
    auto r = DecodeContinueToken(token);
    EXPECT_FALSE(r.ok()) << token;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind("continue key is not valid", 0), 0u)
        << r.status();
    return r.status().message();
  };
  auto b64 = [](std::string json) {
    std::string s = Base64Encode(json);
    while (s.back() == '=') s.pop_back();
    for (char& c : s) {
      if (c == '+') c = '-';
      if (c == '/') c = '_';
    }
    return s;
  };
  invalid("!!!");
  invalid(b64("not json"));
  EXPECT_EQ(invalid(b64(R"({"v":"meta.k8s.io/v1","rv":0,"start":"a"})")),
            "continue key is not valid: incorrect encoded start "
            "resourceVersion (version meta.k8s.io/v1)");
  EXPECT_EQ(invalid(b64(R"({"v":"meta.k8s.io/v1","rv":3,"start":""})")),
            "continue key is not valid: encoded start key empty (version "
            "meta.k8s.io/v1)");
  EXPECT_EQ(invalid(b64(R"({"v":"v9","rv":3,"start":"a"})")),
            "continue key is not valid: server does not recognize this "
            "encoded version v9");
  invalid(b64(R"({"v":"meta.k8s.io/v1","rv":3,"start":"../secrets/x"})"));
  invalid(b64(R"({"v":"meta.k8s.io/v1","rv":3,"start":"a/./b"})"));
  // A leading slash is tolerated, as in kube.
  auto ok = DecodeContinueToken(
      b64(R"({"v":"meta.k8s.io/v1","rv":-1,"start":"/a"})"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->first, -1);
  EXPECT_EQ(ok->second, "a");
}

TEST(ContinueTokenTest, DeepJsonIsRefused) {
  std::string token =
      kplane::testing::HostileInput("continue_token/deep_10001.txt");
  while (!token.empty() && token.back() == '\n') token.pop_back();
  ASSERT_FALSE(token.empty());
  auto r = DecodeContinueToken(token);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "continue key is not valid: exceeded max depth of 10000");
}

TEST_F(ObjectStoreTest, KeyLayout) {
  EXPECT_EQ(store_.Key("default", "web"), "/registry/configmaps/default/web");
  EXPECT_EQ(store_.Prefix("default"), "/registry/configmaps/default/");
  EXPECT_EQ(store_.Prefix(""), "/registry/configmaps/");
  ObjectStore nodes(
      db_.server(), Resource("", "nodes"),
      ObjectStoreOptions{.prefix = "registry/", .metrics = &metrics_});
  EXPECT_EQ(nodes.Key("ignored", "n1"), "/registry/nodes/n1");
  EXPECT_EQ(nodes.Prefix("ignored"), "/registry/nodes/");
}

TEST_F(ObjectStoreTest, CreateStoresEnvelopeWithoutResourceVersion) {
  ObjectPtr created = MustCreate(MakeConfigMap("default", "a"));
  ASSERT_NE(created, nullptr);
  int64_t rev = CurrentRevision();
  EXPECT_EQ(objects::ResourceVersion(*created), std::to_string(rev));

  etcdserverpb::RangeRequest req;
  req.set_key("/registry/configmaps/default/a");
  auto raw = db_.server()->Range(req);
  ASSERT_TRUE(raw.ok());
  ASSERT_EQ(raw->kvs_size(), 1);
  const std::string& value = raw->kvs(0).value();
  EXPECT_TRUE(objects::HasEnvelopeMagic(value));
  ConfigMap stored;
  auto tm = objects::DecodeEnvelopeInto(value, &stored);
  ASSERT_TRUE(tm.ok());
  EXPECT_EQ(tm->api_version, "v1");
  EXPECT_EQ(tm->kind, "ConfigMap");
  EXPECT_FALSE(stored.metadata().has_resourceversion());
  EXPECT_EQ(stored.data().at("key"), "v");

  auto got = store_.Get("default", "a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(objects::ResourceVersion(**got), std::to_string(rev));
  EXPECT_EQ(AsConfigMap(*got).data().at("key"), "v");
}

TEST_F(ObjectStoreTest, CreateErrors) {
  MustCreate(MakeConfigMap("default", "a"));
  auto again = store_.Create(MakeConfigMap("default", "a"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(again.status().message(), "configmaps \"a\" already exists");

  ConfigMap with_rv = MakeConfigMap("default", "b");
  with_rv.mutable_metadata()->set_resourceversion("7");
  auto rv = store_.Create(with_rv);
  ASSERT_FALSE(rv.ok());
  EXPECT_EQ(rv.status().message(),
            "resourceVersion should not be set on objects to be created");

  auto no_ns = store_.Create(MakeConfigMap("", "c"));
  EXPECT_EQ(no_ns.status().code(), StatusCode::kInvalidArgument);
  auto traversal = store_.Create(MakeConfigMap("default", ".."));
  EXPECT_EQ(traversal.status().code(), StatusCode::kInvalidArgument);

  objects::corev1::Pod pod = testing::MakePod("default", "p");
  EXPECT_EQ(store_.Create(pod).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ObjectStoreTest, GetMissingIsNotFoundWithKubeMessage) {
  auto missing = store_.Get("default", "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "configmaps \"nope\" not found");

  ObjectStore deployments(db_.server(), Resource("apps", "deployments"),
                          ObjectStoreOptions{.metrics = &metrics_});
  EXPECT_EQ(deployments.Get("default", "web").status().message(),
            "deployments.apps \"web\" not found");
}

TEST_F(ObjectStoreTest, GetAtRevisionReadsHistory) {
  ObjectPtr v1 = MustCreate(MakeConfigMap("default", "a", "one"));
  int64_t rev1 = *Versioner::Parse(objects::ResourceVersion(*v1));
  ASSERT_TRUE(
      store_.GuaranteedUpdate("default", "a", {}, SetValue("two")).ok());
  auto old = store_.Get("default", "a", rev1);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(AsConfigMap(*old).data().at("key"), "one");
  EXPECT_EQ(objects::ResourceVersion(**old), std::to_string(rev1));
  auto now = store_.Get("default", "a");
  EXPECT_EQ(AsConfigMap(*now).data().at("key"), "two");

  auto future = store_.Get("default", "a", CurrentRevision() + 100);
  ASSERT_FALSE(future.ok());
  EXPECT_EQ(future.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(future.status().message().rfind("Too large resource version: ", 0),
            0u);
}

TEST_F(ObjectStoreTest, GuaranteedUpdateWritesAndSkipsNoOps) {
  MustCreate(MakeConfigMap("default", "a", "one"));
  auto updated = store_.GuaranteedUpdate("default", "a", {}, SetValue("two"));
  ASSERT_TRUE(updated.ok()) << updated.status();
  int64_t rev = CurrentRevision();
  EXPECT_EQ(objects::ResourceVersion(**updated), std::to_string(rev));
  EXPECT_EQ(AsConfigMap(*updated).data().at("key"), "two");

  // The same bytes again: nothing is written, the current object returns.
  auto same = store_.GuaranteedUpdate("default", "a", {}, SetValue("two"));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(CurrentRevision(), rev);
  EXPECT_EQ(objects::ResourceVersion(**same), std::to_string(rev));

  // The update function's error aborts, as is.
  auto aborted = store_.GuaranteedUpdate(
      "default", "a", {},
      [](const google::protobuf::Message*) -> StatusOr<MutableObject> {
        return InvalidArgumentError("nope");
      });
  EXPECT_EQ(aborted.status(), InvalidArgumentError("nope"));
  EXPECT_EQ(CurrentRevision(), rev);

  auto missing = store_.GuaranteedUpdate("default", "b", {}, SetValue("x"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  auto created = store_.GuaranteedUpdate(
      "default", "b", {},
      [](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
        EXPECT_EQ(cur, nullptr);
        return MutableObject(
            new ConfigMap(MakeConfigMap("default", "b", "new")));
      },
      /*create_if_missing=*/true);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(AsConfigMap(*store_.Get("default", "b")).data().at("key"), "new");
}

TEST_F(ObjectStoreTest, GuaranteedUpdateFromACachedCopy) {
  auto gets = [&] {
    const std::string text = metrics_.Render();
    const std::string name =
        "etcd_requests_total{operation=\"get\",type=\"configmaps\"} ";
    size_t at = text.find(name);
    return at == std::string::npos ? 0
                                   : std::stoi(text.substr(at + name.size()));
  };
  ObjectPtr v1 = MustCreate(MakeConfigMap("default", "a", "one"));

  // A current copy: the update writes without reading the store first.
  int before = gets();
  auto v2 =
      store_.GuaranteedUpdate("default", "a", {}, SetValue("two"), false, v1);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(gets(), before);
  EXPECT_EQ(AsConfigMap(*v2).data().at("key"), "two");
  EXPECT_EQ(objects::ResourceVersion(**v2), std::to_string(CurrentRevision()));

  // A stale copy (v1): the compare-and-swap fails and the update runs
  // again on the store's object; nothing is lost.
  std::vector<std::string> seen;
  auto append =
      [&](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
    const auto& cm = static_cast<const ConfigMap&>(*cur);
    seen.push_back(cm.data().at("key"));
    MutableObject next(cur->New());
    next->CopyFrom(*cur);
    (*static_cast<ConfigMap*>(next.get())->mutable_data())["key"] =
        cm.data().at("key") + "+";
    return next;
  };
  auto v3 = store_.GuaranteedUpdate("default", "a", {}, append, false, v1);
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(AsConfigMap(*store_.Get("default", "a")).data().at("key"), "two+");

  // "Nothing changed" on a stale copy is checked against the store: the
  // store holds "two+", so setting "one" (v1's value) is a write.
  const int64_t rev = CurrentRevision();
  auto v4 =
      store_.GuaranteedUpdate("default", "a", {}, SetValue("one"), false, v1);
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(CurrentRevision(), rev + 1);
  EXPECT_EQ(AsConfigMap(*store_.Get("default", "a")).data().at("key"), "one");
  // And a real no-op from a current copy still writes nothing.
  auto same =
      store_.GuaranteedUpdate("default", "a", {}, SetValue("one"), false, *v4);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(CurrentRevision(), rev + 1);
  EXPECT_EQ(objects::ResourceVersion(**same), std::to_string(rev + 1));

  // A precondition that fails on the stale copy but holds on the store's
  // object, and an update function that rejects the stale copy only: both
  // succeed after reading the store.
  Preconditions current_rv{.resource_version = objects::ResourceVersion(**v4)};
  EXPECT_TRUE(store_
                  .GuaranteedUpdate("default", "a", current_rv,
                                    SetValue("five"), false, v1)
                  .ok());
  auto picky =
      [&](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
    if (static_cast<const ConfigMap&>(*cur).data().at("key") == "one") {
      return ConflictError("stale");
    }
    return SetValue("six")(cur);
  };
  EXPECT_TRUE(
      store_.GuaranteedUpdate("default", "a", {}, picky, false, v1).ok());
  EXPECT_EQ(AsConfigMap(*store_.Get("default", "a")).data().at("key"), "six");
  // An error on the store's own object is the answer.
  auto rejected = store_.GuaranteedUpdate(
      "default", "a", {},
      [](const google::protobuf::Message*) -> StatusOr<MutableObject> {
        return InvalidArgumentError("nope");
      },
      false, v1);
  EXPECT_EQ(rejected.status(), InvalidArgumentError("nope"));

  // A copy of a deleted object: the update finds no key and says so.
  ObjectPtr b = MustCreate(MakeConfigMap("default", "b", "x"));
  ASSERT_TRUE(store_.Delete("default", "b", {}).ok());
  auto gone =
      store_.GuaranteedUpdate("default", "b", {}, SetValue("y"), false, b);
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
}

TEST_F(ObjectStoreTest, PreconditionsFailWithKubeMessages) {
  ObjectPtr created = MustCreate(MakeConfigMap("default", "a"));
  std::string old_rv = objects::ResourceVersion(*created);
  auto updated = store_.GuaranteedUpdate("default", "a", {}, SetValue("w"));
  ASSERT_TRUE(updated.ok());
  std::string rv = objects::ResourceVersion(**updated);

  Preconditions wrong_uid{.uid = "other"};
  auto by_uid =
      store_.GuaranteedUpdate("default", "a", wrong_uid, SetValue("x"));
  ASSERT_FALSE(by_uid.ok());
  EXPECT_EQ(by_uid.status().code(), StatusCode::kConflict);
  EXPECT_EQ(by_uid.status().message(),
            "Operation cannot be fulfilled on configmaps \"a\": StorageError: "
            "invalid object, Code: 4, Key: /registry/configmaps/default/a, "
            "ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID "
            "in precondition: other, UID in object meta: uid-default-a");

  Preconditions stale{.resource_version = old_rv};
  auto by_rv = store_.GuaranteedUpdate("default", "a", stale, SetValue("x"));
  ASSERT_FALSE(by_rv.ok());
  EXPECT_EQ(by_rv.status().code(), StatusCode::kConflict);
  EXPECT_EQ(by_rv.status().message(),
            "Operation cannot be fulfilled on configmaps \"a\": the object has "
            "been modified; please apply your changes to the latest version "
            "and try again");
  EXPECT_EQ(by_rv.status(), ObjectModifiedError(*configmaps_, "a"));

  auto del = store_.Delete("default", "a", stale);
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.status().message(),
            "Operation cannot be fulfilled on configmaps \"a\": StorageError: "
            "invalid object, Code: 4, Key: /registry/configmaps/default/a, "
            "ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: "
            "ResourceVersion in precondition: " +
                old_rv + ", ResourceVersion in object meta: " + rv);

  Preconditions right{.uid = "uid-default-a", .resource_version = rv};
  EXPECT_TRUE(
      store_.GuaranteedUpdate("default", "a", right, SetValue("y")).ok());
}

TEST_F(ObjectStoreTest, ConcurrentWritersLoseNoUpdate) {
  constexpr int kWriters = 8;
  constexpr int kIncrements = 25;
  ConfigMap cm = MakeConfigMap("default", "counter");
  (*cm.mutable_metadata()->mutable_annotations())["count"] = "0";
  MustCreate(cm);
  std::atomic<int> attempts{0};
  auto increment =
      [&](const google::protobuf::Message* cur) -> StatusOr<MutableObject> {
    attempts++;
    MutableObject next(cur->New());
    next->CopyFrom(*cur);
    auto* ann = objects::MutableObjectMeta(next.get())->mutable_annotations();
    (*ann)["count"] = std::to_string(std::stoi((*ann)["count"]) + 1);
    return next;
  };
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        auto r = store_.GuaranteedUpdate("default", "counter", {}, increment);
        EXPECT_TRUE(r.ok()) << r.status();
      }
    });
  }
  for (auto& t : writers) t.join();
  auto final_state = store_.Get("default", "counter");
  ASSERT_TRUE(final_state.ok());
  EXPECT_EQ(
      objects::Annotation(*objects::GetObjectMeta(**final_state), "count"),
      std::to_string(kWriters * kIncrements));
  EXPECT_GE(attempts.load(), kWriters * kIncrements);
}

TEST_F(ObjectStoreTest, DeleteReturnsLastStateAtDeletionRevision) {
  MustCreate(MakeConfigMap("default", "a", "last"));
  auto refused =
      store_.Delete("default", "a", {}, [](const google::protobuf::Message&) {
        return FailedPreconditionError("keep it");
      });
  EXPECT_EQ(refused.status(), FailedPreconditionError("keep it"));

  auto deleted = store_.Delete("default", "a", {});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(objects::ResourceVersion(**deleted),
            std::to_string(CurrentRevision()));
  EXPECT_EQ(AsConfigMap(*deleted).data().at("key"), "last");
  EXPECT_EQ(store_.Get("default", "a").status().code(), StatusCode::kNotFound);
  auto again = store_.Delete("default", "a", {});
  EXPECT_EQ(again.status().message(), "configmaps \"a\" not found");
}

TEST_F(ObjectStoreTest, PaginationReadsEveryPageAtTheFirstRevision) {
  std::set<std::string> originals;
  constexpr int kObjects = 60;
  for (int i = 0; i < kObjects; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "cm-%02d", i);
    MustCreate(MakeConfigMap("default", name));
    originals.insert(name);
  }
  MustCreate(MakeConfigMap("other", "elsewhere"));
  ListOptions opts{.limit = 7};
  std::set<std::string> seen;
  std::vector<int64_t> remaining;
  int64_t first_revision = 0;
  int pages = 0;
  do {
    auto page = store_.List("default", opts);
    ASSERT_TRUE(page.ok()) << page.status();
    ++pages;
    if (first_revision == 0) first_revision = page->revision;
    EXPECT_EQ(page->revision, first_revision);
    EXPECT_LE(page->items.size(), 7u);
    for (const ObjectPtr& o : page->items) {
      EXPECT_TRUE(seen.insert(objects::Name(*o)).second) << objects::Name(*o);
    }
    if (!page->continue_token.empty()) {
      ASSERT_TRUE(page->remaining_items.has_value());
      remaining.push_back(*page->remaining_items);
    } else {
      EXPECT_FALSE(page->remaining_items.has_value());
    }
    opts.continue_token = page->continue_token;
    // Writes between pages must not show up in later pages.
    MustCreate(MakeConfigMap("default", "cm-new-" + std::to_string(pages)));
    if (pages == 1) {
      ASSERT_TRUE(store_.Delete("default", "cm-59", {}).ok());
    }
  } while (!opts.continue_token.empty());
  EXPECT_EQ(pages, 9);
  EXPECT_EQ(seen, originals);
  // Objects after each page at the list's revision: 60 - 7k.
  EXPECT_EQ(remaining, (std::vector<int64_t>{53, 46, 39, 32, 25, 18, 11, 4}));

  // A continue token together with a resourceVersion is refused, as kube.
  auto first = store_.List("default", ListOptions{.limit = 2});
  ASSERT_TRUE(first.ok());
  auto both = store_.List("default",
                          ListOptions{.revision = first->revision,
                                      .limit = 2,
                                      .continue_token = first->continue_token});
  EXPECT_EQ(both.status(),
            InvalidArgumentError("specifying resource version is not allowed "
                                 "when using continue"));
  auto garbage =
      store_.List("default", ListOptions{.limit = 2, .continue_token = "xx"});
  EXPECT_EQ(garbage.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(garbage.status().message().rfind(
                "invalid continue token: continue key is not valid", 0),
            0u);
}

TEST_F(ObjectStoreTest, ListAtExactRevisionAndAllNamespaces) {
  MustCreate(MakeConfigMap("a", "x"));
  int64_t rev = CurrentRevision();
  MustCreate(MakeConfigMap("b", "y"));
  auto all = store_.List("", {});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->items.size(), 2u);
  EXPECT_EQ(all->revision, CurrentRevision());
  EXPECT_TRUE(all->continue_token.empty());
  auto then = store_.List("", ListOptions{.revision = rev});
  ASSERT_TRUE(then.ok());
  ASSERT_EQ(then->items.size(), 1u);
  EXPECT_EQ(objects::Name(*then->items[0]), "x");
  EXPECT_EQ(then->revision, rev);
  auto ns_b = store_.List("b", {});
  ASSERT_EQ(ns_b->items.size(), 1u);
  EXPECT_EQ(objects::Namespace(*ns_b->items[0]), "b");
}

TEST_F(ObjectStoreTest, ContinueAfterCompactionIsExpired) {
  for (int i = 0; i < 5; ++i) {
    MustCreate(MakeConfigMap("default", "cm-" + std::to_string(i)));
  }
  auto first = store_.List("default", ListOptions{.limit = 2});
  ASSERT_TRUE(first.ok());
  ASSERT_FALSE(first->continue_token.empty());
  MustCreate(MakeConfigMap("default", "later"));
  db_.CompactNow();
  auto next = store_.List(
      "default",
      ListOptions{.limit = 2, .continue_token = first->continue_token});
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), StatusCode::kExpired);
  EXPECT_EQ(next.status().message(),
            "The provided continue parameter is too old to display a "
            "consistent list result. You can start a new list without the "
            "continue parameter, or use the continue token in this response "
            "to retrieve the remainder of the results. Continuing with the "
            "provided token results in an inconsistent list - objects that "
            "were created, modified, or deleted between the time the first "
            "chunk was returned and now may show up in the list.");
  std::string rest = InconsistentContinueToken(first->continue_token);
  auto rest_decoded = DecodeContinueToken(rest);
  ASSERT_TRUE(rest_decoded.ok()) << rest_decoded.status();
  EXPECT_EQ(rest_decoded->first, -1);
  EXPECT_EQ(rest_decoded->second,
            DecodeContinueToken(first->continue_token)->second);
  EXPECT_EQ(InconsistentContinueToken("garbage"), "");
  auto old = store_.List("default", ListOptions{.revision = first->revision});
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), StatusCode::kExpired);
  EXPECT_EQ(old.status().message(),
            "The resourceVersion for the provided list is too old.");
}

TEST_F(ObjectStoreTest, PredicateFillsPagesAcrossReads) {
  std::set<std::string> matching;
  for (int i = 0; i < 40; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "cm-%02d", i);
    ConfigMap cm = MakeConfigMap("default", name);
    if (i % 5 == 0) {
      (*cm.mutable_metadata()->mutable_labels())["pick"] = "yes";
      matching.insert(name);
    }
    MustCreate(cm);
  }
  ListOptions opts{.limit = 3};
  opts.predicate = [](const google::protobuf::Message& m) {
    return objects::Label(*objects::GetObjectMeta(m), "pick") == "yes";
  };
  std::set<std::string> seen;
  std::vector<size_t> sizes;
  do {
    auto page = store_.List("default", opts);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_FALSE(page->remaining_items.has_value());
    sizes.push_back(page->items.size());
    for (const ObjectPtr& o : page->items) seen.insert(objects::Name(*o));
    opts.continue_token = page->continue_token;
  } while (!opts.continue_token.empty());
  EXPECT_EQ(seen, matching);
  // 8 matches in pages of 3: full pages until the range ends.
  EXPECT_EQ(sizes, (std::vector<size_t>{3, 3, 2}));
}

TEST_F(ObjectStoreTest, TtlObjectsShareLeasesWithinAMinute) {
  auto lease_of = [&](const std::string& name) {
    etcdserverpb::RangeRequest req;
    req.set_key(store_.Key("default", name));
    auto r = db_.server()->Range(req);
    EXPECT_TRUE(r.ok() && r->kvs_size() == 1);
    return r.ok() && r->kvs_size() == 1 ? r->kvs(0).lease() : -1;
  };
  for (int i = 0; i < 5; ++i) {
    MustCreate(MakeConfigMap("default", "ev-" + std::to_string(i)), 3600);
    clock_.Advance(seconds(10));
  }
  int64_t lease = lease_of("ev-0");
  EXPECT_NE(lease, 0);
  for (int i = 1; i < 5; ++i)
    EXPECT_EQ(lease_of("ev-" + std::to_string(i)), lease);
  clock_.Advance(seconds(30));  // 80 s after the grant: past its slack
  MustCreate(MakeConfigMap("default", "ev-late"), 3600);
  int64_t late = lease_of("ev-late");
  EXPECT_NE(late, lease);
  EXPECT_NE(late, 0);
  auto leases = db_.server()->LeaseLeases(etcdserverpb::LeaseLeasesRequest());
  ASSERT_TRUE(leases.ok());
  EXPECT_EQ(leases->leases_size(), 2);

  // An update with the TTL attaches a fresh lease (kube's GuaranteedUpdate
  // with calculateTTL's answer), shared as creates share them: ev-0 moves
  // to the lease granted for ev-late this minute, and none is granted.
  // (A second later: at the very instant of a grant the lease would
  // outlive the TTL by all of its slack, which LeaseManager, as kube's,
  // does not reuse; real time never stands still.)
  clock_.Advance(seconds(1));
  ASSERT_TRUE(store_
                  .GuaranteedUpdate("default", "ev-0", {}, SetValue("x"),
                                    /*create_if_missing=*/false,
                                    /*cached=*/nullptr, 3600)
                  .ok());
  EXPECT_EQ(lease_of("ev-0"), late);
  // So does one from a cached copy.
  StatusOr<ObjectPtr> ev1 = store_.Get("default", "ev-1");
  ASSERT_TRUE(ev1.ok()) << ev1.status();
  ASSERT_TRUE(store_
                  .GuaranteedUpdate("default", "ev-1", {}, SetValue("x"),
                                    /*create_if_missing=*/false, *ev1, 3600)
                  .ok());
  EXPECT_EQ(lease_of("ev-1"), late);
  // And a create through GuaranteedUpdate (PUT, apply).
  ASSERT_TRUE(
      store_
          .GuaranteedUpdate(
              "default", "ev-put", {},
              [](const google::protobuf::Message*) -> StatusOr<MutableObject> {
                return MutableObject(
                    new ConfigMap(MakeConfigMap("default", "ev-put")));
              },
              /*create_if_missing=*/true, /*cached=*/nullptr, 3600)
          .ok());
  EXPECT_EQ(lease_of("ev-put"), late);
  leases = db_.server()->LeaseLeases(etcdserverpb::LeaseLeasesRequest());
  ASSERT_TRUE(leases.ok());
  EXPECT_EQ(leases->leases_size(), 2);
  // An update without a TTL keeps the object's lease.
  ASSERT_TRUE(
      store_.GuaranteedUpdate("default", "ev-2", {}, SetValue("x")).ok());
  EXPECT_EQ(lease_of("ev-2"), lease);
  // Objects without a TTL have no lease, and their updates give them none.
  MustCreate(MakeConfigMap("default", "plain"));
  EXPECT_EQ(lease_of("plain"), 0);
  ASSERT_TRUE(
      store_.GuaranteedUpdate("default", "plain", {}, SetValue("x")).ok());
  EXPECT_EQ(lease_of("plain"), 0);
}

TEST_F(ObjectStoreTest, RecordsEtcdRequestMetrics) {
  MustCreate(MakeConfigMap("default", "a"));
  ASSERT_TRUE(store_.Get("default", "a").ok());
  ASSERT_TRUE(store_.List("default", {}).ok());
  std::string text = metrics_.Render();
  EXPECT_NE(
      text.find(
          "etcd_requests_total{operation=\"create\",type=\"configmaps\"} 1"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("etcd_request_duration_seconds_count{operation=\"list\","
                      "type=\"configmaps\"} 1"),
            std::string::npos)
      << text;
}

TEST_F(ObjectStoreTest, CurrentRevisionFollowsWrites) {
  auto before = store_.CurrentRevision();
  ASSERT_TRUE(before.ok());
  MustCreate(MakeConfigMap("default", "a"));
  auto after = store_.CurrentRevision();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *before + 1);
}

// The revision read is one key's, however many objects (live or deleted)
// the resource holds: a range over the resource would make the store count
// them all on every consistent LIST.
TEST_F(ObjectStoreTest, CurrentRevisionReadsOneKeyNotTheResource) {
  class RecordingKV : public storage::ForwardingKV {
   public:
    using ForwardingKV::ForwardingKV;
    StatusOr<etcdserverpb::RangeResponse> Range(
        const etcdserverpb::RangeRequest& req) override {
      ranges.push_back(req);
      return ForwardingKV::Range(req);
    }
    std::vector<etcdserverpb::RangeRequest> ranges;
  } kv(db_.server());
  metrics::Registry metrics;
  ObjectStore store(&kv, configmaps_,
                    ObjectStoreOptions{.clock = &clock_, .metrics = &metrics});
  for (int i = 0; i < 5; ++i) {
    MustCreate(MakeConfigMap("default", "c" + std::to_string(i)));
  }
  ASSERT_TRUE(store_.Delete("default", "c0", {}).ok());
  StatusOr<int64_t> rev = store.CurrentRevision();
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ(*rev, CurrentRevision());
  ASSERT_EQ(kv.ranges.size(), 1u);
  const etcdserverpb::RangeRequest& req = kv.ranges[0];
  EXPECT_TRUE(req.range_end().empty()) << req.ShortDebugString();
  EXPECT_TRUE(req.count_only()) << req.ShortDebugString();
  EXPECT_FALSE(req.serializable()) << req.ShortDebugString();
  // And the key is no object's.
  auto resp = db_.server()->Range(req);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(resp->count(), 0);
}

// CurrentRevision's reads are shared by concurrent callers (shared_read.h),
// and each caller still gets a revision covering every write acknowledged
// before it called.
TEST_F(ObjectStoreTest, ConcurrentCurrentRevisionsSeeAcknowledgedWrites) {
  std::atomic<int64_t> acked{0};  // the newest acknowledged write's revision
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) {
      auto r = store_.Create(MakeConfigMap("default", "w" + std::to_string(i)));
      EXPECT_TRUE(r.ok()) << r.status();
      if (!r.ok()) break;
      acked.store(*Versioner::Parse(objects::ResourceVersion(**r)));
    }
    stop = true;
  });
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> stale{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const int64_t before = acked.load();
        StatusOr<int64_t> rev = store_.CurrentRevision();
        calls.fetch_add(1);
        if (!rev.ok() || *rev < before) stale.fetch_add(1);
      }
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(stale.load(), 0);
  EXPECT_GT(calls.load(), 0);
  // Eight callers at once: some of them shared a read.
  EXPECT_LT(store_.revision_reads(), calls.load());
}

}  // namespace
}  // namespace kplane::apiserver
