// The schema model and the documents, checked against what kube-apiserver
// v1.32 publishes in api/openapi-spec/swagger.json for a handful of kinds
// (the expected values below are copied from there, field by field).
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "apiserver/openapi/documents.h"
#include "apiserver/openapi/schema_model.h"
#include "apiserver/openapi/v2_proto.h"

namespace kplane::openapi {
namespace {

const Schema& Def(std::string_view name) {
  const Schema* s = SchemaModel::Default().Find(name);
  EXPECT_NE(s, nullptr) << name;
  static const Schema empty;
  return s ? *s : empty;
}

const Schema& Prop(const Schema& s, std::string_view name) {
  const Schema* p = s.Property(name);
  EXPECT_NE(p, nullptr) << name;
  static const Schema empty;
  return p ? *p : empty;
}

TEST(SchemaModelTest, PodAsKubePublishesIt) {
  const Schema& pod = Def("io.k8s.api.core.v1.Pod");
  EXPECT_EQ(pod.type, "object");
  ASSERT_EQ(pod.gvks.size(), 1u);
  EXPECT_EQ(pod.gvks[0].group, "");
  EXPECT_EQ(pod.gvks[0].version, "v1");
  EXPECT_EQ(pod.gvks[0].kind, "Pod");
  // apiVersion, kind, metadata, spec, status in this order.
  ASSERT_GE(pod.properties.size(), 5u);
  EXPECT_EQ(pod.properties[0].name, "apiVersion");
  EXPECT_EQ(pod.properties[1].name, "kind");
  EXPECT_EQ(Prop(pod, "apiVersion").type, "string");
  EXPECT_EQ(Prop(pod, "metadata").ref,
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  EXPECT_EQ(Prop(pod, "spec").ref, "io.k8s.api.core.v1.PodSpec");
  EXPECT_TRUE(pod.required.empty());

  const Schema& spec = Def("io.k8s.api.core.v1.PodSpec");
  EXPECT_EQ(spec.required, std::vector<std::string>{"containers"});
  const Schema& containers = Prop(spec, "containers");
  EXPECT_EQ(containers.type, "array");
  ASSERT_TRUE(containers.items);
  EXPECT_EQ(containers.items->ref, "io.k8s.api.core.v1.Container");
  EXPECT_EQ(containers.patch_strategy, "merge");
  EXPECT_EQ(containers.patch_merge_key, "name");
  EXPECT_EQ(containers.list_type, "map");
  EXPECT_EQ(containers.list_map_keys, std::vector<std::string>{"name"});
  // All of kube's +listMapKey keys, not the patchMergeKey alone.
  const Schema& ports = Prop(Def("io.k8s.api.core.v1.ServiceSpec"), "ports");
  EXPECT_EQ(ports.patch_merge_key, "port");
  EXPECT_EQ(ports.list_map_keys,
            (std::vector<std::string>{"port", "protocol"}));
  const Schema& node_selector = Prop(spec, "nodeSelector");
  EXPECT_EQ(node_selector.type, "object");
  ASSERT_TRUE(node_selector.additional_properties);
  EXPECT_EQ(node_selector.additional_properties->type, "string");
  EXPECT_EQ(Prop(spec, "terminationGracePeriodSeconds").type, "integer");
  EXPECT_EQ(Prop(spec, "terminationGracePeriodSeconds").format, "int64");
  EXPECT_EQ(Prop(spec, "priority").format, "int32");
  EXPECT_EQ(Prop(spec, "hostNetwork").type, "boolean");
  // volumes: merge on name, retainKeys as well.
  EXPECT_EQ(Prop(spec, "volumes").patch_strategy, "merge,retainKeys");

  const Schema& container = Def("io.k8s.api.core.v1.Container");
  EXPECT_EQ(container.required, std::vector<std::string>{"name"});
  EXPECT_EQ(Prop(container, "env").patch_merge_key, "name");
  const Schema& limits = Prop(Prop(container, "resources").ref.empty()
                                  ? container
                                  : Def(Prop(container, "resources").ref),
                              "limits");
  ASSERT_TRUE(limits.additional_properties);
  EXPECT_EQ(limits.additional_properties->ref,
            "io.k8s.apimachinery.pkg.api.resource.Quantity");
  EXPECT_EQ(Def("io.k8s.api.core.v1.ContainerPort").required,
            std::vector<std::string>{"containerPort"});
}

TEST(SchemaModelTest, InlineMembersAppearAtTheirParentsLevel) {
  // Probe embeds ProbeHandler (Go) : httpGet sits beside periodSeconds.
  const Schema& probe = Def("io.k8s.api.core.v1.Probe");
  EXPECT_NE(probe.Property("httpGet"), nullptr);
  EXPECT_NE(probe.Property("periodSeconds"), nullptr);
  EXPECT_EQ(probe.Property("handler"), nullptr);
  const Schema& volume = Def("io.k8s.api.core.v1.Volume");
  EXPECT_NE(volume.Property("configMap"), nullptr);
  EXPECT_EQ(volume.Property("volumeSource"), nullptr);
}

TEST(SchemaModelTest, SpecialTypesAsKubeDefinesThem) {
  const Schema& time = Def("io.k8s.apimachinery.pkg.apis.meta.v1.Time");
  EXPECT_EQ(time.type, "string");
  EXPECT_EQ(time.format, "date-time");
  EXPECT_TRUE(time.properties.empty());
  const Schema& ios = Def("io.k8s.apimachinery.pkg.util.intstr.IntOrString");
  EXPECT_EQ(ios.type, "string");
  EXPECT_EQ(ios.format, "int-or-string");
  EXPECT_TRUE(ios.int_or_string);
  EXPECT_EQ(Def("io.k8s.apimachinery.pkg.api.resource.Quantity").type,
            "string");
  const Schema& meta = Def("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  EXPECT_EQ(Prop(meta, "creationTimestamp").ref,
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time");
  EXPECT_EQ(Prop(meta, "ownerReferences").patch_merge_key, "uid");
  EXPECT_EQ(Def("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference").required,
            (std::vector<std::string>{"apiVersion", "kind", "name", "uid"}));
}

TEST(SchemaModelTest, EveryRegisteredKindHasItsGroupVersionKind) {
  const objects::Scheme& scheme = objects::Scheme::Default();
  for (const auto& r : scheme.resources()) {
    const Schema& s = Def(SchemaModel::DefinitionName(r->kind->descriptor));
    bool found = false;
    for (const GroupVersionKind& g : s.gvks) {
      found |= g.group == r->gv.group && g.version == r->gv.version &&
               g.kind == r->kind->kind;
    }
    EXPECT_TRUE(found) << r->resource;
  }
  const Schema& deploy = Def("io.k8s.api.apps.v1.Deployment");
  ASSERT_EQ(deploy.gvks.size(), 1u);
  EXPECT_EQ(deploy.gvks[0].group, "apps");
  // DeleteOptions answers every group-version it is registered under.
  EXPECT_GE(
      Def("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions").gvks.size(),
      2u);
}

TEST(SchemaModelTest, JsonDialects) {
  rapidjson::Document d;
  const Schema& ios = Def("io.k8s.apimachinery.pkg.util.intstr.IntOrString");
  rapidjson::Value v2 = ToJsonValue(ios, Dialect::kSwagger2, d.GetAllocator());
  EXPECT_STREQ(v2["type"].GetString(), "string");
  EXPECT_STREQ(v2["format"].GetString(), "int-or-string");
  EXPECT_TRUE(v2["x-kubernetes-int-or-string"].GetBool());
  rapidjson::Value v3 = ToJsonValue(ios, Dialect::kOpenApi3, d.GetAllocator());
  ASSERT_TRUE(v3.HasMember("oneOf"));
  EXPECT_FALSE(v3.HasMember("type"));
  const Schema& spec = Def("io.k8s.api.apps.v1.DeploymentSpec");
  rapidjson::Value s2 = ToJsonValue(spec, Dialect::kSwagger2, d.GetAllocator());
  EXPECT_STREQ(s2["properties"]["template"]["$ref"].GetString(),
               "#/definitions/io.k8s.api.core.v1.PodTemplateSpec");
  // strategy carries retainKeys beside its $ref: wrapped in allOf for v3.
  rapidjson::Value s3 = ToJsonValue(spec, Dialect::kOpenApi3, d.GetAllocator());
  EXPECT_STREQ(s3["properties"]["strategy"]["allOf"][0]["$ref"].GetString(),
               "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy");
  EXPECT_STREQ(
      s3["properties"]["strategy"]["x-kubernetes-patch-strategy"].GetString(),
      "retainKeys");
}

const OpenApiDocuments& Docs() {
  static const OpenApiDocuments* docs =
      new OpenApiDocuments(objects::Scheme::Default(), SchemaModel::Default());
  return *docs;
}

TEST(OpenApiDocumentsTest, V3IndexPointsAtEachDocumentByItsEtag) {
  rapidjson::Document index;
  index.Parse(Docs().V3Index().json.c_str());
  ASSERT_TRUE(index.IsObject());
  const rapidjson::Value& apps = index["paths"]["apis/apps/v1"];
  const ServedDocument* doc = Docs().V3("apis/apps/v1");
  ASSERT_NE(doc, nullptr);
  EXPECT_EQ(std::string(apps["serverRelativeURL"].GetString()),
            "/openapi/v3/apis/apps/v1?hash=" + doc->etag);
  EXPECT_EQ(doc->etag, OpenApiDocuments::Etag(doc->json));
  EXPECT_EQ(doc->etag.size(), 128u);
  EXPECT_EQ(Docs().V3("apis/nope/v1"), nullptr);
}

TEST(OpenApiDocumentsTest, V3DocumentHasSchemasAndFieldValidation) {
  rapidjson::Document d;
  d.Parse(Docs().V3("apis/apps/v1")->json.c_str());
  ASSERT_TRUE(d.IsObject());
  const rapidjson::Value& schemas = d["components"]["schemas"];
  EXPECT_TRUE(schemas.HasMember("io.k8s.api.apps.v1.Deployment"));
  EXPECT_TRUE(schemas.HasMember("io.k8s.api.core.v1.PodSpec"));
  EXPECT_TRUE(schemas.HasMember("io.k8s.api.autoscaling.v1.Scale"));
  EXPECT_FALSE(schemas.HasMember("io.k8s.api.core.v1.Node"));
  const rapidjson::Value& item =
      d["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
  const rapidjson::Value& patch = item["patch"];
  EXPECT_STREQ(patch["operationId"].GetString(),
               "patchAppsV1NamespacedDeployment");
  EXPECT_STREQ(patch["x-kubernetes-group-version-kind"]["kind"].GetString(),
               "Deployment");
  bool field_validation = false;
  for (const auto& p : patch["parameters"].GetArray()) {
    field_validation |=
        std::string(p["name"].GetString()) == "fieldValidation" &&
        std::string(p["in"].GetString()) == "query";
  }
  EXPECT_TRUE(field_validation);
  EXPECT_TRUE(patch["requestBody"]["content"].HasMember(
      "application/strategic-merge-patch+json"));
  EXPECT_STREQ(d["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/"
                          "{name}/scale"]["get"]["operationId"]
                   .GetString(),
               "readAppsV1NamespacedDeploymentScale");
  EXPECT_STREQ(
      d["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["get"]
       ["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
           .GetString(),
      "#/components/schemas/io.k8s.api.apps.v1.DeploymentList");
}

TEST(OpenApiDocumentsTest, V2ProtobufDecodesToTheJsonDocument) {
  v2::Document decoded;
  ASSERT_TRUE(decoded.ParseFromString(Docs().V2Proto()));
  EXPECT_EQ(decoded.swagger(), "2.0");
  rapidjson::Document json;
  json.Parse(Docs().V2().json.c_str());
  ASSERT_TRUE(json.IsObject());
  EXPECT_EQ(
      static_cast<size_t>(decoded.definitions().additional_properties_size()),
      json["definitions"].MemberCount());
  EXPECT_EQ(static_cast<size_t>(decoded.paths().path_size()),
            json["paths"].MemberCount());
  // The Pod definition: properties, the GVK extension as YAML (JSON) text.
  const v2::Schema* pod = nullptr;
  for (const v2::NamedSchema& n :
       decoded.definitions().additional_properties()) {
    if (n.name() == "io.k8s.api.core.v1.Pod") pod = &n.value();
  }
  ASSERT_NE(pod, nullptr);
  ASSERT_EQ(pod->vendor_extension_size(), 1);
  EXPECT_EQ(pod->vendor_extension(0).name(), "x-kubernetes-group-version-kind");
  EXPECT_EQ(pod->vendor_extension(0).value().yaml(),
            R"([{"group":"","kind":"Pod","version":"v1"}])");
  ASSERT_EQ(pod->type().value_size(), 1);
  EXPECT_EQ(pod->type().value(0), "object");
  bool spec = false;
  for (const v2::NamedSchema& p : pod->properties().additional_properties()) {
    if (p.name() == "spec") {
      spec = true;
      EXPECT_EQ(p.value()._ref(), "#/definitions/io.k8s.api.core.v1.PodSpec");
    }
  }
  EXPECT_TRUE(spec);
  // A PATCH operation with its fieldValidation query parameter and GVK, where
  // kubectl 1.27's v2 query-parameter verifier looks.
  bool found = false;
  for (const v2::NamedPathItem& p : decoded.paths().path()) {
    if (p.name() != "/api/v1/namespaces/{namespace}/configmaps/{name}")
      continue;
    found = true;
    const v2::Operation& op = p.value().patch();
    EXPECT_EQ(op.operation_id(), "patchCoreV1NamespacedConfigMap");
    bool fv = false;
    for (const v2::ParametersItem& item : op.parameters()) {
      fv |= item.parameter()
                .non_body_parameter()
                .query_parameter_sub_schema()
                .name() == "fieldValidation";
    }
    EXPECT_TRUE(fv);
    bool gvk = false;
    for (const v2::NamedAny& e : op.vendor_extension()) {
      gvk |= e.name() == "x-kubernetes-group-version-kind" &&
             e.value().yaml() ==
                 R"({"group":"","kind":"ConfigMap","version":"v1"})";
    }
    EXPECT_TRUE(gvk);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(Docs().V2ProtoEtag(), OpenApiDocuments::Etag(Docs().V2Proto()));
}

}  // namespace
}  // namespace kplane::openapi
