// Validation rules per kind, each with kube-apiserver's exact text, and the
// 422 message that carries them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/endpoints_types.h"
#include "objects/test_util.h"
#include "apiserver/registry/strategy.h"
#include "apiserver/registry/test_util.h"
#include "apiserver/registry/validation_util.h"

namespace kplane::apiserver {
namespace {

using testing::Decode;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::StrategyOf;
using testing::Texts;

constexpr char kDns1123Label[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
    "characters or '-', and must start and end with an alphanumeric "
    "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr char kDns1123Subdomain[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

// --- messages ---

// validation::Equal answers equal canonical bytes at once, and leaves what
// only the differencer knows to it: a field set to its zero value equals
// one left unset; a map equals itself in any insertion order.
TEST(EqualTest, EquivalentNotOnlyIdenticalBytes) {
  objects::corev1::PodSpec a;
  a.add_containers()->set_name("app");
  (*a.mutable_nodeselector())["zone"] = "a";
  (*a.mutable_nodeselector())["disk"] = "ssd";
  objects::corev1::PodSpec b = a;
  EXPECT_TRUE(validation::Equal(a, b));
  objects::corev1::PodSpec reordered;
  reordered.add_containers()->set_name("app");
  (*reordered.mutable_nodeselector())["disk"] = "ssd";
  (*reordered.mutable_nodeselector())["zone"] = "a";
  EXPECT_TRUE(validation::Equal(a, reordered));
  b.set_hostname("");  // set, but to the zero value
  EXPECT_NE(a.SerializeAsString(), b.SerializeAsString());
  EXPECT_TRUE(validation::Equal(a, b));
  b.set_hostname("h");
  EXPECT_FALSE(validation::Equal(a, b));
  objects::corev1::PodSpec c = a;
  c.mutable_containers(0)->set_image("nginx");
  EXPECT_FALSE(validation::Equal(a, c));
}

TEST(InvalidMessageTest, OneError) {
  FieldErrors errs = {
      validation::InvalidInt(validation::Path("spec").Child("replicas"), -1,
                             "must be greater than or equal to 0")};
  EXPECT_EQ(InvalidMessage("Deployment.apps", "web", errs),
            "Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: "
            "-1: must be greater than or equal to 0");
}

TEST(InvalidMessageTest, SeveralErrorsInBracketsDuplicatesOnce) {
  FieldErrors errs = {
      validation::Required(validation::Path("spec.containers[0].name")),
      validation::Required(validation::Path("spec.containers[0].image")),
      validation::Required(validation::Path("spec.containers[0].name")),
  };
  EXPECT_EQ(InvalidMessage("Pod", "bad", errs),
            "Pod \"bad\" is invalid: [spec.containers[0].name: Required value, "
            "spec.containers[0].image: Required value]");
  EXPECT_EQ(InvalidMessage("Pod", "bad", {}), "Pod \"bad\" is invalid");
}

TEST(InvalidMessageTest, MatchesKubeApiserverStatusForTemplateLabels) {
  // testdata/status_invalid.json was answered by a real kube-apiserver.
  rapidjson::Document status = objects::testing::ParseJsonOrDie(
      objects::testing::ReadTestdata("status_invalid.json"));
  auto d = Decode<objects::appsv1::Deployment>(R"({"metadata":{"name":"web",
    "namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"web"}},
    "template":{"metadata":{"labels":{"app":"other"}},
    "spec":{"containers":[{"name":"nginx","image":"nginx"}]}}}})");
  const Strategy& s = StrategyOf("apps", "deployments");
  s.Default(&d);
  FieldErrors errs = s.ValidateCreate(d);
  ASSERT_EQ(errs.size(), 1u) << ::testing::PrintToString(Texts(errs));
  EXPECT_EQ(InvalidMessage("Deployment.apps", "web", errs),
            status["message"].GetString());
  const auto& cause = status["details"]["causes"][0];
  EXPECT_EQ(errs[0].Reason(), cause["reason"].GetString());
  EXPECT_EQ(errs[0].Body(), cause["message"].GetString());
  EXPECT_EQ(errs[0].field, cause["field"].GetString());
}

TEST(FieldErrorTest, BodiesByType) {
  using validation::Path;
  EXPECT_EQ(validation::Required(Path("a"), "why").Body(),
            "Required value: why");
  EXPECT_EQ(validation::Forbidden(Path("a"), "no").Body(), "Forbidden: no");
  EXPECT_EQ(validation::TooLong(Path("a"), 63).Body(),
            "Too long: may not be more than 63 bytes");
  EXPECT_EQ(validation::TooMany(Path("a"), 5, 3).Body(),
            "Too many: 5: must have at most 3 items");
  EXPECT_EQ(validation::NotFound(Path("a"), "\"x\"").Body(),
            "Not found: \"x\"");
  EXPECT_EQ(validation::Duplicate(Path("a"), "\"x\"").Body(),
            "Duplicate value: \"x\"");
  EXPECT_EQ(
      validation::NotSupportedString(Path("p"), "Sometimes",
                                     {"Always", "Never"})
          .Error(),
      "p: Unsupported value: \"Sometimes\": supported values: \"Always\", "
      "\"Never\"");
  EXPECT_EQ(validation::Required(Path("x")).Reason(), "FieldValueRequired");
  EXPECT_EQ(validation::Forbidden(Path("x"), "").Reason(),
            "FieldValueForbidden");
}

TEST(GoValueTest, Renderings) {
  objects::metav1::LabelSelector sel;
  (*sel.mutable_matchlabels())["app"] = "nginx2";
  EXPECT_EQ(
      validation::GoLabelSelector(sel),
      "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"nginx2\"}, "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}");
  objects::intstr::IntOrString zero;
  EXPECT_EQ(validation::GoIntOrString(zero),
            "intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}");
  validation::StringMap m;
  EXPECT_EQ(validation::GoStringMap(m), "map[string]string(nil)");
  m["b"] = "2";
  m["a"] = "1";
  EXPECT_EQ(validation::GoStringMap(m),
            "map[string]string{\"a\":\"1\", \"b\":\"2\"}");
  EXPECT_EQ(validation::GoStringSlice(std::vector<std::string>{"x", "y"}),
            "[]string{\"x\", \"y\"}");
}

// --- object metadata ---

TEST(MetadataValidationTest, NamesPerKind) {
  struct Case {
    const char* group;
    const char* resource;
    const char* json;
    std::vector<std::string> want;
  } cases[] = {
      {"",
       "configmaps",
       R"({"metadata":{"name":"Foo","namespace":"d"}})",
       {std::string("metadata.name: Invalid value: \"Foo\": ") +
        kDns1123Subdomain}},
      {"",
       "namespaces",
       R"({"metadata":{"name":"a.b"}})",
       {"metadata.name: Invalid value: \"a.b\": must not contain dots"}},
      {"",
       "namespaces",
       R"({"metadata":{"name":"Foo"}})",
       {std::string("metadata.name: Invalid value: \"Foo\": ") +
        kDns1123Label}},
      // Services are DNS-1035 labels: no leading digit.
      {"",
       "services",
       R"({"metadata":{"name":"1web","namespace":"d"},
          "spec":{"ports":[{"port":80}]}})",
       {"metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist "
        "of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')"}},
      {"",
       "configmaps",
       R"({"metadata":{"namespace":"d"}})",
       {"metadata.name: Required value: name or generateName is required"}},
      {"",
       "configmaps",
       R"({"metadata":{"name":"x"}})",
       {"metadata.namespace: Required value"}},
      {"",
       "nodes",
       R"({"metadata":{"name":"n","namespace":"d"}})",
       {"metadata.namespace: Forbidden: not allowed on this type"}},
      // generateName may end in '-'.
      {"",
       "configmaps",
       R"({"metadata":{"name":"web-x7k2p","generateName":"web-","namespace":"d"}})",
       {}},
      {"",
       "configmaps",
       R"({"metadata":{"name":"ok","namespace":"d","labels":{"a b":"x","k":"bad value"}}})",
       {"metadata.labels: Invalid value: \"a b\": name part must consist of "
        "alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "metadata.labels: Invalid value: \"bad value\": a valid label must be "
        "an empty string or consist of alphanumeric characters, '-', '_' or "
        "'.', and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}},
      {"",
       "configmaps",
       R"({"metadata":{"name":"ok","namespace":"d","finalizers":["custom"]}})",
       {"metadata.finalizers[0]: Invalid value: \"custom\": name is neither a "
        "standard finalizer name nor is it fully qualified"}},
      {"",
       "configmaps",
       R"({"metadata":{"name":"ok","namespace":"d","ownerReferences":[
          {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":""}]}})",
       {"metadata.ownerReferences.uid: Invalid value: \"\": uid must not be "
        "empty"}},
  };
  for (const auto& c : cases) {
    const Strategy& s = StrategyOf(c.group, c.resource);
    std::unique_ptr<google::protobuf::Message> obj = s.resource().kind->New();
    auto r = objects::DecodeJson(c.json, obj.get());
    ASSERT_TRUE(r.ok()) << r.status();
    s.Default(obj.get());
    EXPECT_EQ(Texts(s.ValidateCreate(*obj)), c.want) << c.json;
  }
}

TEST(MetadataValidationTest, UpdateRules) {
  const Strategy& s = StrategyOf("", "configmaps");
  auto old = Decode<objects::corev1::ConfigMap>(
      R"({"metadata":{"name":"a","namespace":"d","uid":"u1","generation":3,
          "deletionTimestamp":"2026-11-29T08:37:42Z","finalizers":["x.io/f"]}})");
  auto cm = old;
  cm.mutable_metadata()->set_uid("u2");
  cm.mutable_metadata()->add_finalizers("y.io/g");
  cm.mutable_metadata()->set_generation(1);
  EXPECT_THAT(Texts(s.ValidateUpdate(cm, old)),
              ElementsAre("metadata.finalizers: Forbidden: no new finalizers "
                          "can be added if the object is being deleted, found "
                          "new finalizers []string{\"y.io/g\"}",
                          "metadata.generation: Invalid value: 1: must not be "
                          "decremented",
                          "metadata.uid: Invalid value: \"u2\": field is "
                          "immutable"));
}

TEST(MetadataValidationTest, GenericPassUsesPathSegmentNames) {
  objects::metav1::ObjectMeta m;
  m.set_name("a/b%c");
  m.set_namespace_("d");
  EXPECT_THAT(Texts(ValidateGenericObjectMeta(m, true)),
              ElementsAre("metadata.name: Invalid value: \"a/b%c\": may not "
                          "contain '/'",
                          "metadata.name: Invalid value: \"a/b%c\": may not "
                          "contain '%'"));
  m.set_name("..");
  EXPECT_THAT(Texts(ValidateGenericObjectMeta(m, true)),
              ElementsAre("metadata.name: Invalid value: \"..\": may not be "
                          "'..'"));
  m.set_name("Any_Name.OK");
  EXPECT_THAT(ValidateGenericObjectMeta(m, true), IsEmpty());
}

// --- deployments and replicasets ---

objects::appsv1::Deployment ValidDeployment() {
  auto d = Decode<objects::appsv1::Deployment>(R"({"metadata":{"name":"web",
    "namespace":"default"},"spec":{"replicas":2,
    "selector":{"matchLabels":{"app":"web"}},
    "template":{"metadata":{"labels":{"app":"web"}},
      "spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}})");
  StrategyOf("apps", "deployments").Default(&d);
  return d;
}

TEST(DeploymentValidationTest, Rules) {
  const Strategy& s = StrategyOf("apps", "deployments");
  ASSERT_THAT(Texts(s.ValidateCreate(ValidDeployment())), IsEmpty());
  struct Case {
    std::function<void(objects::appsv1::Deployment*)> mutate;
    std::vector<std::string> want;
  } cases[] = {
      {[](auto* d) { d->mutable_spec()->set_replicas(-1); },
       {"spec.replicas: Invalid value: -1: must be greater than or equal to "
        "0"}},
      {[](auto* d) { d->mutable_spec()->clear_selector(); },
       {"spec.selector: Required value",
        "spec.template.metadata.labels: Invalid value: "
        "map[string]string{\"app\":\"web\"}: `selector` does not match "
        "template `labels`"}},
      {[](auto* d) {
         d->mutable_spec()->mutable_selector()->clear_matchlabels();
       },
       {"spec.selector: Invalid value: "
        "v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector "
        "is invalid for deployment"}},
      {[](auto* d) {
         auto* ru =
             d->mutable_spec()->mutable_strategy()->mutable_rollingupdate();
         ru->mutable_maxsurge()->set_type(0);
         ru->mutable_maxsurge()->set_intval(0);
         ru->mutable_maxunavailable()->set_type(0);
         ru->mutable_maxunavailable()->set_intval(0);
         ru->mutable_maxunavailable()->clear_strval();
         ru->mutable_maxsurge()->clear_strval();
       },
       {"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "
        "intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when "
        "`maxSurge` is 0"}},
      {[](auto* d) {
         d->mutable_spec()
             ->mutable_strategy()
             ->mutable_rollingupdate()
             ->mutable_maxunavailable()
             ->set_strval("150%");
       },
       {"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "
        "intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be "
        "greater than 100%"}},
      {[](auto* d) {
         d->mutable_spec()
             ->mutable_strategy()
             ->mutable_rollingupdate()
             ->mutable_maxsurge()
             ->set_strval("x%");
       },
       {"spec.strategy.rollingUpdate.maxSurge: Invalid value: "
        "intstr.IntOrString{Type:1, IntVal:0, StrVal:\"x%\"}: a valid percent "
        "string must be a numeric string followed by an ending '%' (e.g. "
        "'1%',  or '93%', regex used for validation is '[0-9]+%')"}},
      {[](auto* d) {
         d->mutable_spec()->mutable_strategy()->set_type("Recreate");
       },
       {"spec.strategy.rollingUpdate: Forbidden: may not be specified when "
        "strategy `type` is 'Recreate'"}},
      {[](auto* d) {
         d->mutable_spec()->mutable_strategy()->set_type("BlueGreen");
       },
       {"spec.strategy: Unsupported value: "
        "apps.DeploymentStrategy{Type:\"BlueGreen\", "
        "RollingUpdate:&apps.RollingUpdateDeployment{...}}: supported values: "
        "\"Recreate\", \"RollingUpdate\""}},
      {[](auto* d) {
         d->mutable_spec()
             ->mutable_template_()
             ->mutable_spec()
             ->set_restartpolicy("Never");
       },
       {"spec.template.spec.restartPolicy: Unsupported value: \"Never\": "
        "supported values: \"Always\""}},
      {[](auto* d) {
         d->mutable_spec()
             ->mutable_template_()
             ->mutable_spec()
             ->set_activedeadlineseconds(10);
       },
       {"spec.template.spec.activeDeadlineSeconds: Forbidden: "
        "activeDeadlineSeconds in ReplicaSet is not Supported"}},
      {[](auto* d) { d->mutable_spec()->set_minreadyseconds(700); },
       {"spec.progressDeadlineSeconds: Invalid value: 600: must be greater "
        "than minReadySeconds"}},
      {[](auto* d) { d->mutable_spec()->set_revisionhistorylimit(-2); },
       {"spec.revisionHistoryLimit: Invalid value: -2: must be greater than or "
        "equal to 0"}},
      {[](auto* d) {
         auto* e =
             d->mutable_spec()->mutable_selector()->add_matchexpressions();
         e->set_key("tier");
         e->set_operator_("In");
       },
       {"spec.selector.matchExpressions[0].values: Required value: must be "
        "specified when `operator` is 'In' or 'NotIn'",
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:"
        "map[string]string{\"app\":\"web\"}, MatchExpressions:"
        "[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"
        "\"tier\", Operator:\"In\", Values:[]string(nil)}}}: invalid label "
        "selector"}},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    auto d = ValidDeployment();
    cases[i].mutate(&d);
    EXPECT_EQ(Texts(s.ValidateCreate(d)), cases[i].want) << "case " << i;
  }
}

TEST(DeploymentValidationTest, SelectorIsImmutable) {
  const Strategy& s = StrategyOf("apps", "deployments");
  auto old = ValidDeployment();
  auto d = old;
  (*d.mutable_spec()->mutable_selector()->mutable_matchlabels())["app"] =
      "nginx2";
  (*d.mutable_spec()
        ->mutable_template_()
        ->mutable_metadata()
        ->mutable_labels())["app"] = "nginx2";
  FieldErrors errs = s.ValidateUpdate(d, old);
  EXPECT_EQ(
      InvalidMessage("Deployment.apps", "web", errs),
      "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: "
      "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"nginx2\"}, "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is "
      "immutable");
}

TEST(DeploymentValidationTest, StatusRules) {
  const Strategy& s = StrategyOf("apps", "deployments");
  auto old = ValidDeployment();
  old.mutable_status()->set_collisioncount(2);
  auto d = old;
  auto* st = d.mutable_status();
  st->set_replicas(2);
  st->set_readyreplicas(3);
  st->set_availablereplicas(1);
  st->set_collisioncount(1);
  EXPECT_THAT(Texts(s.ValidateStatusUpdate(d, old)),
              ElementsAre("status.readyReplicas: Invalid value: 3: cannot be "
                          "greater than status.replicas",
                          "status.collisionCount: Invalid value: 1: cannot be "
                          "decremented"));
}

TEST(ReplicaSetValidationTest, CreateAndUpdate) {
  const Strategy& s = StrategyOf("apps", "replicasets");
  auto rs = Decode<objects::appsv1::ReplicaSet>(R"({"metadata":{"name":"web-1",
    "namespace":"d"},"spec":{"replicas":-3,"selector":{"matchLabels":{"a":"b"}},
    "template":{"metadata":{"labels":{"a":"b"}},
      "spec":{"containers":[{"name":"c","image":"i:1"}]}}}})");
  s.Default(&rs);
  EXPECT_THAT(Texts(s.ValidateCreate(rs)),
              ElementsAre("spec.replicas: Invalid value: -3: must be greater "
                          "than or equal to 0"));
  auto old = rs;
  old.mutable_spec()->set_replicas(1);
  (*rs.mutable_spec()->mutable_selector()->mutable_matchlabels())["a"] = "c";
  (*rs.mutable_spec()
        ->mutable_template_()
        ->mutable_metadata()
        ->mutable_labels())["a"] = "c";
  FieldErrors errs = s.ValidateUpdate(rs, old);
  // The spec is validated twice upstream, the message prints it once.
  EXPECT_EQ(errs.size(), 3u);
  EXPECT_EQ(
      InvalidMessage("ReplicaSet.apps", "web-1", errs),
      "ReplicaSet.apps \"web-1\" is invalid: [spec.replicas: Invalid "
      "value: -3: must be greater than or equal to 0, spec.selector: "
      "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"
      "\"a\":\"c\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
      "field is immutable]");
}

// --- configmaps and secrets ---

TEST(ConfigMapValidationTest, KeysAndImmutability) {
  const Strategy& s = StrategyOf("", "configmaps");
  auto cm = Decode<objects::corev1::ConfigMap>(R"({"metadata":{"name":"c",
    "namespace":"d"},"data":{"a/b":"1","..x":"2","ok":"3"},
    "binaryData":{"ok":"AA=="}})");
  EXPECT_THAT(
      Texts(s.ValidateCreate(cm)),
      ElementsAre(
          "data[..x]: Invalid value: \"..x\": must not start with '..'",
          "data[a/b]: Invalid value: \"a/b\": a valid config key must consist "
          "of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
          "'KEY_NAME',  or 'key-name', regex used for validation is "
          "'[-._a-zA-Z0-9]+')",
          "data[ok]: Invalid value: \"ok\": duplicate of key present in "
          "binaryData"));

  auto old = Decode<objects::corev1::ConfigMap>(R"({"metadata":{"name":"c",
    "namespace":"d"},"immutable":true,"data":{"k":"v"}})");
  auto upd = old;
  (*upd.mutable_data())["k"] = "v2";
  upd.set_immutable(false);
  EXPECT_EQ(InvalidMessage("ConfigMap", "c", s.ValidateUpdate(upd, old)),
            "ConfigMap \"c\" is invalid: [immutable: Forbidden: field is "
            "immutable when `immutable` is set, data: Forbidden: field is "
            "immutable when `immutable` is set]");
  // A mutable configmap may change its data.
  old.set_immutable(false);
  EXPECT_THAT(s.ValidateUpdate(upd, old), IsEmpty());
}

TEST(ConfigMapValidationTest, TotalSizeLimit) {
  const Strategy& s = StrategyOf("", "configmaps");
  objects::corev1::ConfigMap cm;
  cm.mutable_metadata()->set_name("big");
  cm.mutable_metadata()->set_namespace_("d");
  (*cm.mutable_data())["k"] = std::string(1024 * 1024 + 1, 'x');
  EXPECT_THAT(Texts(s.ValidateCreate(cm)),
              ElementsAre("[]: Too long: may not be more than 1048576 bytes"));
}

TEST(SecretValidationTest, TypesAndImmutability) {
  const Strategy& s = StrategyOf("", "secrets");
  auto tls = Decode<objects::corev1::Secret>(R"({"metadata":{"name":"t",
    "namespace":"d"},"type":"kubernetes.io/tls","data":{"tls.crt":"eA=="}})");
  EXPECT_THAT(Texts(s.ValidateCreate(tls)),
              ElementsAre("data[tls.key]: Required value"));
  auto dj = Decode<objects::corev1::Secret>(R"({"metadata":{"name":"t",
    "namespace":"d"},"type":"kubernetes.io/dockerconfigjson","data":{}})");
  EXPECT_THAT(Texts(s.ValidateCreate(dj)),
              ElementsAre("data[.dockerconfigjson]: Required value"));
  auto old = Decode<objects::corev1::Secret>(R"({"metadata":{"name":"t",
    "namespace":"d"},"type":"Opaque","data":{"a":"eA=="}})");
  auto upd = old;
  upd.set_type("kubernetes.io/basic-auth");
  EXPECT_THAT(Texts(s.ValidateUpdate(upd, old)),
              ElementsAre("type: Invalid value: \"kubernetes.io/basic-auth\": "
                          "field is immutable",
                          "data[username]: Required value",
                          "data[password]: Required value"));
}

// The .dockerconfigjson check parses client bytes (up to 1 MiB): a Secret
// holding 1 MiB of '[' overflowed the stack of a recursive parser.
TEST(SecretValidationTest, DockerConfigJsonNestingIsBounded) {
  const Strategy& s = StrategyOf("", "secrets");
  objects::corev1::Secret secret;
  secret.mutable_metadata()->set_name("pull");
  secret.mutable_metadata()->set_namespace_("d");
  secret.set_type("kubernetes.io/dockerconfigjson");
  auto& data = *secret.mutable_data();
  data[".dockerconfigjson"] = std::string(1 << 20, '[');
  EXPECT_THAT(Texts(s.ValidateCreate(secret)),
              ElementsAre("data[.dockerconfigjson]: Invalid value: "
                          "\"<secret contents redacted>\": invalid JSON"));
  // 10,000 levels (an object around 9,999 arrays) is still JSON.
  data[".dockerconfigjson"] =
      "{\"auths\":" + std::string(9999, '[') + std::string(9999, ']') + "}";
  EXPECT_THAT(s.ValidateCreate(secret), IsEmpty());
  data[".dockerconfigjson"] =
      "{\"auths\":" + std::string(10000, '[') + std::string(10000, ']') + "}";
  EXPECT_THAT(Texts(s.ValidateCreate(secret)), ::testing::SizeIs(1));
}

// --- services ---

objects::corev1::Service ValidService() {
  auto svc = Decode<objects::corev1::Service>(R"({"metadata":{"name":"web",
    "namespace":"d"},"spec":{"selector":{"app":"web"},"ports":[{"port":80}]}})");
  const Strategy& s = StrategyOf("", "services");
  s.Default(&svc);
  s.PrepareForCreate(&svc);
  return svc;
}

TEST(ServiceValidationTest, Rules) {
  const Strategy& s = StrategyOf("", "services");
  ASSERT_THAT(Texts(s.ValidateCreate(ValidService())), IsEmpty());
  struct Case {
    std::function<void(objects::corev1::Service*)> mutate;
    std::vector<std::string> want;
  } cases[] = {
      {[](auto* v) { v->mutable_spec()->mutable_ports(0)->set_port(0); },
       {"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, "
        "inclusive"}},
      {[](auto* v) { v->mutable_spec()->clear_ports(); },
       {"spec.ports: Required value"}},
      {[](auto* v) {
         v->mutable_spec()->add_ports()->set_port(443);
         v->mutable_spec()->mutable_ports(1)->set_protocol("TCP");
         v->mutable_spec()->mutable_ports(1)->mutable_targetport()->set_intval(
             443);
       },
       {"spec.ports[0].name: Required value",
        "spec.ports[1].name: Required value"}},
      {[](auto* v) {
         v->mutable_spec()->mutable_ports(0)->set_protocol("HTTP");
       },
       {"spec.ports[0].protocol: Unsupported value: \"HTTP\": supported "
        "values: \"SCTP\", \"TCP\", \"UDP\""}},
      {[](auto* v) { v->mutable_spec()->set_type("Internal"); },
       {"spec.type: Unsupported value: \"Internal\": supported values: "
        "\"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""}},
      {[](auto* v) {
         v->mutable_spec()->mutable_ports(0)->set_nodeport(30080);
       },
       {"spec.ports[0].nodePort: Forbidden: may not be used when `type` is "
        "'ClusterIP'"}},
      {[](auto* v) {
         v->mutable_spec()->set_clusterip("10.0.0.300");
         v->mutable_spec()->add_clusterips("10.0.0.300");
       },
       {"spec.clusterIPs[0]: Invalid value: \"10.0.0.300\": must be a valid IP "
        "address, (e.g. 10.9.8.7 or 2001:db8::ffff)"}},
      {[](auto* v) { v->mutable_spec()->set_sessionaffinity("Sticky"); },
       {"spec.sessionAffinity: Unsupported value: \"Sticky\": supported "
        "values: \"ClientIP\", \"None\""}},
      {[](auto* v) {
         v->mutable_spec()->set_type("ExternalName");
         v->mutable_spec()->clear_ipfamilies();
         v->mutable_spec()->clear_ipfamilypolicy();
       },
       {"spec.externalName: Required value"}},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    auto svc = ValidService();
    cases[i].mutate(&svc);
    EXPECT_EQ(Texts(s.ValidateCreate(svc)), cases[i].want) << "case " << i;
  }
}

TEST(ServiceValidationTest, ClusterIPMayNotChange) {
  const Strategy& s = StrategyOf("", "services");
  auto old = ValidService();
  old.mutable_spec()->set_clusterip("10.96.0.10");
  old.mutable_spec()->add_clusterips("10.96.0.10");
  auto svc = old;
  svc.mutable_spec()->set_clusterip("10.96.0.11");
  svc.mutable_spec()->set_clusterips(0, "10.96.0.11");
  EXPECT_THAT(Texts(s.ValidateUpdate(svc, old)),
              ElementsAre("spec.clusterIPs[0]: Invalid value: "
                          "[]string{\"10.96.0.11\"}: may not change once set"));
}

// --- nodes, namespaces, leases, events, bindings, scale ---

TEST(NodeValidationTest, TaintsResourcesAndCidrs) {
  const Strategy& s = StrategyOf("", "nodes");
  auto node = Decode<objects::corev1::Node>(R"({"metadata":{"name":"n1"},
    "spec":{"podCIDRs":["10.244.0.0/24","10.245.0.0/24"],
      "taints":[{"key":"k","effect":"NoSchedule"},
                {"key":"k","effect":"NoSchedule"},{"key":"x","effect":"Never"}]},
    "status":{"capacity":{"cpu":"-1","pods":"1.5"}}})");
  EXPECT_THAT(
      Texts(s.ValidateCreate(node)),
      ElementsAre(
          "metadata.taints[1]: Duplicate value: core.Taint{Key:\"k\", "
          "Value:\"\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: "
          "taints must be unique by key and effect pair",
          "metadata.taints[2].effect: Unsupported value: \"Never\": supported "
          "values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
          "status.capacity.cpu: Invalid value: \"-1\": must be greater than or "
          "equal to 0",
          "status.capacity.pods: Invalid value: 1500m: must be an integer",
          "spec.podCIDRs: Invalid value: []string{\"10.244.0.0/24\", "
          "\"10.245.0.0/24\"}: may specify no more than one CIDR for each IP "
          "family"));
  auto ok = Decode<objects::corev1::Node>(R"({"metadata":{"name":"n1"},
    "spec":{"podCIDR":"10.244.0.0/24","podCIDRs":["10.244.0.0/24"]}})");
  EXPECT_THAT(s.ValidateCreate(ok), IsEmpty());
  auto moved = ok;
  moved.mutable_spec()->set_podcidrs(0, "10.244.9.0/24");
  EXPECT_THAT(Texts(s.ValidateUpdate(moved, ok)),
              ElementsAre("spec.podCIDRs: Forbidden: node updates may not "
                          "change podCIDR except from \"\" to valid"));
}

TEST(NamespaceValidationTest, StatusPhaseFollowsDeletion) {
  const Strategy& s = StrategyOf("", "namespaces");
  auto ns = Decode<objects::corev1::Namespace>(
      R"({"metadata":{"name":"a"},"status":{"phase":"Terminating"}})");
  EXPECT_THAT(Texts(s.ValidateStatusUpdate(ns, ns)),
              ElementsAre("status.Phase: Invalid value: \"Terminating\": may "
                          "only be 'Active' if `deletionTimestamp` is empty"));
  auto bad = Decode<objects::corev1::Namespace>(
      R"({"metadata":{"name":"a"},"spec":{"finalizers":["weird"]}})");
  EXPECT_THAT(Texts(s.ValidateCreate(bad)),
              ElementsAre("spec.finalizers: Invalid value: \"weird\": name is "
                          "neither a standard finalizer name nor is it fully "
                          "qualified"));
}

TEST(LeaseValidationTest, Fields) {
  const Strategy& s = StrategyOf("coordination.k8s.io", "leases");
  auto l = Decode<objects::coordinationv1::Lease>(R"({"metadata":{"name":"n1",
    "namespace":"kube-node-lease"},"spec":{"holderIdentity":"n1",
    "leaseDurationSeconds":0,"leaseTransitions":-1}})");
  EXPECT_THAT(
      Texts(s.ValidateCreate(l)),
      ElementsAre("spec.leaseDurationSeconds: Invalid value: 0: must be "
                  "greater than 0",
                  "spec.leaseTransitions: Invalid value: -1: must be "
                  "greater than or equal to 0"));
}

TEST(EventValidationTest, LegacyRules) {
  const Strategy& s = StrategyOf("", "events");
  auto ok = Decode<objects::corev1::Event>(R"({"metadata":{"name":"web.1",
    "namespace":"default"},"involvedObject":{"kind":"Pod","namespace":"default",
    "name":"web"},"reason":"Started","type":"Normal"})");
  EXPECT_THAT(s.ValidateCreate(ok), IsEmpty());
  auto wrong_ns = ok;
  wrong_ns.mutable_involvedobject()->set_namespace_("other");
  EXPECT_THAT(Texts(s.ValidateCreate(wrong_ns)),
              ElementsAre("involvedObject.namespace: Invalid value: \"other\": "
                          "does not match event.namespace"));
  // New-style events (eventTime set) need the reporting fields.
  auto series = Decode<objects::corev1::Event>(R"({"metadata":{"name":"e",
    "namespace":"default"},"involvedObject":{"kind":"Node","name":"n1"},
    "eventTime":"2026-11-29T08:37:42.000000Z"})");
  EXPECT_THAT(Texts(s.ValidateCreate(series)),
              ElementsAre("reportingComponent: Required value",
                          "reportingComponent: Invalid value: \"\": name part "
                          "must be non-empty",
                          "reportingComponent: Invalid value: \"\": name part "
                          "must consist of alphanumeric characters, '-', '_' "
                          "or '.', and must start and end with an "
                          "alphanumeric character (e.g. 'MyName',  or "
                          "'my.name',  or '123-abc', regex used for "
                          "validation is "
                          "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                          "reportingInstance: Required value",
                          "action: Required value", "reason: Required value"));
  // Event names only need to be valid path segments.
  auto odd = ok;
  odd.mutable_metadata()->set_name("Web.Pod_1");
  EXPECT_THAT(s.ValidateCreate(odd), IsEmpty());
  odd.mutable_metadata()->set_name("a/b");
  EXPECT_THAT(Texts(s.ValidateCreate(odd)),
              ElementsAre("metadata.name: Invalid value: \"a/b\": may not "
                          "contain '/'"));
}

TEST(BindingValidationTest, Target) {
  auto b = Decode<objects::corev1::Binding>(
      R"({"metadata":{"name":"web"},"target":{"kind":"Pod"}})");
  EXPECT_THAT(Texts(ValidateBinding(b)),
              ElementsAre("target.kind: Unsupported value: \"Pod\": supported "
                          "values: \"Node\", \"<empty>\"",
                          "target.name: Required value"));
  const Strategy& s = StrategyOf("", "bindings");
  EXPECT_EQ(Texts(s.ValidateCreate(b)), Texts(ValidateBinding(b)));
  b.mutable_target()->set_kind("Node");
  b.mutable_target()->set_name("n1");
  EXPECT_THAT(ValidateBinding(b), IsEmpty());
}

TEST(ServiceAccountValidationTest, NameAndSecretReferences) {
  const Strategy& s = StrategyOf("", "serviceaccounts");
  auto sa = Decode<objects::corev1::ServiceAccount>(R"({"metadata":{
    "name":"builder","namespace":"default"},"secrets":[{"name":"tok",
    "namespace":"other","uid":"u","kind":"Secret"}]})");
  EXPECT_THAT(s.ValidateCreate(sa), IsEmpty());
  s.PrepareForCreate(&sa);
  ASSERT_EQ(sa.secrets_size(), 1);
  EXPECT_EQ(sa.secrets(0).name(), "tok");
  EXPECT_FALSE(sa.secrets(0).has_namespace_());
  EXPECT_FALSE(sa.secrets(0).has_uid());
  auto bad = sa;
  bad.mutable_metadata()->set_name("Builder");
  EXPECT_THAT(Texts(s.ValidateCreate(bad)),
              ElementsAre(::testing::StartsWith(
                  "metadata.name: Invalid value: \"Builder\": a lowercase "
                  "RFC 1123 subdomain")));
}

TEST(EndpointsValidationTest, SubsetsAddressesAndPorts) {
  const Strategy& s = StrategyOf("", "endpoints");
  auto ep = Decode<objects::corev1::Endpoints>(R"({"metadata":{
    "name":"patroni","namespace":"default",
    "annotations":{"leader":"pg-0"}},
    "subsets":[{"addresses":[{"ip":"10.1.2.3","nodeName":"node-0",
      "targetRef":{"kind":"Pod","name":"pg-0"}}],
      "ports":[{"name":"postgresql","port":5432}]}]})");
  s.Default(&ep);
  EXPECT_EQ(ep.subsets(0).ports(0).protocol(), "TCP");
  EXPECT_THAT(s.ValidateCreate(ep), IsEmpty());
  // No subsets at all is valid: Patroni's leader Endpoints has none.
  auto bare = ep;
  bare.clear_subsets();
  EXPECT_THAT(s.ValidateCreate(bare), IsEmpty());

  auto bad = ep;
  auto* ss = bad.mutable_subsets(0);
  ss->mutable_addresses(0)->set_ip("127.0.0.1");
  ss->mutable_addresses(0)->set_nodename("Node_0");
  auto* second = ss->add_ports();
  second->set_port(70000);
  second->set_protocol("ICMP");
  bad.add_subsets()->add_ports()->set_port(1);
  bad.mutable_subsets(1)->mutable_ports(0)->set_protocol("UDP");
  EXPECT_THAT(
      Texts(s.ValidateCreate(bad)),
      ElementsAre(
          ::testing::StartsWith("subsets[0].addresses[0].nodeName: Invalid "
                                "value: \"Node_0\": a lowercase RFC 1123 "
                                "subdomain"),
          "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may "
          "not be in the loopback range (127.0.0.0/8, ::1/128)",
          "subsets[0].ports[1].name: Required value",
          ::testing::StartsWith(
              "subsets[0].ports[1].port: Invalid value: 70000: must be "
              "between 1 and 65535"),
          "subsets[0].ports[1].protocol: Unsupported value: \"ICMP\": "
          "supported values: \"SCTP\", \"TCP\", \"UDP\"",
          "subsets[1]: Required value: must specify `addresses` or "
          "`notReadyAddresses`"));
  auto link_local = ep;
  link_local.mutable_subsets(0)->mutable_addresses(0)->set_ip(
      "169.254.169.254");
  EXPECT_THAT(Texts(s.ValidateCreate(link_local)),
              ElementsAre("subsets[0].addresses[0].ip: Invalid value: "
                          "\"169.254.169.254\": may not be in the link-local "
                          "range (169.254.0.0/16, fe80::/10)"));
  auto updated = ep;
  updated.mutable_metadata()->set_name("other");
  EXPECT_THAT(Texts(s.ValidateUpdate(updated, ep)),
              ElementsAre(::testing::HasSubstr("field is immutable")));
}

TEST(TokenRequestValidationTest, ExpirationBounds) {
  objects::authenticationv1::TokenRequest tr;
  tr.mutable_spec()->set_expirationseconds(599);
  EXPECT_EQ(InvalidMessage("TokenRequest.authentication.k8s.io", "",
                           ValidateTokenRequest(tr)),
            "TokenRequest.authentication.k8s.io \"\" is invalid: "
            "spec.expirationSeconds: Invalid value: 599: may not specify a "
            "duration less than 10 minutes");
  tr.mutable_spec()->set_expirationseconds(600);
  EXPECT_THAT(ValidateTokenRequest(tr), IsEmpty());
  tr.mutable_spec()->set_expirationseconds((int64_t{1} << 32) + 1);
  EXPECT_THAT(Texts(ValidateTokenRequest(tr)),
              ElementsAre("spec.expirationSeconds: Invalid value: 4294967297: "
                          "may not specify a duration larger than 2^32 "
                          "seconds"));
}

TEST(ScaleValidationTest, NegativeReplicas) {
  objects::autoscalingv1::Scale scale;
  scale.mutable_metadata()->set_name("web");
  scale.mutable_metadata()->set_namespace_("d");
  scale.mutable_spec()->set_replicas(-1);
  EXPECT_EQ(InvalidMessage("Scale.autoscaling", "web", ValidateScale(scale)),
            "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid "
            "value: -1: must be greater than or equal to 0");
}

}  // namespace
}  // namespace kplane::apiserver
