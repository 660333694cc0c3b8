// HTTP tests of the REST verbs against a real ApiServer on a loopback port
// over an embedded store: create/get/list/update/patch/delete, their
// metadata rules, errors as metav1.Status, encodings, Tables.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "apiserver/test_server.h"
#include "net/http_client.h"
#include "net/http_test_util.h"
#include "net/url.h"
#include "objects/envelope.h"
#include "objects/types.h"
#include "storage/client/local_cluster.h"
#include "storage/forwarding_kv.h"

namespace kplane::apiserver {
namespace {

using testing::Response;
using testing::TestServer;

constexpr char kPods[] = "/api/v1/namespaces/default/pods";
constexpr char kConfigMaps[] = "/api/v1/namespaces/default/configmaps";
constexpr char kDeployments[] = "/apis/apps/v1/namespaces/default/deployments";

std::string Pod(const std::string& name, const std::string& extra_meta = "",
                const std::string& extra_spec = "") {
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
         "\"" + extra_meta +
         R"(},"spec":{"containers":[{"name":"c","image":"nginx"}])" +
         extra_spec + "}}";
}

std::string Deployment(const std::string& name, int replicas) {
  return R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":")" +
         name + R"("},"spec":{"replicas":)" + std::to_string(replicas) +
         R"(,"selector":{"matchLabels":{"app":")" + name +
         R"("}},"template":{"metadata":{"labels":{"app":")" + name +
         R"("}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}})";
}

std::string ConfigMap(const std::string& name,
                      const std::string& labels = "{}") {
  return R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":")" +
         name + R"(","labels":)" + labels + R"(},"data":{"k":"v"}})";
}

// An Accept header asking for the metadata form `as`
// (PartialObjectMetadata or PartialObjectMetadataList): in protobuf first,
// as kube's metadata client asks, or JSON; then plain JSON.
std::string MetadataAccept(const char* as, bool protobuf) {
  std::string json = std::string("application/json;as=") + as +
                     ";g=meta.k8s.io;v=v1,application/json";
  if (!protobuf) return json;
  return std::string("application/vnd.kubernetes.protobuf;as=") + as +
         ";g=meta.k8s.io;v=v1," + json;
}

// Decodes a protobuf answer into `out` and returns its envelope's type; a
// wrong media type or a body that does not decode fails the test (and the
// type is then empty).
objects::TypeMeta ProtobufAnswer(const Response& r,
                                 google::protobuf::Message* out) {
  EXPECT_EQ(r.headers.Get("Content-Type"),
            "application/vnd.kubernetes.protobuf");
  StatusOr<objects::TypeMeta> tm = objects::DecodeEnvelopeInto(r.body, out);
  EXPECT_TRUE(tm.ok()) << tm.status();
  return tm.ok() ? *tm : objects::TypeMeta{};
}

void ExpectStatus(const Response& r, int code, const std::string& reason) {
  EXPECT_EQ(r.code, code) << r.body;
  EXPECT_EQ(r.Str({"kind"}), "Status") << r.body;
  EXPECT_EQ(r.Str({"apiVersion"}), "v1");
  EXPECT_EQ(r.Str({"status"}), "Failure");
  EXPECT_EQ(r.Str({"reason"}), reason) << r.body;
  ASSERT_NE(r.At({"code"}), nullptr);
  EXPECT_EQ((*r.At({"code"})).GetInt(), code);
}

TEST(ApiRestTest, CreateFillsMetadataAndGetReturnsIt) {
  TestServer s;
  Response c = s.Post(kPods, Pod("web"));
  ASSERT_EQ(c.code, 201) << c.body;
  EXPECT_EQ(c.Str({"kind"}), "Pod");
  EXPECT_EQ(c.Str({"apiVersion"}), "v1");
  EXPECT_EQ(c.Str({"metadata", "namespace"}), "default");
  EXPECT_EQ(c.Str({"metadata", "uid"}).size(), 36u);
  EXPECT_FALSE(c.Str({"metadata", "resourceVersion"}).empty());
  EXPECT_FALSE(c.Str({"metadata", "creationTimestamp"}).empty());
  // Server defaults (strategy) were applied.
  EXPECT_EQ(c.Str({"spec", "restartPolicy"}), "Always");
  // managedFields record the creating manager (Update).
  const rapidjson::Value* mf = c.At({"metadata", "managedFields"});
  ASSERT_NE(mf, nullptr);
  ASSERT_TRUE(mf->IsArray());
  EXPECT_STREQ((*mf)[0]["operation"].GetString(), "Update");

  Response g = s.Get(std::string(kPods) + "/web");
  ASSERT_EQ(g.code, 200);
  EXPECT_EQ(g.Str({"metadata", "uid"}), c.Str({"metadata", "uid"}));
  EXPECT_EQ(g.Str({"metadata", "resourceVersion"}),
            c.Str({"metadata", "resourceVersion"}));
}

// managedFields a client sends that cannot be read (a fieldsV1 that is no
// field set) are ignored as kube's FieldManager ignores them: the live
// object's entries are the starting point and the write succeeds.
TEST(ApiRestTest, UnreadableManagedFieldsFromTheClientAreIgnored) {
  TestServer s;
  Response c =
      s.Post(std::string(kConfigMaps) + "?fieldManager=maker", ConfigMap("cm"));
  ASSERT_EQ(c.code, 201) << c.body;
  const std::string url = std::string(kConfigMaps) + "/cm";
  const std::string bad_entry =
      R"({"manager":"m","operation":"Update","apiVersion":"v1",)"
      R"("fieldsType":"FieldsV1","fieldsV1":{"x":{}}})";
  Response patched = s.Patch(url + "?fieldManager=patcher",
                             R"({"metadata":{"managedFields":[)" + bad_entry +
                                 R"(]},"data":{"added":"1"}})",
                             "application/merge-patch+json");
  ASSERT_EQ(patched.code, 200) << patched.body;
  const rapidjson::Value* mf = patched.At({"metadata", "managedFields"});
  ASSERT_NE(mf, nullptr);
  ASSERT_TRUE(mf->IsArray());
  std::vector<std::string> managers;
  for (const rapidjson::Value& e : mf->GetArray()) {
    managers.push_back(e["manager"].GetString());
  }
  EXPECT_EQ(managers, (std::vector<std::string>{"maker", "patcher"}));
  EXPECT_EQ(patched.body.find(R"("f:x")"), std::string::npos) << patched.body;

  // Readable entries from the client still replace the live ones (kubectl's
  // client-side to server-side apply migration writes them).
  Response rewritten = s.Patch(
      url + "?fieldManager=patcher",
      R"({"metadata":{"managedFields":[{"manager":"other","operation":)"
      R"("Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":)"
      R"({"f:data":{"f:added":{}}}}]}})",
      "application/merge-patch+json");
  ASSERT_EQ(rewritten.code, 200) << rewritten.body;
  const rapidjson::Value* mf2 = rewritten.At({"metadata", "managedFields"});
  ASSERT_NE(mf2, nullptr);
  ASSERT_EQ(mf2->Size(), 1u) << rewritten.body;
  EXPECT_STREQ((*mf2)[0]["manager"].GetString(), "other");
}

// managedFields of one empty entry reset them, as kube's FieldManager
// reads them (isResetManagedFields; the documented way to strip them):
// the write starts from no entries, and its own changes are all it owns.
TEST(ApiRestTest, AnEmptyManagedFieldsEntryResetsThem) {
  TestServer s;
  Response c =
      s.Post(std::string(kConfigMaps) + "?fieldManager=maker", ConfigMap("cm"));
  ASSERT_EQ(c.code, 201) << c.body;
  ASSERT_NE(c.At({"metadata", "managedFields"}), nullptr) << c.body;
  const std::string url = std::string(kConfigMaps) + "/cm";
  Response stripped = s.Patch(
      url + "?fieldManager=patcher",
      R"([{"op":"replace","path":"/metadata/managedFields","value":[{}]}])",
      "application/json-patch+json");
  ASSERT_EQ(stripped.code, 200) << stripped.body;
  EXPECT_EQ(stripped.At({"metadata", "managedFields"}), nullptr)
      << stripped.body;
  Response got = s.Get(url);
  EXPECT_EQ(got.At({"metadata", "managedFields"}), nullptr) << got.body;
  // With a change: only the writer's entry, for what it changed.
  Response changed = s.Patch(url + "?fieldManager=patcher",
                             R"({"metadata":{"managedFields":[{}]},)"
                             R"("data":{"added":"1"}})",
                             "application/merge-patch+json");
  ASSERT_EQ(changed.code, 200) << changed.body;
  const rapidjson::Value* mf = changed.At({"metadata", "managedFields"});
  ASSERT_NE(mf, nullptr) << changed.body;
  ASSERT_EQ(mf->Size(), 1u) << changed.body;
  EXPECT_STREQ((*mf)[0]["manager"].GetString(), "patcher");
}

TEST(ApiRestTest, GenerateNameAddsFiveCharacters) {
  TestServer s;
  Response c =
      s.Post(kConfigMaps, R"({"metadata":{"generateName":"job-"},"data":{}})");
  ASSERT_EQ(c.code, 201) << c.body;
  std::string name = c.Str({"metadata", "name"});
  ASSERT_EQ(name.size(), 9u) << name;
  EXPECT_EQ(name.substr(0, 4), "job-");
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/" + name).code, 200);
}

// A name the client chose is never replaced: with generateName set too,
// a collision is 409 (kube ignores generateName when a name is given). It
// used to be retried under "<name minus 5 characters><suffix>", so a
// Namespace "prod" became "prodXXXXX" labelled
// kubernetes.io/metadata.name=prod.
TEST(ApiRestTest, AChosenNameIsNeverReplacedOnACollision) {
  TestServer s;
  ASSERT_EQ(
      s.Post("/api/v1/namespaces", R"({"metadata":{"name":"prod"}})").code,
      201);
  Response again =
      s.Post("/api/v1/namespaces",
             R"({"metadata":{"name":"prod","generateName":"x-"}})");
  ExpectStatus(again, 409, "AlreadyExists");
  Response dry = s.Post("/api/v1/namespaces?dryRun=All",
                        R"({"metadata":{"name":"prod","generateName":"x-"}})");
  ExpectStatus(dry, 409, "AlreadyExists");
  ASSERT_EQ(s.Post(kConfigMaps, R"({"metadata":{"name":"a"}})").code, 201);
  ExpectStatus(
      s.Post(kConfigMaps, R"({"metadata":{"name":"a","generateName":"b-"}})"),
      409, "AlreadyExists");
  Response namespaces = s.Get("/api/v1/namespaces");
  for (const auto& ns : namespaces.json["items"].GetArray()) {
    const std::string name = ns["metadata"]["name"].GetString();
    EXPECT_TRUE(name == "prod" || name.rfind("prod", 0) != 0) << name;
  }
  EXPECT_EQ(s.Get(kConfigMaps).json["items"].Size(), 1u);
}

// As kube's namespace REST, namespaces have no deletecollection: one DELETE
// of the collection deleted every namespace before `default` (refused) in
// key order.
TEST(ApiRestTest, NamespacesHaveNoDeleteCollection) {
  TestServer s;
  ASSERT_EQ(s.Post("/api/v1/namespaces", R"({"metadata":{"name":"app"}})").code,
            201);
  Response d = s.Delete("/api/v1/namespaces");
  ExpectStatus(d, 405, "MethodNotAllowed");
  Response app = s.Get("/api/v1/namespaces/app");
  ASSERT_EQ(app.code, 200);
  EXPECT_EQ(app.At({"metadata", "deletionTimestamp"}), nullptr);
  Response discovery = s.Get("/api/v1");
  for (const auto& r : discovery.json["resources"].GetArray()) {
    if (std::string(r["name"].GetString()) != "namespaces") continue;
    for (const auto& v : r["verbs"].GetArray()) {
      EXPECT_STRNE(v.GetString(), "deletecollection");
    }
  }
}

// A /status update cannot relabel a namespace either: defaulting sets the
// kubernetes.io/metadata.name label on every write, as kube's.
TEST(ApiRestTest, ANamespaceStatusUpdateKeepsItsNameLabel) {
  TestServer s;
  ASSERT_EQ(s.Post("/api/v1/namespaces", R"({"metadata":{"name":"app"}})").code,
            201);
  Response st = s.Patch(
      "/api/v1/namespaces/app/status",
      R"({"metadata":{"labels":{"kubernetes.io/metadata.name":"prod"}}})",
      "application/merge-patch+json");
  ASSERT_EQ(st.code, 200) << st.body;
  EXPECT_EQ(st.Str({"metadata", "labels", "kubernetes.io/metadata.name"}),
            "app");
}

TEST(ApiRestTest, NamespaceRules) {
  TestServer s;
  Response mismatch =
      s.Post(kConfigMaps, R"({"metadata":{"name":"a","namespace":"other"}})");
  ExpectStatus(mismatch, 400, "BadRequest");
  EXPECT_EQ(mismatch.Str({"message"}),
            "the namespace of the provided object does not match the "
            "namespace sent on the request");
  Response missing = s.Post("/api/v1/namespaces/nope/configmaps",
                            R"({"metadata":{"name":"a"}})");
  ExpectStatus(missing, 404, "NotFound");
  EXPECT_EQ(missing.Str({"message"}), "namespaces \"nope\" not found");
  // An unknown namespace lists empty, with items [] (never null).
  Response list = s.Get("/api/v1/namespaces/nope/configmaps");
  ASSERT_EQ(list.code, 200);
  ASSERT_NE(list.At({"items"}), nullptr);
  EXPECT_TRUE(list.At({"items"})->IsArray());
  EXPECT_EQ(list.At({"items"})->Size(), 0u);
  EXPECT_EQ(list.Str({"kind"}), "ConfigMapList");
  EXPECT_FALSE(list.Str({"metadata", "resourceVersion"}).empty());
}

TEST(ApiRestTest, ErrorsAreStatusObjects) {
  TestServer s;
  Response nf = s.Get(std::string(kPods) + "/nope");
  ExpectStatus(nf, 404, "NotFound");
  EXPECT_EQ(nf.Str({"message"}), "pods \"nope\" not found");
  EXPECT_EQ(nf.Str({"details", "name"}), "nope");
  EXPECT_EQ(nf.Str({"details", "kind"}), "pods");

  ASSERT_EQ(s.Post(kDeployments, Deployment("web", 1)).code, 201);
  Response dup = s.Post(kDeployments, Deployment("web", 1));
  ExpectStatus(dup, 409, "AlreadyExists");
  EXPECT_EQ(dup.Str({"message"}), "deployments.apps \"web\" already exists");
  EXPECT_EQ(dup.Str({"details", "group"}), "apps");

  Response invalid = s.Post(kDeployments, Deployment("Bad_Name", 1));
  ExpectStatus(invalid, 422, "Invalid");
  EXPECT_NE(
      invalid.Str({"message"}).find("Deployment.apps \"Bad_Name\" is invalid"),
      std::string::npos)
      << invalid.body;
  const rapidjson::Value* causes = invalid.At({"details", "causes"});
  ASSERT_NE(causes, nullptr);
  ASSERT_GT(causes->Size(), 0u);
  EXPECT_STREQ((*causes)[0]["field"].GetString(), "metadata.name");

  Response path = s.Get("/api/v1/nopes");
  ExpectStatus(path, 404, "NotFound");
  EXPECT_EQ(path.Str({"message"}),
            "the server could not find the requested resource");

  Response unsupported =
      s.Do("POST", kConfigMaps, "x", {{"Content-Type", "text/plain"}});
  ExpectStatus(unsupported, 415, "UnsupportedMediaType");

  Response patch_type =
      s.Patch(std::string(kDeployments) + "/web", "{}", "application/json");
  ExpectStatus(patch_type, 415, "UnsupportedMediaType");

  Response method = s.Put(kConfigMaps, "{}");
  ExpectStatus(method, 405, "MethodNotAllowed");

  Response accept = s.Get(kConfigMaps, "text/html");
  ExpectStatus(accept, 406, "NotAcceptable");

  Response bad_bool = s.Get(std::string(kConfigMaps) + "?watch=maybe");
  ExpectStatus(bad_bool, 400, "BadRequest");
}

TEST(ApiRestTest, UnknownFieldsWarnOrFailUnderStrict) {
  TestServer s;
  Response warn =
      s.Post(kConfigMaps, R"({"metadata":{"name":"a"},"data":{},"bogus":1})");
  ASSERT_EQ(warn.code, 201);
  EXPECT_EQ(warn.headers.Get("Warning"),
            "299 - \"unknown field \\\"bogus\\\"\"");
  Response strict = s.Post(std::string(kConfigMaps) + "?fieldValidation=Strict",
                           R"({"metadata":{"name":"b"},"data":{},"bogus":1})");
  ExpectStatus(strict, 400, "BadRequest");
  EXPECT_EQ(strict.Str({"message"}),
            "strict decoding error: unknown field \"bogus\"");
  Response ignore = s.Post(std::string(kConfigMaps) + "?fieldValidation=Ignore",
                           R"({"metadata":{"name":"c"},"data":{},"bogus":1})");
  ASSERT_EQ(ignore.code, 201);
  EXPECT_FALSE(ignore.headers.Has("Warning"));
}

TEST(ApiRestTest, YamlAndProtobufBodiesAndAnswers) {
  TestServer s;
  Response y = s.Do("POST", kConfigMaps,
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\n"
                    "data:\n  a: \"1\"\n",
                    {{"Content-Type", "application/yaml"}});
  ASSERT_EQ(y.code, 201) << y.body;

  // A protobuf body, as kubectl create configmap sends it.
  objects::corev1::ConfigMap cm;
  cm.mutable_metadata()->set_name("pb");
  (*cm.mutable_data())["a"] = "1";
  std::string body = objects::EncodeEnvelope(cm, {"v1", "ConfigMap"});
  Response p = s.Do(
      "POST", std::string(kConfigMaps) + "?fieldManager=kubectl-create", body,
      {{"Content-Type", "application/vnd.kubernetes.protobuf"},
       {"Accept", "application/vnd.kubernetes.protobuf,application/json"}});
  ASSERT_EQ(p.code, 201) << p.body;
  objects::corev1::ConfigMap back;
  ASSERT_EQ(ProtobufAnswer(p, &back).kind, "ConfigMap");
  EXPECT_EQ(back.metadata().namespace_(), "default");
  EXPECT_EQ(back.data().at("a"), "1");
  EXPECT_FALSE(back.metadata().uid().empty());

  Response yaml_get =
      s.Get(std::string(kConfigMaps) + "/pb", "application/yaml");
  ASSERT_EQ(yaml_get.code, 200);
  EXPECT_EQ(yaml_get.headers.Get("Content-Type"), "application/yaml");
  EXPECT_NE(yaml_get.body.find("kind: ConfigMap\n"), std::string::npos)
      << yaml_get.body;

  // Errors follow the negotiated encoding for protobuf clients.
  Response nf = s.Get(std::string(kConfigMaps) + "/none",
                      "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(nf.code, 404);
  objects::metav1::Status st;
  ASSERT_EQ(ProtobufAnswer(nf, &st).kind, "Status");
  EXPECT_EQ(st.reason(), "NotFound");
}

// GET and LIST as PartialObjectMetadata in protobuf, as kube's metadata
// client asks (protobuf first): the same metadata as the JSON form.
TEST(ApiRestTest, PartialObjectMetadataInProtobuf) {
  TestServer s;
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_EQ(
        s.Post(
             kConfigMaps,
             std::string(R"({"metadata":{"name":")") + name +
                 R"(","labels":{"app":"x"},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u-1"}]},"data":{"k":"v"}})")
            .code,
        201);
  }
  auto accept = [](const char* as) { return MetadataAccept(as, true); };
  Response one =
      s.Get(std::string(kConfigMaps) + "/b", accept("PartialObjectMetadata"));
  ASSERT_EQ(one.code, 200) << one.body;
  objects::metav1::PartialObjectMetadata partial;
  objects::TypeMeta type = ProtobufAnswer(one, &partial);
  EXPECT_EQ(type.kind, "PartialObjectMetadata");
  EXPECT_EQ(type.api_version, "meta.k8s.io/v1");
  EXPECT_EQ(partial.metadata().name(), "b");
  EXPECT_EQ(partial.metadata().namespace_(), "default");
  ASSERT_EQ(partial.metadata().ownerreferences_size(), 1);
  EXPECT_EQ(partial.metadata().ownerreferences(0).uid(), "u-1");

  Response list = s.Get(std::string(kConfigMaps) + "?limit=2",
                        accept("PartialObjectMetadataList"));
  ASSERT_EQ(list.code, 200) << list.body;
  objects::metav1::PartialObjectMetadataList items;
  EXPECT_EQ(ProtobufAnswer(list, &items).kind, "PartialObjectMetadataList");
  ASSERT_EQ(items.items_size(), 2);
  EXPECT_FALSE(items.metadata().continue_().empty());
  EXPECT_FALSE(items.metadata().resourceversion().empty());

  // The JSON form of the same page names the same objects and versions.
  Response json = s.Get(std::string(kConfigMaps) + "?limit=2",
                        "application/json;as=PartialObjectMetadataList;"
                        "g=meta.k8s.io;v=v1");
  ASSERT_EQ(json.code, 200) << json.body;
  ASSERT_EQ(json.At({"items"})->Size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const rapidjson::Value& m = (*json.At({"items"}))[i]["metadata"];
    EXPECT_EQ(items.items(i).metadata().name(), m["name"].GetString());
    EXPECT_EQ(items.items(i).metadata().resourceversion(),
              m["resourceVersion"].GetString());
    EXPECT_EQ(items.items(i).metadata().labels().at("app"), "x");
  }
}

// As in Kubernetes, the metadata form asked for must fit the answer, and a
// misfit is 406 even when a later Accept clause would do (kube does not
// fall back either). A write is refused before it happens.
TEST(ApiRestTest, MetadataFormMustFitTheAnswer) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a")).code, 201);
  ASSERT_EQ(s.Post(kDeployments, Deployment("d", 1)).code, 201);
  auto json_form = [](const char* as) { return MetadataAccept(as, false); };
  struct Case {
    const char* method;
    std::string target;
    const char* as;
    std::string message;
  } cases[] = {
      {"GET", std::string(kConfigMaps) + "/a", "PartialObjectMetadataList",
       "you requested PartialObjectMetadataList, but the requested object "
       "is not a list (*core.ConfigMap)"},
      {"GET", kConfigMaps, "PartialObjectMetadata",
       "you requested PartialObjectMetadata, but the requested object is a "
       "list (*core.ConfigMapList)"},
      {"GET", std::string(kDeployments) + "/d", "PartialObjectMetadataList",
       "you requested PartialObjectMetadataList, but the requested object "
       "is not a list (*apps.Deployment)"},
      {"DELETE", kConfigMaps, "PartialObjectMetadata",
       "you requested PartialObjectMetadata, but the requested object is a "
       "list (*core.ConfigMapList)"},
      {"POST", kConfigMaps, "PartialObjectMetadataList",
       "you requested PartialObjectMetadataList, but the requested object "
       "is not a list (*core.ConfigMap)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " " + c.target + " as=" + c.as);
    Response r = s.Do(c.method, c.target,
                      std::string(c.method) == "POST" ? ConfigMap("b") : "",
                      {{"Accept", json_form(c.as)}});
    ExpectStatus(r, 406, "NotAcceptable");
    EXPECT_EQ(r.Str({"message"}), c.message);
  }
  // Neither the POST nor the DELETECOLLECTION happened.
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/b").code, 404);
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/a").code, 200);
  // The fitting forms are served.
  EXPECT_EQ(
      s.Get(std::string(kConfigMaps) + "/a", json_form("PartialObjectMetadata"))
          .Str({"kind"}),
      "PartialObjectMetadata");
  EXPECT_EQ(
      s.Get(kConfigMaps, json_form("PartialObjectMetadataList")).Str({"kind"}),
      "PartialObjectMetadataList");
  // A DELETECOLLECTION in the list form answers the deleted objects in it,
  // in the media type asked for.
  Response gone =
      s.Do("DELETE", kConfigMaps, "",
           {{"Accept", MetadataAccept("PartialObjectMetadataList", true)}});
  ASSERT_EQ(gone.code, 200) << gone.body;
  objects::metav1::PartialObjectMetadataList deleted;
  EXPECT_EQ(ProtobufAnswer(gone, &deleted).kind, "PartialObjectMetadataList");
  ASSERT_EQ(deleted.items_size(), 1);
  EXPECT_EQ(deleted.items(0).metadata().name(), "a");
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/a").code, 404);
}

// A DELETE answered with a Status (ConfigMaps) gives it in the media type
// asked for, also when the request asked for the metadata form: protobuf,
// as kube-apiserver does (a Status is never converted).
TEST(ApiRestTest, DeleteStatusForAProtobufMetadataClientIsProtobuf) {
  TestServer s;
  Response c = s.Post(kConfigMaps, ConfigMap("gone"));
  ASSERT_EQ(c.code, 201);
  Response d =
      s.Do("DELETE", std::string(kConfigMaps) + "/gone", "",
           {{"Accept", MetadataAccept("PartialObjectMetadata", true)}});
  ASSERT_EQ(d.code, 200) << d.body;
  objects::metav1::Status status;
  objects::TypeMeta type = ProtobufAnswer(d, &status);
  EXPECT_EQ(type.kind, "Status");
  EXPECT_EQ(type.api_version, "v1");
  EXPECT_EQ(status.status(), "Success");
  EXPECT_EQ(status.details().name(), "gone");
  EXPECT_EQ(status.details().uid(), c.Str({"metadata", "uid"}));
}

TEST(ApiRestTest, TablesWithPartialObjectMetadata) {
  TestServer s;
  ASSERT_EQ(s.Post(kPods, Pod("web", R"(,"labels":{"app":"web"})")).code, 201);
  const std::string table_accept =
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
  Response t = s.Get(std::string(kPods) + "?limit=500", table_accept);
  ASSERT_EQ(t.code, 200) << t.body;
  EXPECT_EQ(t.Str({"kind"}), "Table");
  EXPECT_EQ(t.Str({"apiVersion"}), "meta.k8s.io/v1");
  const rapidjson::Value& cols = *t.At({"columnDefinitions"});
  ASSERT_GE(cols.Size(), 5u);
  EXPECT_STREQ(cols[0]["name"].GetString(), "Name");
  EXPECT_STREQ(cols[0]["format"].GetString(), "name");
  const rapidjson::Value& rows = *t.At({"rows"});
  ASSERT_EQ(rows.Size(), 1u);
  EXPECT_STREQ(rows[0]["cells"][0].GetString(), "web");
  EXPECT_EQ(rows[0]["cells"].Size(), cols.Size());
  const rapidjson::Value& obj = rows[0]["object"];
  EXPECT_STREQ(obj["kind"].GetString(), "PartialObjectMetadata");
  EXPECT_STREQ(obj["apiVersion"].GetString(), "meta.k8s.io/v1");
  EXPECT_STREQ(obj["metadata"]["namespace"].GetString(), "default");
  EXPECT_STREQ(obj["metadata"]["labels"]["app"].GetString(), "web");

  Response full =
      s.Get(std::string(kPods) + "?includeObject=Object", table_accept);
  EXPECT_STREQ((*full.At({"rows"}))[0]["object"]["kind"].GetString(), "Pod");
  Response none =
      s.Get(std::string(kPods) + "?includeObject=None", table_accept);
  EXPECT_FALSE((*none.At({"rows"}))[0].HasMember("object"));

  Response one = s.Get(std::string(kPods) + "/web", table_accept);
  ASSERT_EQ(one.code, 200);
  EXPECT_EQ(one.Str({"kind"}), "Table");
  EXPECT_EQ(one.At({"rows"})->Size(), 1u);

  Response v1beta1 =
      s.Get(kPods, "application/json;as=Table;v=v1beta1;g=meta.k8s.io");
  EXPECT_EQ(v1beta1.Str({"apiVersion"}), "meta.k8s.io/v1beta1");
}

TEST(ApiRestTest, ListSelectorsAndPagination) {
  TestServer s;
  for (int i = 0; i < 5; ++i) {
    std::string labels = i % 2 == 0 ? R"({"tier":"a"})" : R"({"tier":"b"})";
    ASSERT_EQ(
        s.Post(kConfigMaps, ConfigMap("cm" + std::to_string(i), labels)).code,
        201);
  }
  Response a = s.Get(std::string(kConfigMaps) + "?labelSelector=tier%3Da");
  EXPECT_EQ(a.At({"items"})->Size(), 3u);
  Response in = s.Get(std::string(kConfigMaps) +
                      "?labelSelector=tier%20in%20(a,b),tier!%3Dc");
  EXPECT_EQ(in.At({"items"})->Size(), 5u) << in.body;
  Response name =
      s.Get(std::string(kConfigMaps) + "?fieldSelector=metadata.name%3Dcm3");
  ASSERT_EQ(name.At({"items"})->Size(), 1u);
  EXPECT_STREQ((*name.At({"items"}))[0]["metadata"]["name"].GetString(), "cm3");
  Response bad = s.Get(std::string(kConfigMaps) + "?fieldSelector=spec.x%3D1");
  ExpectStatus(bad, 400, "BadRequest");
  EXPECT_EQ(bad.Str({"message"}), "field label not supported: spec.x");
  Response bad_label = s.Get(std::string(kConfigMaps) + "?labelSelector=a%20b");
  EXPECT_EQ(bad_label.code, 400);

  // Pages of 2 share the first page's resourceVersion.
  Response p1 = s.Get(std::string(kConfigMaps) + "?limit=2");
  ASSERT_EQ(p1.At({"items"})->Size(), 2u);
  std::string token = p1.Str({"metadata", "continue"});
  ASSERT_FALSE(token.empty());
  const std::string rv = p1.Str({"metadata", "resourceVersion"});
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("zz-late")).code, 201);
  std::vector<std::string> names;
  for (const auto& it : p1.At({"items"})->GetArray()) {
    names.push_back(it["metadata"]["name"].GetString());
  }
  while (!token.empty()) {
    Response p = s.Get(std::string(kConfigMaps) +
                       "?limit=2&continue=" + net::QueryEscape(token));
    ASSERT_EQ(p.code, 200) << p.body;
    EXPECT_EQ(p.Str({"metadata", "resourceVersion"}), rv);
    for (const auto& it : p.At({"items"})->GetArray()) {
      names.push_back(it["metadata"]["name"].GetString());
    }
    token = p.Str({"metadata", "continue"});
  }
  // The snapshot: the object created after the first page is not in it.
  EXPECT_EQ(names,
            (std::vector<std::string>{"cm0", "cm1", "cm2", "cm3", "cm4"}));

  Response garbage = s.Get(std::string(kConfigMaps) + "?limit=2&continue=xyz");
  EXPECT_EQ(garbage.code, 400);
}

TEST(ApiRestTest, ContinueTokenPastCompactionIsExpired) {
  TestServer s;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("cm" + std::to_string(i))).code,
              201);
  }
  Response p1 = s.Get(std::string(kConfigMaps) + "?limit=1");
  std::string token = p1.Str({"metadata", "continue"});
  ASSERT_FALSE(token.empty());
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("later")).code, 201);
  etcdserverpb::CompactionRequest req;
  req.set_revision(s.store()->mvcc()->CurrentRevision());
  req.set_physical(true);
  ASSERT_TRUE(s.store()->Compact(req).ok());
  Response p2 = s.Get(std::string(kConfigMaps) +
                      "?limit=1&continue=" + net::QueryEscape(token));
  ExpectStatus(p2, 410, "Expired");
  // As kube-apiserver: the Status offers the rest of the list at the
  // latest revision (an inconsistent continue), and says so.
  EXPECT_NE(p2.Str({"message"})
                .find("use the continue token in this "
                      "response to retrieve the remainder"),
            std::string::npos)
      << p2.body;
  const std::string rest_token = p2.Str({"metadata", "continue"});
  ASSERT_FALSE(rest_token.empty()) << p2.body;
  std::vector<std::string> rest;
  std::string next = rest_token;
  while (!next.empty()) {
    Response page = s.Get(std::string(kConfigMaps) +
                          "?limit=1&continue=" + net::QueryEscape(next));
    ASSERT_EQ(page.code, 200) << page.body;
    for (const auto& it : page.At({"items"})->GetArray()) {
      rest.push_back(it["metadata"]["name"].GetString());
    }
    next = page.Str({"metadata", "continue"});
  }
  // After cm0: the later write shows up (the list is not consistent).
  EXPECT_EQ(rest, (std::vector<std::string>{"cm1", "cm2", "later"}));
}

TEST(ApiRestTest, TooLargeResourceVersionTimesOut) {
  TestServer s([](ApiServerOptions* o) {
    o->cacher.consistent_read_wait = milliseconds(100);
  });
  Response r = s.Get(std::string(kConfigMaps) + "?resourceVersion=999999");
  ExpectStatus(r, 504, "Timeout");
  EXPECT_EQ(r.headers.Get("Retry-After"), "1");
  EXPECT_NE(r.Str({"message"}).find("Too large resource version"),
            std::string::npos)
      << r.body;
  ExpectStatus(s.Get(std::string(kPods) + "/x/status/extra"), 404, "NotFound");
}

TEST(ApiRestTest, ResourceVersionMatchValidation) {
  TestServer s;
  Response r = s.Get(std::string(kConfigMaps) + "?resourceVersionMatch=Exact");
  ExpectStatus(r, 422, "Invalid");
  Response exact = s.Get(std::string(kConfigMaps) +
                         "?resourceVersion=1&resourceVersionMatch=Exact");
  EXPECT_EQ(exact.code, 200) << exact.body;
  EXPECT_EQ(exact.Str({"metadata", "resourceVersion"}), "1");
}

TEST(ApiRestTest, UpdateConflictsOnStaleResourceVersion) {
  TestServer s;
  Response c = s.Post(kConfigMaps, ConfigMap("cfg"));
  ASSERT_EQ(c.code, 201);
  const std::string rv = c.Str({"metadata", "resourceVersion"});
  std::string updated = R"({"metadata":{"name":"cfg","resourceVersion":")" +
                        rv + R"("},"data":{"k":"v2"}})";
  Response u = s.Put(std::string(kConfigMaps) + "/cfg", updated);
  ASSERT_EQ(u.code, 200) << u.body;
  EXPECT_NE(u.Str({"metadata", "resourceVersion"}), rv);
  EXPECT_EQ(u.Str({"metadata", "uid"}), c.Str({"metadata", "uid"}));
  Response stale = s.Put(std::string(kConfigMaps) + "/cfg", updated);
  ExpectStatus(stale, 409, "Conflict");
  EXPECT_EQ(stale.Str({"message"}),
            "Operation cannot be fulfilled on configmaps \"cfg\": the object "
            "has been modified; please apply your changes to the latest "
            "version and try again");
  Response wrong_name = s.Put(std::string(kConfigMaps) + "/cfg",
                              R"({"metadata":{"name":"other"}})");
  ExpectStatus(wrong_name, 400, "BadRequest");
  Response missing = s.Put(std::string(kConfigMaps) + "/none",
                           R"({"metadata":{"name":"none"}})");
  ExpectStatus(missing, 404, "NotFound");
}

TEST(ApiRestTest, StatusIgnoredOnMainResourceAndSpecOnStatus) {
  TestServer s;
  Response c = s.Post(kDeployments, Deployment("web", 2));
  ASSERT_EQ(c.code, 201);
  EXPECT_EQ((*c.At({"metadata", "generation"})).GetInt(), 1);
  // A main-resource patch that touches status: status is ignored, the
  // spec change bumps generation.
  Response p = s.Patch(std::string(kDeployments) + "/web",
                       R"({"spec":{"replicas":3},"status":{"replicas":9}})",
                       "application/merge-patch+json");
  ASSERT_EQ(p.code, 200) << p.body;
  EXPECT_EQ((*p.At({"spec", "replicas"})).GetInt(), 3);
  EXPECT_EQ(p.At({"status", "replicas"}), nullptr) << p.body;
  EXPECT_EQ((*p.At({"metadata", "generation"})).GetInt(), 2);
  // /status: the spec change is ignored, status kept.
  Response st = s.Patch(
      std::string(kDeployments) + "/web/status",
      R"({"spec":{"replicas":7},"status":{"replicas":3,"observedGeneration":2}})",
      "application/merge-patch+json");
  ASSERT_EQ(st.code, 200) << st.body;
  EXPECT_EQ((*st.At({"spec", "replicas"})).GetInt(), 3);
  EXPECT_EQ((*st.At({"status", "replicas"})).GetInt(), 3);
  EXPECT_EQ((*st.At({"metadata", "generation"})).GetInt(), 2);
  Response get_status = s.Get(std::string(kDeployments) + "/web/status");
  EXPECT_EQ(get_status.Str({"kind"}), "Deployment");
}

TEST(ApiRestTest, PatchFlavours) {
  TestServer s;
  ASSERT_EQ(s.Post(kDeployments, Deployment("web", 1)).code, 201);
  const std::string url = std::string(kDeployments) + "/web";
  // kubectl label: merge patch.
  Response label = s.Patch(url + "?fieldManager=kubectl-label",
                           R"({"metadata":{"labels":{"tier":"frontend"}}})",
                           "application/merge-patch+json");
  ASSERT_EQ(label.code, 200) << label.body;
  EXPECT_EQ(label.Str({"metadata", "labels", "tier"}), "frontend");
  // kubectl apply / set image: strategic merge by container name.
  Response smp = s.Patch(
      url,
      R"({"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"},{"name":"side"}],"containers":[{"name":"nginx","image":"nginx:1.28"},{"name":"side","image":"busybox"}]}}}})",
      "application/strategic-merge-patch+json");
  ASSERT_EQ(smp.code, 200) << smp.body;
  const rapidjson::Value& cs =
      *smp.At({"spec", "template", "spec", "containers"});
  ASSERT_EQ(cs.Size(), 2u);
  EXPECT_STREQ(cs[0]["image"].GetString(), "nginx:1.28");
  EXPECT_STREQ(cs[1]["name"].GetString(), "side");
  // JSON patch.
  Response jp =
      s.Patch(url, R"([{"op":"replace","path":"/spec/replicas","value":4}])",
              "application/json-patch+json");
  ASSERT_EQ(jp.code, 200) << jp.body;
  EXPECT_EQ((*jp.At({"spec", "replicas"})).GetInt(), 4);
  Response failed_test =
      s.Patch(url, R"([{"op":"test","path":"/spec/replicas","value":99}])",
              "application/json-patch+json");
  EXPECT_EQ(failed_test.code, 422) << failed_test.body;
  // An operation that cannot be carried out is the patch not applying
  // (422, as kube answers jsonpatch's errors); a body that is not a list
  // of operations is a bad request.
  for (const char* ops :
       {R"([{"op":"frob","path":"/a"}])", R"([{"path":"/spec"}])",
        R"([{"op":"move","path":"/spec/x"}])",
        R"([{"op":"add","path":"spec","value":1}])"}) {
    Response r = s.Patch(url, ops, "application/json-patch+json");
    ExpectStatus(r, 422, "Invalid");
  }
  ExpectStatus(s.Patch(url, R"(["add"])", "application/json-patch+json"), 400,
               "BadRequest");
  // A resourceVersion in a patch is a precondition.
  Response stale = s.Patch(url, R"({"metadata":{"resourceVersion":"1"}})",
                           "application/merge-patch+json");
  ExpectStatus(stale, 409, "Conflict");
  Response missing = s.Patch(std::string(kDeployments) + "/none", "{}",
                             "application/merge-patch+json");
  ExpectStatus(missing, 404, "NotFound");
  Response malformed = s.Patch(url, "{", "application/merge-patch+json");
  ExpectStatus(malformed, 400, "BadRequest");
}

// Server-side apply has no strategic merge directives: kube's structured
// merge reads such names as ordinary fields, and so does the apply here.
// In a built-in type they are a key its validation refuses or an unknown
// field (a warning, or 400 under Strict); nothing another manager owns is
// dropped by them.
TEST(ApiRestTest, ServerSideApplyReadsDirectiveNamesAsFields) {
  TestServer s;
  const std::string url = std::string(kConfigMaps) + "/shared";
  Response created = s.Patch(
      url + "?fieldManager=first",
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared",)"
      R"("finalizers":["example.com/keep"]},"data":{"a":"1"}})",
      "application/apply-patch+yaml");
  ASSERT_EQ(created.code, 201) << created.body;
  Response key = s.Patch(
      url + "?fieldManager=second",
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared"},)"
      R"("data":{"$patch":"delete"}})",
      "application/apply-patch+yaml");
  ExpectStatus(key, 422, "Invalid");
  EXPECT_NE(key.Str({"message"}).find("data[$patch]"), std::string::npos)
      << key.body;
  const char* unknown[] = {
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared",)"
      R"("$deleteFromPrimitiveList/finalizers":["example.com/keep"]}})",
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared"},)"
      R"("$retainKeys":["metadata"]})"};
  for (const char* body : unknown) {
    Response strict =
        s.Patch(url + "?fieldManager=second&fieldValidation=Strict", body,
                "application/apply-patch+yaml");
    ExpectStatus(strict, 400, "BadRequest");
    Response warned = s.Patch(url + "?fieldManager=second", body,
                              "application/apply-patch+yaml");
    ASSERT_EQ(warned.code, 200) << warned.body;
    EXPECT_NE(warned.headers.Get("Warning").find("unknown field"),
              std::string::npos);
  }
  Response got = s.Get(url);
  ASSERT_EQ(got.code, 200);
  EXPECT_EQ(got.Str({"data", "a"}), "1");
  const rapidjson::Value* fin = got.At({"metadata", "finalizers"});
  ASSERT_NE(fin, nullptr);
  EXPECT_EQ(fin->Size(), 1u);
}

TEST(ApiRestTest, ServerSideApply) {
  TestServer s;
  const std::string url = std::string(kDeployments) + "/web";
  Response no_manager =
      s.Patch(url, Deployment("web", 1), "application/apply-patch+yaml");
  ExpectStatus(no_manager, 422, "Invalid");
  Response created =
      s.Patch(url + "?fieldManager=kubectl&force=false", Deployment("web", 1),
              "application/apply-patch+yaml");
  ASSERT_EQ(created.code, 201) << created.body;
  const rapidjson::Value* mf = created.At({"metadata", "managedFields"});
  ASSERT_NE(mf, nullptr);
  ASSERT_EQ(mf->Size(), 1u);
  EXPECT_STREQ((*mf)[0]["manager"].GetString(), "kubectl");
  EXPECT_STREQ((*mf)[0]["operation"].GetString(), "Apply");
  // Re-apply with a change: 200.
  Response updated =
      s.Patch(url + "?fieldManager=kubectl", Deployment("web", 3),
              "application/apply-patch+yaml");
  ASSERT_EQ(updated.code, 200) << updated.body;
  EXPECT_EQ((*updated.At({"spec", "replicas"})).GetInt(), 3);
  // Another manager changes replicas with an ordinary update...
  ASSERT_EQ(
      s.Patch(url + "?fieldManager=kubectl-scale", R"({"spec":{"replicas":5}})",
              "application/merge-patch+json")
          .code,
      200);
  // ...so applying replicas again conflicts, unless forced.
  Response conflict =
      s.Patch(url + "?fieldManager=kubectl", Deployment("web", 3),
              "application/apply-patch+yaml");
  ExpectStatus(conflict, 409, "Conflict");
  const rapidjson::Value* causes = conflict.At({"details", "causes"});
  ASSERT_NE(causes, nullptr);
  EXPECT_STREQ((*causes)[0]["reason"].GetString(), "FieldManagerConflict");
  EXPECT_STREQ((*causes)[0]["field"].GetString(), ".spec.replicas");
  Response forced =
      s.Patch(url + "?fieldManager=kubectl&force=true", Deployment("web", 3),
              "application/apply-patch+yaml");
  ASSERT_EQ(forced.code, 200) << forced.body;
  EXPECT_EQ((*forced.At({"spec", "replicas"})).GetInt(), 3);
}

// The managedFields entry of `manager`/`operation` through `subresource`
// ("" for the main resource); null when there is none.
const rapidjson::Value* EntryOf(const Response& r, const std::string& manager,
                                const std::string& operation,
                                const std::string& subresource) {
  const rapidjson::Value* mf = r.At({"metadata", "managedFields"});
  if (mf == nullptr || !mf->IsArray()) return nullptr;
  for (const rapidjson::Value& e : mf->GetArray()) {
    const std::string sub =
        e.HasMember("subresource") ? e["subresource"].GetString() : "";
    if (e["manager"].GetString() == manager &&
        e["operation"].GetString() == operation && sub == subresource) {
      return &e;
    }
  }
  return nullptr;
}

// kube identifies a managedFields entry by manager, operation and
// subresource (buildManagerInfo): an apply or update through /status is
// an entry of its own, beside the same manager's for the main resource,
// and neither prunes nor takes what the other owns.
TEST(ApiRestTest, WritesThroughASubresourceAreEntriesOfTheirOwn) {
  TestServer s;
  const std::string url = std::string(kDeployments) + "/xd";
  const std::string main =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"xd",)"
      R"("labels":{"team":"a"},"annotations":{"note":"keep"}},"spec":{)"
      R"("replicas":2,"selector":{"matchLabels":{"app":"xd"}},"template":{)"
      R"("metadata":{"labels":{"app":"xd"}},"spec":{"containers":[{)"
      R"("name":"nginx","image":"nginx:1.27"}]}}}})";
  Response created =
      s.Patch(url + "?fieldManager=X", main, "application/apply-patch+yaml");
  ASSERT_EQ(created.code, 201) << created.body;
  Response status = s.Patch(
      url + "/status?fieldManager=X",
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"xd"},)"
      R"("status":{"replicas":1}})",
      "application/apply-patch+yaml");
  ASSERT_EQ(status.code, 200) << status.body;
  EXPECT_EQ(status.Str({"metadata", "annotations", "note"}), "keep")
      << status.body;
  EXPECT_EQ(status.Str({"metadata", "labels", "team"}), "a") << status.body;
  EXPECT_EQ(status.At({"status", "replicas"})->GetInt(), 1);
  const rapidjson::Value* mf = status.At({"metadata", "managedFields"});
  ASSERT_NE(mf, nullptr);
  EXPECT_EQ(mf->Size(), 2u) << status.body;
  const rapidjson::Value* x_main = EntryOf(status, "X", "Apply", "");
  const rapidjson::Value* x_status = EntryOf(status, "X", "Apply", "status");
  ASSERT_NE(x_main, nullptr) << status.body;
  ASSERT_NE(x_status, nullptr) << status.body;
  EXPECT_TRUE(
      (*x_main)["fieldsV1"]["f:metadata"]["f:annotations"].HasMember("f:note"));
  EXPECT_TRUE((*x_main)["fieldsV1"]["f:spec"].HasMember("f:replicas"));
  EXPECT_FALSE((*x_main)["fieldsV1"].HasMember("f:status"));
  EXPECT_TRUE((*x_status)["fieldsV1"]["f:status"].HasMember("f:replicas"));
  EXPECT_FALSE((*x_status)["fieldsV1"].HasMember("f:metadata"));
  EXPECT_FALSE((*x_status)["fieldsV1"].HasMember("f:spec"));

  // The stored object says the same.
  Response got = s.Get(url);
  ASSERT_EQ(got.code, 200);
  EXPECT_EQ(got.Str({"metadata", "annotations", "note"}), "keep");
  EXPECT_NE(EntryOf(got, "X", "Apply", "status"), nullptr) << got.body;

  // X still owns spec.replicas: another applier changing it conflicts.
  Response conflict = s.Patch(
      url + "?fieldManager=Y",
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"xd"},)"
      R"("spec":{"replicas":5}})",
      "application/apply-patch+yaml");
  ExpectStatus(conflict, 409, "Conflict");
  EXPECT_NE(conflict.Str({"message"}).find("conflict with \"X\""),
            std::string::npos)
      << conflict.body;

  // Updates through /status (merge patch, then PUT) by ctrl: an Update
  // entry with subresource "status", not one of the main resource.
  Response patched = s.Patch(url + "/status?fieldManager=ctrl",
                             R"({"status":{"observedGeneration":1}})",
                             "application/merge-patch+json");
  ASSERT_EQ(patched.code, 200) << patched.body;
  const rapidjson::Value* ctrl = EntryOf(patched, "ctrl", "Update", "status");
  ASSERT_NE(ctrl, nullptr) << patched.body;
  EXPECT_TRUE(
      (*ctrl)["fieldsV1"]["f:status"].HasMember("f:observedGeneration"));
  EXPECT_EQ(EntryOf(patched, "ctrl", "Update", ""), nullptr) << patched.body;
  Response before_put = s.Get(url);
  ASSERT_EQ(before_put.code, 200);
  std::string put_body = before_put.body;
  const std::string from = "\"observedGeneration\":1";
  const size_t at = put_body.find(from);
  ASSERT_NE(at, std::string::npos) << put_body;
  put_body.replace(at, from.size(), "\"observedGeneration\":2");
  Response put = s.Put(url + "/status?fieldManager=ctrl", put_body);
  ASSERT_EQ(put.code, 200) << put.body;
  EXPECT_EQ(put.At({"status", "observedGeneration"})->GetInt(), 2);
  EXPECT_NE(EntryOf(put, "ctrl", "Update", "status"), nullptr) << put.body;
  EXPECT_EQ(EntryOf(put, "ctrl", "Update", ""), nullptr) << put.body;
  // X's main entry and its annotation are untouched by all of it.
  EXPECT_EQ(put.Str({"metadata", "annotations", "note"}), "keep");
  ASSERT_NE(EntryOf(put, "X", "Apply", ""), nullptr) << put.body;
}

TEST(ApiRestTest, DryRunWritesNothing) {
  TestServer s;
  Response c =
      s.Post(std::string(kConfigMaps) + "?dryRun=All", ConfigMap("dry"));
  ASSERT_EQ(c.code, 201) << c.body;
  EXPECT_FALSE(c.Str({"metadata", "uid"}).empty());
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/dry").code, 404);
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("real")).code, 201);
  Response p =
      s.Patch(std::string(kConfigMaps) + "/real?dryRun=All",
              R"({"data":{"k":"changed"}})", "application/merge-patch+json");
  ASSERT_EQ(p.code, 200);
  EXPECT_EQ(p.Str({"data", "k"}), "changed");
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/real").Str({"data", "k"}), "v");
  Response d = s.Delete(std::string(kConfigMaps) + "/real?dryRun=All");
  ASSERT_EQ(d.code, 200);
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/real").code, 200);
}

TEST(ApiRestTest, DeleteAnswersAndPreconditions) {
  TestServer s;
  Response c = s.Post(kConfigMaps, ConfigMap("gone"));
  ASSERT_EQ(c.code, 201);
  Response wrong_uid = s.Delete(std::string(kConfigMaps) + "/gone",
                                R"({"preconditions":{"uid":"nope"}})");
  ExpectStatus(wrong_uid, 409, "Conflict");
  Response d = s.Delete(std::string(kConfigMaps) + "/gone",
                        R"({"propagationPolicy":"Background"})");
  ASSERT_EQ(d.code, 200) << d.body;
  EXPECT_EQ(d.Str({"kind"}), "Status");
  EXPECT_EQ(d.Str({"status"}), "Success");
  EXPECT_EQ(d.Str({"details", "name"}), "gone");
  EXPECT_EQ(d.Str({"details", "kind"}), "configmaps");
  EXPECT_EQ(d.Str({"details", "uid"}), c.Str({"metadata", "uid"}));
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/gone").code, 404);
  ExpectStatus(s.Delete(std::string(kConfigMaps) + "/gone"), 404, "NotFound");
  // Pods answer with the object.
  ASSERT_EQ(s.Post(kPods, Pod("p")).code, 201);
  Response dp = s.Delete(std::string(kPods) + "/p");
  ASSERT_EQ(dp.code, 200);
  EXPECT_EQ(dp.Str({"kind"}), "Pod");
  EXPECT_EQ(s.Get(std::string(kPods) + "/p").code, 404);
}

TEST(ApiRestTest, FinalizersKeepAnObjectUntilRemoved) {
  TestServer s;
  ASSERT_EQ(
      s.Post(kConfigMaps,
             R"({"metadata":{"name":"f","finalizers":["example.com/hold"]}})")
          .code,
      201);
  Response d = s.Delete(std::string(kConfigMaps) + "/f");
  ASSERT_EQ(d.code, 200) << d.body;
  EXPECT_EQ(d.Str({"kind"}), "ConfigMap");
  EXPECT_FALSE(d.Str({"metadata", "deletionTimestamp"}).empty());
  Response still = s.Get(std::string(kConfigMaps) + "/f");
  ASSERT_EQ(still.code, 200);
  EXPECT_FALSE(still.Str({"metadata", "deletionTimestamp"}).empty());
  // No new finalizers on a deleting object.
  Response add =
      s.Patch(std::string(kConfigMaps) + "/f",
              R"({"metadata":{"finalizers":["example.com/hold","x.io/y"]}})",
              "application/merge-patch+json");
  ExpectStatus(add, 422, "Invalid");
  // Removing the last finalizer deletes it.
  Response rm = s.Patch(std::string(kConfigMaps) + "/f",
                        R"({"metadata":{"finalizers":null}})",
                        "application/merge-patch+json");
  ASSERT_EQ(rm.code, 200) << rm.body;
  EXPECT_EQ(s.Get(std::string(kConfigMaps) + "/f").code, 404);
}

TEST(ApiRestTest, PropagationPolicyFinalizers) {
  TestServer s;
  ASSERT_EQ(s.Post(kDeployments, Deployment("o", 1)).code, 201);
  Response orphan = s.Delete(std::string(kDeployments) + "/o",
                             R"({"propagationPolicy":"Orphan"})");
  ASSERT_EQ(orphan.code, 200);
  const rapidjson::Value* f = orphan.At({"metadata", "finalizers"});
  ASSERT_NE(f, nullptr);
  EXPECT_STREQ((*f)[0].GetString(), "orphan");
  ASSERT_EQ(s.Post(kDeployments, Deployment("fg", 1)).code, 201);
  Response fg =
      s.Delete(std::string(kDeployments) + "/fg?propagationPolicy=Foreground");
  ASSERT_EQ(fg.code, 200);
  EXPECT_STREQ((*fg.At({"metadata", "finalizers"}))[0].GetString(),
               "foregroundDeletion");
  EXPECT_EQ(s.Get(std::string(kDeployments) + "/fg").code, 200);
  Response bad = s.Delete(std::string(kDeployments) + "/fg",
                          R"({"propagationPolicy":"Sideways"})");
  ExpectStatus(bad, 422, "Invalid");
}

TEST(ApiRestTest, GracefulPodDeletion) {
  TestServer s;
  ASSERT_EQ(
      s.Post(kPods,
             Pod("bound", "",
                 R"(,"nodeName":"node-1","terminationGracePeriodSeconds":30)"))
          .code,
      201);
  Response d = s.Delete(std::string(kPods) + "/bound");
  ASSERT_EQ(d.code, 200) << d.body;
  EXPECT_FALSE(d.Str({"metadata", "deletionTimestamp"}).empty());
  EXPECT_EQ((*d.At({"metadata", "deletionGracePeriodSeconds"})).GetInt(), 30);
  EXPECT_EQ(s.Get(std::string(kPods) + "/bound").code, 200);
  // Asking again with the same grace changes nothing.
  Response again = s.Delete(std::string(kPods) + "/bound");
  EXPECT_EQ(again.Str({"metadata", "resourceVersion"}),
            d.Str({"metadata", "resourceVersion"}));
  // The kubelet's final delete (grace 0) removes it.
  Response final_delete =
      s.Delete(std::string(kPods) + "/bound", R"({"gracePeriodSeconds":0})");
  ASSERT_EQ(final_delete.code, 200);
  EXPECT_EQ(s.Get(std::string(kPods) + "/bound").code, 404);
}

TEST(ApiRestTest, DeleteCollectionBySelector) {
  TestServer s;
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("a", R"({"x":"1"})")).code, 201);
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("b", R"({"x":"1"})")).code, 201);
  ASSERT_EQ(s.Post(kConfigMaps, ConfigMap("c", R"({"x":"2"})")).code, 201);
  Response d = s.Delete(std::string(kConfigMaps) + "?labelSelector=x%3D1");
  ASSERT_EQ(d.code, 200) << d.body;
  EXPECT_EQ(d.Str({"kind"}), "ConfigMapList");
  EXPECT_EQ(d.At({"items"})->Size(), 2u);
  Response left = s.Get(kConfigMaps);
  ASSERT_EQ(left.At({"items"})->Size(), 1u);
  EXPECT_STREQ((*left.At({"items"}))[0]["metadata"]["name"].GetString(), "c");
}

TEST(ApiRestTest, NamespaceGoesOnlyThroughFinalize) {
  TestServer s;
  ASSERT_EQ(
      s.Post("/api/v1/namespaces", R"({"metadata":{"name":"team"}})").code,
      201);
  // Content that stays for the whole test whoever deletes it: a pod bound
  // to a node without a kubelet, with an hour of grace.
  ASSERT_EQ(
      s.Post(
           "/api/v1/namespaces/team/pods",
           Pod("p", "",
               R"(,"nodeName":"node-1","terminationGracePeriodSeconds":3600)"))
          .code,
      201);
  Response d = s.Delete("/api/v1/namespaces/team");
  ASSERT_EQ(d.code, 200) << d.body;
  EXPECT_EQ(d.Str({"status", "phase"}), "Terminating");
  // The admission check reads the namespaces watch cache, as kube's
  // NamespaceLifecycle reads its informer: a list not older than the
  // deletion's revision waits until the cache has seen it.
  ASSERT_EQ(s.Get("/api/v1/namespaces?resourceVersionMatch=NotOlderThan&"
                  "resourceVersion=" +
                  d.Str({"metadata", "resourceVersion"}))
                .code,
            200);
  // No new content in a terminating namespace.
  Response create =
      s.Post("/api/v1/namespaces/team/configmaps", ConfigMap("b"));
  ExpectStatus(create, 403, "Forbidden");
  // Neither a second DELETE nor an update ends it while its spec finalizer
  // ("kubernetes", the namespace controller's) remains; an update cannot
  // remove that finalizer.
  EXPECT_EQ(s.Delete("/api/v1/namespaces/team").code, 200);
  Response labelled =
      s.Patch("/api/v1/namespaces/team",
              R"({"metadata":{"labels":{"x":"1"}},"spec":{"finalizers":[]}})",
              "application/merge-patch+json");
  ASSERT_EQ(labelled.code, 200) << labelled.body;
  ASSERT_EQ(labelled.At({"spec", "finalizers"})->Size(), 1u);
  EXPECT_STREQ((*labelled.At({"spec", "finalizers"}))[0].GetString(),
               "kubernetes");
  EXPECT_EQ(s.Get("/api/v1/namespaces/team").code, 200);
  // /finalize is PUT only; it takes the spec, never the status.
  ExpectStatus(
      s.Patch("/api/v1/namespaces/team/finalize",
              R"({"spec":{"finalizers":[]}})", "application/merge-patch+json"),
      405, "MethodNotAllowed");
  Response fin = s.Put(
      "/api/v1/namespaces/team/finalize",
      R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"},)"
      R"("spec":{"finalizers":[]},"status":{"phase":"Active"}})");
  ASSERT_EQ(fin.code, 200) << fin.body;
  EXPECT_EQ(fin.Str({"status", "phase"}), "Terminating");
  // The last finalizer gone: the namespace with it.
  EXPECT_EQ(s.Get("/api/v1/namespaces/team").code, 404);
  ExpectStatus(s.Delete("/api/v1/namespaces/default"), 403, "Forbidden");
}

TEST(ApiRestTest, ScaleSubresource) {
  TestServer s;
  ASSERT_EQ(s.Post(kDeployments, Deployment("web", 2)).code, 201);
  Response g = s.Get(std::string(kDeployments) + "/web/scale");
  ASSERT_EQ(g.code, 200) << g.body;
  EXPECT_EQ(g.Str({"kind"}), "Scale");
  EXPECT_EQ(g.Str({"apiVersion"}), "autoscaling/v1");
  EXPECT_EQ((*g.At({"spec", "replicas"})).GetInt(), 2);
  Response p =
      s.Patch(std::string(kDeployments) + "/web/scale",
              R"({"spec":{"replicas":5}})", "application/merge-patch+json");
  ASSERT_EQ(p.code, 200) << p.body;
  EXPECT_EQ(p.Str({"kind"}), "Scale");
  EXPECT_EQ((*p.At({"spec", "replicas"})).GetInt(), 5);
  Response dep = s.Get(std::string(kDeployments) + "/web");
  EXPECT_EQ((*dep.At({"spec", "replicas"})).GetInt(), 5);
  EXPECT_EQ((*dep.At({"metadata", "generation"})).GetInt(), 2);
  Response stale = s.Put(
      std::string(kDeployments) + "/web/scale",
      R"({"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","resourceVersion":")" +
          g.Str({"metadata", "resourceVersion"}) +
          R"("},"spec":{"replicas":1}})");
  ExpectStatus(stale, 409, "Conflict");
  Response negative =
      s.Patch(std::string(kDeployments) + "/web/scale",
              R"({"spec":{"replicas":-1}})", "application/merge-patch+json");
  ExpectStatus(negative, 422, "Invalid");
}

TEST(ApiRestTest, PodBinding) {
  TestServer s;
  ASSERT_EQ(s.Post(kPods, Pod("b")).code, 201);
  const std::string binding =
      R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"b"},"target":{"kind":"Node","name":"node-7"}})";
  Response r = s.Post(std::string(kPods) + "/b/binding", binding);
  ASSERT_EQ(r.code, 201) << r.body;
  EXPECT_EQ(r.Str({"status"}), "Success");
  Response pod = s.Get(std::string(kPods) + "/b");
  EXPECT_EQ(pod.Str({"spec", "nodeName"}), "node-7");
  Response again = s.Post(std::string(kPods) + "/b/binding", binding);
  ExpectStatus(again, 409, "Conflict");
  // The older collection path.
  ASSERT_EQ(s.Post(kPods, Pod("b2")).code, 201);
  Response legacy =
      s.Post("/api/v1/namespaces/default/bindings",
             R"({"metadata":{"name":"b2"},"target":{"name":"node-8"}})");
  ASSERT_EQ(legacy.code, 201) << legacy.body;
  EXPECT_EQ(s.Get(std::string(kPods) + "/b2").Str({"spec", "nodeName"}),
            "node-8");
}

TEST(ApiRestTest, EventsGetAStorageLease) {
  TestServer s;
  Response e = s.Post(
      "/api/v1/namespaces/default/events",
      R"({"metadata":{"name":"ev1"},"involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"reason":"Started","message":"hi","type":"Normal"})");
  ASSERT_EQ(e.code, 201) << e.body;
  etcdserverpb::RangeRequest req;
  req.set_key("/registry/events/default/ev1");
  auto r = s.store()->Range(req);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->kvs_size(), 1);
  EXPECT_NE(r->kvs(0).lease(), 0);
}

TEST(ApiRestTest, ConcurrentWritersLoseNoUpdate) {
  TestServer s;
  ASSERT_EQ(
      s.Post(kConfigMaps, R"({"metadata":{"name":"counter"},"data":{"n":"0"}})")
          .code,
      201);
  constexpr int kWriters = 8;
  constexpr int kIncrements = 15;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&] {
      net::HttpClient client("127.0.0.1", s.port());
      for (int i = 0; i < kIncrements;) {
        auto g = testing::ToResponse(
            client.Request("GET", std::string(kConfigMaps) + "/counter"));
        int n = std::stoi(g.Str({"data", "n"}));
        std::string body =
            R"({"metadata":{"name":"counter","resourceVersion":")" +
            g.Str({"metadata", "resourceVersion"}) + R"("},"data":{"n":")" +
            std::to_string(n + 1) + "\"}}";
        auto u = testing::ToResponse(
            client.Request("PUT", std::string(kConfigMaps) + "/counter",
                           {{"Content-Type", "application/json"}}, body));
        if (u.code == 200) {
          ++i;
        } else {
          ASSERT_EQ(u.code, 409) << u.body;
          ++conflicts;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  Response final_state = s.Get(std::string(kConfigMaps) + "/counter");
  EXPECT_EQ(final_state.Str({"data", "n"}),
            std::to_string(kWriters * kIncrements));
  EXPECT_GT(conflicts.load(), 0);  // the writers did race
}

// Forwards to the store; a write whose request mentions `marker` (a
// Txn or Put carrying it in a key or value) waits in the store call until
// the test releases it, so a request can be held in flight while it is
// being served.
class HoldingKV : public storage::ForwardingKV {
 public:
  explicit HoldingKV(std::string marker) : marker_(std::move(marker)) {}
  void Wrap(storage::KV* real) { set_target(real); }
  // True once a held write is waiting (false at the test deadline).
  bool WaitHeld() { return held_.Wait(); }
  void Release() { release_.CountDown(); }

  StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& r) override {
    MaybeHold(r.SerializeAsString());
    return ForwardingKV::Put(r);
  }
  StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& r) override {
    MaybeHold(r.SerializeAsString());
    return ForwardingKV::Txn(r);
  }

 private:
  void MaybeHold(const std::string& request) {
    if (request.find(marker_) == std::string::npos) return;
    held_.CountDown();
    EXPECT_TRUE(release_.Wait());
  }

  const std::string marker_;
  net::testing::Latch held_;
  net::testing::Latch release_;
};

TEST(ApiRestTest, TooManyRequestsWhenOverTheInflightLimit) {
  HoldingKV kv("held-by-the-test");
  TestServer s([&](ApiServerOptions* o) {
    o->max_mutating_requests_inflight = 1;
    kv.Wrap(o->kv);
    o->kv = &kv;
  });
  // A create that is being served, and waits in the store, holds the only
  // mutating slot. (A body that never completes does not: see
  // api_lockout_test.)
  Response held;
  std::thread holder([&] {
    net::HttpClient c("127.0.0.1", s.port());
    held = testing::ToResponse(c.Request("POST", kConfigMaps,
                                         {{"Content-Type", "application/json"}},
                                         ConfigMap("held-by-the-test")));
  });
  bool is_held = kv.WaitHeld();
  EXPECT_TRUE(is_held);
  if (is_held) {
    // Reads (a different limit) still work while it is held...
    EXPECT_EQ(s.Get(kConfigMaps).code, 200);
    // ...writes get 429 with Retry-After until the slot frees.
    Response r = s.Post(kConfigMaps, ConfigMap("refused"));
    ExpectStatus(r, 429, "TooManyRequests");
    EXPECT_EQ(r.headers.Get("Retry-After"), "1");
  }
  kv.Release();
  holder.join();
  EXPECT_EQ(held.code, 201) << held.body;
  // Once it is done, the refused write goes through.
  Response retried = s.Post(kConfigMaps, ConfigMap("refused"));
  EXPECT_EQ(retried.code, 201) << retried.body;
}

// Calls `during` (once, from the store call) when a write mentions
// `marker`, then forwards it.
class CallingKV : public storage::ForwardingKV {
 public:
  CallingKV(std::string marker, std::function<void()> during)
      : marker_(std::move(marker)), during_(std::move(during)) {}
  void Wrap(storage::KV* real) { set_target(real); }

  StatusOr<etcdserverpb::PutResponse> Put(
      const etcdserverpb::PutRequest& r) override {
    MaybeCall(r.SerializeAsString());
    return ForwardingKV::Put(r);
  }
  StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& r) override {
    MaybeCall(r.SerializeAsString());
    return ForwardingKV::Txn(r);
  }

 private:
  void MaybeCall(const std::string& request) {
    if (request.find(marker_) == std::string::npos) return;
    std::call_once(once_, during_);
  }

  const std::string marker_;
  const std::function<void()> during_;
  std::once_flag once_;
};

// The system namespaces exist before the port answers anything: a client
// that does not wait for /readyz (the CI's first failure of stop 56: a
// create in "default" answered 404 under ASan) never meets a cluster
// without them.
TEST(ApiRestTest, NoRequestIsServedBeforeTheDefaultNamespaceExists) {
  StatusOr<uint16_t> port = storage::PickFreePort();
  ASSERT_TRUE(port.ok()) << port.status();
  std::optional<StatusOr<net::HttpResponse>> answer_while_creating;
  CallingKV kv("/namespaces/default", [&] {
    net::HttpClient c("127.0.0.1", *port);
    answer_while_creating = c.Request("GET", "/api/v1/namespaces/default");
  });
  TestServer s([&](ApiServerOptions* o) {
    o->port = *port;
    kv.Wrap(o->kv);
    o->kv = &kv;
  });
  ASSERT_TRUE(answer_while_creating.has_value());  // the marker matched
  EXPECT_FALSE(answer_while_creating->ok())
      << "answered " << (*answer_while_creating)->status << ": "
      << (*answer_while_creating)->body;
  EXPECT_EQ(s.Get("/api/v1/namespaces/default").code, 200);
}

// /readyz waits for Start's writes after the port listens, named as
// kube-apiserver's post-start hooks: while the "kubernetes" Service is
// being written it answers 500 and names the unfinished hook.
TEST(ApiRestTest, ReadyzWaitsForThePostStartHooks) {
  StatusOr<uint16_t> port = storage::PickFreePort();
  ASSERT_TRUE(port.ok()) << port.status();
  std::optional<StatusOr<net::HttpResponse>> terse, verbose;
  CallingKV kv("/services/default/kubernetes", [&] {
    net::HttpClient c("127.0.0.1", *port);
    terse = c.Request("GET", "/readyz");
    verbose = c.Request("GET", "/readyz?verbose");
  });
  TestServer s([&](ApiServerOptions* o) {
    o->port = *port;
    kv.Wrap(o->kv);
    o->kv = &kv;
  });
  ASSERT_TRUE(terse.has_value());  // the marker matched
  ASSERT_TRUE(terse->ok()) << terse->status();
  EXPECT_EQ((*terse)->status, 500);
  EXPECT_EQ((*terse)->body,
            "[-]poststarthook/rbac/bootstrap-roles failed: not finished\n"
            "[-]poststarthook/bootstrap-controller failed: not finished\n"
            "readyz check failed");
  ASSERT_TRUE(verbose->ok()) << verbose->status();
  EXPECT_EQ((*verbose)->status, 500);
  EXPECT_NE((*verbose)->body.find("[+]informer-sync ok\n"), std::string::npos)
      << (*verbose)->body;
  Response ready = s.Get("/readyz?verbose");
  EXPECT_EQ(ready.code, 200);
  EXPECT_NE(ready.body.find("[+]poststarthook/rbac/bootstrap-roles ok\n"
                            "[+]poststarthook/bootstrap-controller ok\n"
                            "readyz check passed\n"),
            std::string::npos)
      << ready.body;
  EXPECT_EQ(s.Get("/readyz").body, "ok");
}

TEST(ApiRestTest, RequestEntityTooLarge) {
  TestServer s([](ApiServerOptions* o) { o->max_request_body_bytes = 1024; });
  std::string big = R"({"metadata":{"name":"big"},"data":{"k":")" +
                    std::string(2000, 'x') + "\"}}";
  Response r = s.Post(kConfigMaps, big);
  ExpectStatus(r, 413, "RequestEntityTooLarge");
  EXPECT_EQ(r.Str({"message"}), "Request entity too large: limit is 1024");
  EXPECT_EQ(s.Post(kConfigMaps, ConfigMap("small")).code, 201);
}

TEST(ApiRestTest, MetricsCountRequests) {
  TestServer s;
  ASSERT_EQ(s.Get(std::string(kPods) + "/none").code, 404);
  ASSERT_EQ(s.Get(kPods).code, 200);
  Response m = s.Get("/metrics");
  ASSERT_EQ(m.code, 200);
  EXPECT_NE(
      m.body.find("apiserver_request_total{verb=\"GET\",group=\"\",version="
                  "\"v1\",resource=\"pods\",subresource=\"\",scope="
                  "\"resource\",code=\"404\"} 1"),
      std::string::npos)
      << m.body.substr(0, 3000);
  EXPECT_NE(
      m.body.find("apiserver_request_duration_seconds_bucket{verb=\"LIST\""),
      std::string::npos);
  EXPECT_NE(m.body.find("apiserver_longrunning_requests"), std::string::npos);
  // The storage layer's latency, in the same registry.
  EXPECT_NE(
      m.body.find("etcd_request_duration_seconds_bucket{operation=\"get\""),
      std::string::npos);
}

}  // namespace
}  // namespace kplane::apiserver
