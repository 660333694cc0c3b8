#include "apiserver/openapi/apiextensions_definitions.h"

#include <memory>
#include <utility>
#include <vector>

namespace kplane::openapi {

namespace {

constexpr char kMetaV1[] = "io.k8s.apimachinery.pkg.apis.meta.v1.";

std::string Ext(std::string_view name) {
  return std::string(kApiExtensionsV1) + std::string(name);
}

Schema Typed(std::string type, std::string description = "",
             std::string format = "") {
  Schema s;
  s.type = std::move(type);
  s.format = std::move(format);
  s.description = std::move(description);
  return s;
}
Schema String(std::string description = "") {
  return Typed("string", std::move(description));
}
Schema Bool(std::string description = "") {
  return Typed("boolean", std::move(description));
}
Schema Int64(std::string description = "") {
  return Typed("integer", std::move(description), "int64");
}
Schema Int32(std::string description = "") {
  return Typed("integer", std::move(description), "int32");
}
Schema Double() { return Typed("number", "", "double"); }
Schema Ref(std::string name, std::string description = "") {
  Schema s;
  s.ref = std::move(name);
  s.description = std::move(description);
  return s;
}
Schema ArrayOf(Schema item, std::string description = "") {
  Schema s = Typed("array", std::move(description));
  s.items = std::make_shared<const Schema>(std::move(item));
  return s;
}
Schema MapOf(Schema value, std::string description = "") {
  Schema s = Typed("object", std::move(description));
  s.additional_properties = std::make_shared<const Schema>(std::move(value));
  return s;
}
Schema Object(std::string description, std::vector<SchemaProperty> props,
              std::vector<std::string> required = {}) {
  Schema s = Typed("object", std::move(description));
  s.properties = std::move(props);
  s.required = std::move(required);
  return s;
}
// A value of any JSON type: no type, as kube publishes JSON and the
// JSONSchemaPropsOr* unions.
Schema AnyJson(std::string description) {
  Schema s;
  s.description = std::move(description);
  return s;
}

Schema TypeMetaString(const char* which) {
  return String(std::string(which) == "apiVersion"
                    ? "The versioned schema of this object."
                    : "The REST resource this object represents.");
}

}  // namespace

std::map<std::string, Schema, std::less<>> ApiExtensionsDefinitions() {
  std::map<std::string, Schema, std::less<>> d;
  const GroupVersionKind crd_gvk = {"apiextensions.k8s.io", "v1",
                                    "CustomResourceDefinition"};
  const GroupVersionKind list_gvk = {"apiextensions.k8s.io", "v1",
                                     "CustomResourceDefinitionList"};

  Schema crd = Object(
      "A CustomResourceDefinition serves a resource of its own, "
      "<plural>.<group>, under /apis/<group>/<version>.",
      {{"apiVersion", TypeMetaString("apiVersion")},
       {"kind", TypeMetaString("kind")},
       {"metadata", Ref(std::string(kMetaV1) + "ObjectMeta")},
       {"spec", Ref(Ext("CustomResourceDefinitionSpec"),
                    "What the custom resource is and how it is served.")},
       {"status", Ref(Ext("CustomResourceDefinitionStatus"),
                      "What the server made of the definition.")}},
      {"spec"});
  crd.gvks = {crd_gvk};
  d[Ext("CustomResourceDefinition")] = std::move(crd);

  Schema list = Object("A list of CustomResourceDefinitions.",
                       {{"apiVersion", TypeMetaString("apiVersion")},
                        {"items", ArrayOf(Ref(Ext("CustomResourceDefinition")),
                                          "The CustomResourceDefinitions.")},
                        {"kind", TypeMetaString("kind")},
                        {"metadata", Ref(std::string(kMetaV1) + "ListMeta")}},
                       {"items"});
  list.gvks = {list_gvk};
  d[Ext("CustomResourceDefinitionList")] = std::move(list);

  d[Ext("CustomResourceDefinitionSpec")] = Object(
      "How the custom resource appears in the API.",
      {{"conversion", Ref(Ext("CustomResourceConversion"),
                          "How objects are converted between versions.")},
       {"group", String("The API group of the custom resource (a DNS "
                        "subdomain with a dot); the name is "
                        "<names.plural>.<group>.")},
       {"names", Ref(Ext("CustomResourceDefinitionNames"),
                     "The names the resource is served under.")},
       {"preserveUnknownFields",
        Bool("Deprecated: keep fields the schema does not name (use "
             "x-kubernetes-preserve-unknown-fields in the schema).")},
       {"scope", String("Namespaced or Cluster.")},
       {"versions", ArrayOf(Ref(Ext("CustomResourceDefinitionVersion")),
                            "The versions of the resource; exactly one is "
                            "the storage version.")}},
      {"group", "names", "scope", "versions"});

  d[Ext("CustomResourceDefinitionNames")] = Object(
      "The names of a custom resource.",
      {{"categories", ArrayOf(String(),
                              "Groups of resources it belongs to ('all' for "
                              "`kubectl get all`).")},
       {"kind", String("The kind of its objects, CamelCase and singular.")},
       {"listKind", String("The kind of its lists; <kind>List by default.")},
       {"plural", String("The resource's name in URLs, lower case.")},
       {"shortNames", ArrayOf(String(),
                              "Short names for kubectl, lower "
                              "case.")},
       {"singular", String("The singular name, lower case; the lower-case "
                           "kind by default.")}},
      {"plural", "kind"});

  d[Ext("CustomResourceDefinitionVersion")] = Object(
      "One version of a custom resource.",
      {{"additionalPrinterColumns",
        ArrayOf(Ref(Ext("CustomResourceColumnDefinition")),
                "Columns of the table `kubectl get` prints; Age alone when "
                "none.")},
       {"deprecated", Bool("Whether requests to this version get a "
                           "deprecation warning.")},
       {"deprecationWarning", String("The warning, instead of the "
                                     "default one.")},
       {"name", String("The version's name (v1, v2beta1, ...).")},
       {"schema", Ref(Ext("CustomResourceValidation"),
                      "The schema objects of this version are validated, "
                      "pruned and defaulted with.")},
       {"selectableFields", ArrayOf(Ref(Ext("SelectableField")),
                                    "Fields usable in field selectors.")},
       {"served", Bool("Whether the version is served.")},
       {"storage", Bool("Whether objects are stored in this version.")},
       {"subresources", Ref(Ext("CustomResourceSubresources"),
                            "The status and scale subresources.")}},
      {"name", "served", "storage"});

  d[Ext("CustomResourceColumnDefinition")] = Object(
      "A column of the table the server prints.",
      {{"description", String("What the column shows.")},
       {"format", String("An OpenAPI format for the column.")},
       {"jsonPath", String("A JSON path into each object; its value is the "
                           "cell.")},
       {"name", String("The column's heading.")},
       {"priority", Int32("0 for the default table; higher priorities only "
                          "with -o wide.")},
       {"type", String("An OpenAPI type: integer, number, string, boolean "
                       "or date.")}},
      {"name", "type", "jsonPath"});

  d[Ext("CustomResourceSubresources")] = Object(
      "The subresources of a custom resource version.",
      {{"scale", Ref(Ext("CustomResourceSubresourceScale"),
                     "Serves /scale (autoscaling/v1 Scale).")},
       {"status",
        Ref(Ext("CustomResourceSubresourceStatus"), "Serves /status.")}});

  d[Ext("CustomResourceSubresourceScale")] = Object(
      "Where /scale finds the replica counts in an object.",
      {{"labelSelectorPath", String("The JSON path of the serialized label "
                                    "selector (Scale status.selector).")},
       {"specReplicasPath", String("The JSON path of the desired replicas, "
                                   "under .spec.")},
       {"statusReplicasPath", String("The JSON path of the observed "
                                     "replicas, under .status.")}},
      {"specReplicasPath", "statusReplicasPath"});

  d[Ext("CustomResourceSubresourceStatus")] =
      Typed("object",
            "Serves /status: status changes only there, and spec changes "
            "only through the main resource.");

  d[Ext("CustomResourceValidation")] = Object(
      "How objects of a version are validated.",
      {{"openAPIV3Schema",
        Ref(Ext("JSONSchemaProps"), "The OpenAPI v3 schema of the objects.")}});

  d[Ext("CustomResourceConversion")] = Object(
      "How objects are converted between versions.",
      {{"strategy", String("None (only apiVersion changes) or Webhook.")},
       {"webhook",
        Ref(Ext("WebhookConversion"), "The webhook, for strategy Webhook.")}},
      {"strategy"});

  d[Ext("WebhookConversion")] = Object(
      "A conversion webhook.",
      {{"clientConfig", Ref(Ext("WebhookClientConfig"), "How to call it.")},
       {"conversionReviewVersions",
        ArrayOf(String(),
                "ConversionReview versions it understands, "
                "preferred first.")}},
      {"conversionReviewVersions"});

  d[Ext("WebhookClientConfig")] = Object(
      "How to reach a webhook: a URL or a Service.",
      {{"caBundle",
        Typed("string", "PEM CA certificates to verify it with.", "byte")},
       {"service", Ref(Ext("ServiceReference"), "A Service in the cluster.")},
       {"url", String("https://host[:port]/path")}},
      {});

  d[Ext("ServiceReference")] =
      Object("A Service.",
             {{"name", String("The Service's name.")},
              {"namespace", String("The Service's namespace.")},
              {"path", String("The URL path to send requests to.")},
              {"port", Int32("The port; 443 by default.")}},
             {"namespace", "name"});

  d[Ext("CustomResourceDefinitionStatus")] = Object(
      "What the server made of a CustomResourceDefinition.",
      {{"acceptedNames", Ref(Ext("CustomResourceDefinitionNames"),
                             "The names actually served.")},
       {"conditions", ArrayOf(Ref(Ext("CustomResourceDefinitionCondition")),
                              "NamesAccepted, Established, Terminating.")},
       {"storedVersions",
        ArrayOf(String(), "Every version objects were ever stored in.")}});

  d[Ext("CustomResourceDefinitionCondition")] = Object(
      "One condition of a CustomResourceDefinition.",
      {{"lastTransitionTime",
        Ref(std::string(kMetaV1) + "Time", "When the status last changed.")},
       {"message", String("Details, for people.")},
       {"observedGeneration", Int64("The generation the condition is "
                                    "about.")},
       {"reason", String("One CamelCase word.")},
       {"status", String("True, False or Unknown.")},
       {"type", String("Established, NamesAccepted or Terminating.")}},
      {"type", "status"});

  d[Ext("SelectableField")] =
      Object("A field usable in field selectors.",
             {{"jsonPath", String("A JSON path to a string, integer or boolean "
                                  "field.")}},
             {"jsonPath"});

  d[Ext("ValidationRule")] = Object(
      "A CEL validation rule.",
      {{"fieldPath", String("The field a failure is reported at.")},
       {"message", String("The message of a failure.")},
       {"messageExpression", String("A CEL expression giving the message.")},
       {"optionalOldSelf", Bool("Whether the rule also runs on create, with "
                                "oldSelf unset.")},
       {"reason", String("The failure's reason (FieldValueInvalid, ...).")},
       {"rule", String("The CEL expression; self is the value.")}},
      {"rule"});

  d[Ext("ExternalDocumentation")] =
      Object("A link to more documentation.",
             {{"description", String()}, {"url", String()}});

  d[Ext("JSON")] = AnyJson("Any JSON value.");
  d[Ext("JSONSchemaPropsOrArray")] =
      AnyJson("A schema, or an array of schemas.");
  d[Ext("JSONSchemaPropsOrBool")] = AnyJson("A schema, or a boolean.");
  d[Ext("JSONSchemaPropsOrStringArray")] =
      AnyJson("A schema, or an array of strings.");

  const Schema props = Ref(Ext("JSONSchemaProps"));
  Schema validations =
      ArrayOf(Ref(Ext("ValidationRule")), "CEL rules the value must satisfy.");
  validations.list_type = "map";
  validations.list_map_keys = {"rule"};
  validations.patch_merge_key = "rule";
  validations.patch_strategy = "merge";
  d[Ext("JSONSchemaProps")] = Object(
      "A JSON schema (draft 4, as OpenAPI v3 uses it) with Kubernetes' "
      "extensions.",
      {{"$ref", String()},
       {"$schema", String()},
       {"additionalItems", Ref(Ext("JSONSchemaPropsOrBool"))},
       {"additionalProperties", Ref(Ext("JSONSchemaPropsOrBool"))},
       {"allOf", ArrayOf(props)},
       {"anyOf", ArrayOf(props)},
       {"default", Ref(Ext("JSON"),
                       "The value written where the field is "
                       "missing.")},
       {"definitions", MapOf(props)},
       {"dependencies", MapOf(Ref(Ext("JSONSchemaPropsOrStringArray")))},
       {"description", String()},
       {"enum", ArrayOf(Ref(Ext("JSON")))},
       {"example", Ref(Ext("JSON"))},
       {"exclusiveMaximum", Bool()},
       {"exclusiveMinimum", Bool()},
       {"externalDocs", Ref(Ext("ExternalDocumentation"))},
       {"format", String("An OpenAPI v3 format; unknown ones are ignored.")},
       {"id", String()},
       {"items", Ref(Ext("JSONSchemaPropsOrArray"))},
       {"maxItems", Int64()},
       {"maxLength", Int64()},
       {"maxProperties", Int64()},
       {"maximum", Double()},
       {"minItems", Int64()},
       {"minLength", Int64()},
       {"minProperties", Int64()},
       {"minimum", Double()},
       {"multipleOf", Double()},
       {"not", props},
       {"nullable", Bool()},
       {"oneOf", ArrayOf(props)},
       {"pattern", String()},
       {"patternProperties", MapOf(props)},
       {"properties", MapOf(props)},
       {"required", ArrayOf(String())},
       {"title", String()},
       {"type", String()},
       {"uniqueItems", Bool()},
       {"x-kubernetes-embedded-resource",
        Bool("The value is an object with apiVersion, kind and metadata.")},
       {"x-kubernetes-int-or-string",
        Bool("The value is an integer or a string.")},
       {"x-kubernetes-list-map-keys",
        ArrayOf(String(), "The keys of a list of type map.")},
       {"x-kubernetes-list-type", String("atomic, set or map.")},
       {"x-kubernetes-map-type", String("granular or atomic.")},
       {"x-kubernetes-preserve-unknown-fields",
        Bool("Fields the schema does not name are kept, not pruned.")},
       {"x-kubernetes-validations", std::move(validations)}});
  return d;
}

}  // namespace kplane::openapi
