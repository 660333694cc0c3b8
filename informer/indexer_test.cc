#include "informer/indexer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "informer/lister.h"
#include "informer/test_util.h"
#include "objects/meta.h"

namespace kplane::informer {
namespace {

using testing::PodPtr;

std::vector<std::string> Keys(const std::vector<ObjectPtr>& objs) {
  std::vector<std::string> out;
  for (const ObjectPtr& o : objs) out.push_back(ObjectKey(*o));
  return out;
}

Indexers WithNodeIndex() {
  Indexers ix = DefaultIndexers();
  ix["node"] = [](const google::protobuf::Message& m) {
    const auto& pod = static_cast<const objects::corev1::Pod&>(m);
    if (pod.spec().nodename().empty()) return std::vector<std::string>{};
    return std::vector<std::string>{pod.spec().nodename()};
  };
  return ix;
}

TEST(ObjectKeyTest, NamespacedAndClusterScoped) {
  EXPECT_EQ(ObjectKey(*PodPtr("default", "web")), "default/web");
  objects::corev1::Node node;
  node.mutable_metadata()->set_name("n1");
  EXPECT_EQ(ObjectKey(node), "n1");
  EXPECT_EQ(SplitObjectKey("default/web"),
            (std::pair<std::string, std::string>{"default", "web"}));
  EXPECT_EQ(SplitObjectKey("n1"),
            (std::pair<std::string, std::string>{"", "n1"}));
}

// The worked example of indexer.h, step by step.
TEST(IndexerTest, WorkedExample) {
  Indexer ix(WithNodeIndex());
  EXPECT_EQ(ix.Upsert(PodPtr("default", "a", "1", {}, "n1")), nullptr);
  ix.Upsert(PodPtr("kube", "b", "2", {}, "n1"));
  EXPECT_EQ(*ix.IndexKeys("node", "n1"),
            (std::vector<std::string>{"default/a", "kube/b"}));
  EXPECT_EQ(*ix.IndexKeys("namespace", "kube"),
            (std::vector<std::string>{"kube/b"}));

  ObjectPtr old = ix.Upsert(PodPtr("default", "a", "3", {}, "n2"));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(objects::ResourceVersion(*old), "1");
  EXPECT_EQ(*ix.IndexKeys("node", "n1"), (std::vector<std::string>{"kube/b"}));
  EXPECT_EQ(*ix.IndexKeys("node", "n2"),
            (std::vector<std::string>{"default/a"}));

  ObjectPtr removed = ix.Delete("kube/b");
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(objects::Name(*removed), "b");
  EXPECT_EQ(ix.Delete("kube/b"), nullptr);
  EXPECT_EQ(*ix.ListIndexValues("node"), (std::vector<std::string>{"n2"}));
  EXPECT_EQ(*ix.ListIndexValues("namespace"),
            (std::vector<std::string>{"default"}));
  EXPECT_EQ(Keys(*ix.ByIndex("node", "n2")),
            (std::vector<std::string>{"default/a"}));
  EXPECT_TRUE(ix.ByIndex("node", "n1")->empty());
  EXPECT_EQ(ix.Size(), 1u);
}

TEST(IndexerTest, UnknownIndexIsNotFound) {
  Indexer ix;
  EXPECT_EQ(ix.ByIndex("node", "n1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ix.ListIndexValues("node").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(ix.HasIndex("node"));
  EXPECT_TRUE(ix.HasIndex(kNamespaceIndex));
}

TEST(IndexerTest, ReplaceRebuildsIndicesAndLastDuplicateWins) {
  Indexer ix(WithNodeIndex());
  ix.Upsert(PodPtr("default", "old", "1", {}, "n9"));
  ix.Replace({PodPtr("default", "a", "1", {}, "n1"),
              PodPtr("default", "a", "2", {}, "n2"),
              PodPtr("other", "b", "3", {}, "n1")});
  EXPECT_EQ(ix.ListKeys(), (std::vector<std::string>{"default/a", "other/b"}));
  EXPECT_EQ(objects::ResourceVersion(*ix.Get("default/a")), "2");
  EXPECT_EQ(*ix.ListIndexValues("node"),
            (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(*ix.IndexKeys("node", "n1"), (std::vector<std::string>{"other/b"}));
  EXPECT_EQ(ix.Get("default/old"), nullptr);
}

TEST(IndexerTest, AddIndexersFilesExistingObjects) {
  Indexer ix;
  ix.Upsert(PodPtr("default", "a", "1", {}, "n1"));
  ix.Upsert(PodPtr("default", "b", "1", {}, "n2"));
  Indexers more;
  more["node"] = WithNodeIndex()["node"];
  ASSERT_TRUE(ix.AddIndexers(more).ok());
  EXPECT_EQ(*ix.IndexKeys("node", "n2"),
            (std::vector<std::string>{"default/b"}));
  EXPECT_EQ(ix.AddIndexers(more).code(), StatusCode::kAlreadyExists);
  // Later objects are filed too.
  ix.Upsert(PodPtr("default", "c", "1", {}, "n2"));
  EXPECT_EQ(ix.IndexKeys("node", "n2")->size(), 2u);
}

TEST(IndexerTest, IndexMatchesAnyValueOfTheObject) {
  Indexers ix_funcs;
  // A multi-valued index: one value per label key.
  ix_funcs["labelkeys"] = [](const google::protobuf::Message& m) {
    std::vector<std::string> out;
    for (const auto& [k, v] : objects::GetObjectMeta(m)->labels()) out.push_back(k);
    return out;
  };
  Indexer ix(ix_funcs);
  ix.Upsert(PodPtr("d", "a", "1", {{"x", "1"}}));
  ix.Upsert(PodPtr("d", "b", "1", {{"y", "1"}}));
  ix.Upsert(PodPtr("d", "c", "1", {{"z", "1"}}));
  auto probe = PodPtr("d", "probe", "1", {{"x", "2"}, {"y", "2"}});
  EXPECT_EQ(Keys(*ix.Index("labelkeys", *probe)),
            (std::vector<std::string>{"d/a", "d/b"}));
}

// Updates move a key between index values only where they changed; the
// index always equals one rebuilt from the objects (random updates of a
// multi-valued index, unchanged values included, against a model).
TEST(IndexerTest, UpdatesKeepTheIndexExact) {
  Indexers ix_funcs;
  ix_funcs["labelkeys"] = [](const google::protobuf::Message& m) {
    std::vector<std::string> out;
    for (const auto& [k, v] : objects::GetObjectMeta(m)->labels()) {
      out.push_back(k);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  Indexer ix(ix_funcs);
  std::mt19937 rng(7);
  std::map<std::string, std::set<std::string>> model;  // key -> label keys
  for (int step = 0; step < 2000; ++step) {
    const std::string name = "p" + std::to_string(rng() % 20);
    const std::string ns = rng() % 2 ? "a" : "b";
    const std::string key = ns + "/" + name;
    if (rng() % 8 == 0) {
      ix.Delete(key);
      model.erase(key);
    } else {
      std::map<std::string, std::string> labels;
      // Often the same label keys as before (a status-like update).
      if (model.count(key) != 0 && rng() % 2 == 0) {
        for (const std::string& k : model[key]) labels[k] = "v";
      } else {
        for (int l = 0; l < 3; ++l)
          labels["k" + std::to_string(rng() % 5)] = "v";
      }
      ix.Upsert(PodPtr(ns, name, std::to_string(step), labels));
      std::set<std::string>& keys = model[key];
      keys.clear();
      for (const auto& [k, v] : labels) keys.insert(k);
    }
    std::map<std::string, std::vector<std::string>> want;
    for (const auto& [k, label_keys] : model) {
      for (const std::string& l : label_keys) want[l].push_back(k);
    }
    std::vector<std::string> values;
    for (const auto& [v, keys] : want) values.push_back(v);
    ASSERT_EQ(*ix.ListIndexValues("labelkeys"), values) << "step " << step;
    for (const auto& [v, keys] : want) {
      ASSERT_EQ(*ix.IndexKeys("labelkeys", v), keys) << "step " << step;
    }
    ASSERT_EQ(ix.Size(), model.size());
  }
}

TEST(ListerTest, SelectorsNamespacesAndNotFound) {
  Indexer ix;
  ix.Upsert(PodPtr("default", "web-1", "1", {{"app", "web"}}));
  ix.Upsert(PodPtr("default", "db-1", "1", {{"app", "db"}}));
  ix.Upsert(PodPtr("prod", "web-2", "1", {{"app", "web"}}));
  Lister lister(&ix, testing::PodsResource());

  auto web = machinery::LabelSelector::Parse("app=web");
  ASSERT_TRUE(web.ok());
  EXPECT_EQ(Keys(lister.List(*web)),
            (std::vector<std::string>{"default/web-1", "prod/web-2"}));
  EXPECT_EQ(lister.List().size(), 3u);
  EXPECT_TRUE(lister.List(machinery::LabelSelector::Nothing()).empty());
  EXPECT_EQ(Keys(lister.ByNamespace("default").List(*web)),
            (std::vector<std::string>{"default/web-1"}));
  EXPECT_EQ(lister.ByNamespace("default").List().size(), 2u);

  StatusOr<ObjectPtr> got = lister.ByNamespace("prod").Get("web-2");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(objects::Name(**got), "web-2");
  StatusOr<ObjectPtr> missing = lister.ByNamespace("prod").Get("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "pods \"nope\" not found");
}

TEST(ListerTest, NamespaceListWithoutTheIndexFilters) {
  Indexer ix(Indexers{});  // no namespace index
  ix.Upsert(PodPtr("a", "p1"));
  ix.Upsert(PodPtr("b", "p2"));
  Lister lister(&ix);
  EXPECT_EQ(Keys(lister.ByNamespace("b").List()),
            (std::vector<std::string>{"b/p2"}));
}

TEST(ListerTest, TypedListerCastsToTheMessageType) {
  Indexer ix;
  ix.Upsert(PodPtr("default", "web", "7", {}, "n1"));
  TypedLister<objects::corev1::Pod> pods(&ix);
  auto web = pods.ByNamespace("default").Get("web");
  ASSERT_TRUE(web.ok());
  EXPECT_EQ((*web)->spec().nodename(), "n1");
  ASSERT_EQ(pods.List().size(), 1u);
  EXPECT_EQ(pods.List()[0]->metadata().resourceversion(), "7");
  EXPECT_EQ(pods.Get("default/nope").status().message(),
            "pods \"default/nope\" not found");
}

}  // namespace
}  // namespace kplane::informer
