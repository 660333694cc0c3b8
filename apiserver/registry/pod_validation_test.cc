// Pod validation: create rules with their exact texts, the update
// immutability rule, status updates and bindings.
#include "apiserver/registry/pod_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/test_util.h"
#include "apiserver/registry/test_util.h"

namespace kplane::apiserver {
namespace {

using testing::Decode;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::StrategyOf;
using testing::Texts;

// A pod as the pod strategy sees it on create: defaulted and prepared.
objects::corev1::Pod PodFrom(std::string_view json) {
  auto pod = Decode<objects::corev1::Pod>(json);
  const Strategy& s = StrategyOf("", "pods");
  s.Default(&pod);
  s.PrepareForCreate(&pod);
  return pod;
}

objects::corev1::Pod ValidPod() {
  return PodFrom(R"({"metadata":{"name":"web","namespace":"default"},
    "spec":{"containers":[{"name":"nginx","image":"nginx:1.27",
      "ports":[{"name":"http","containerPort":80}]}]}})");
}

TEST(PodValidationTest, ValidPodsPass) {
  const Strategy& s = StrategyOf("", "pods");
  EXPECT_THAT(Texts(s.ValidateCreate(ValidPod())), IsEmpty());
  // The rich fixture pod (probes, env, projected volume, resources).
  auto pod = Decode<objects::corev1::Pod>(objects::testing::ReadTestdata("pod.json"));
  EXPECT_THAT(Texts(s.ValidateCreate(pod)), IsEmpty());
}

TEST(PodValidationTest, CreateRules) {
  const Strategy& s = StrategyOf("", "pods");
  struct Case {
    const char* name;
    std::function<void(objects::corev1::Pod*)> mutate;
    std::vector<std::string> want;
  } cases[] = {
      {"no containers",
       [](auto* p) { p->mutable_spec()->clear_containers(); },
       {"spec.containers: Required value"}},
      {"missing image",
       [](auto* p) { p->mutable_spec()->mutable_containers(0)->clear_image(); },
       {"spec.containers[0].image: Required value"}},
      {"bad container name",
       [](auto* p) {
         p->mutable_spec()->mutable_containers(0)->set_name("Nginx_1");
       },
       {"spec.containers[0].name: Invalid value: \"Nginx_1\": a lowercase RFC "
        "1123 label must consist of lower case alphanumeric characters or "
        "'-', and must start and end with an alphanumeric character (e.g. "
        "'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"}},
      {"duplicate container",
       [](auto* p) {
         *p->mutable_spec()->add_containers() = p->spec().containers(0);
         p->mutable_spec()->mutable_containers(1)->clear_ports();
       },
       {"spec.containers[1].name: Duplicate value: \"nginx\""}},
      {"port out of range",
       [](auto* p) {
         p->mutable_spec()
             ->mutable_containers(0)
             ->mutable_ports(0)
             ->set_containerport(70000);
       },
       {"spec.containers[0].ports[0].containerPort: Invalid value: 70000: must "
        "be between 1 and 65535, inclusive"}},
      {"port name too long and upper case",
       [](auto* p) {
         p->mutable_spec()->mutable_containers(0)->mutable_ports(0)->set_name(
             "HTTP-port-number-1");
       },
       {"spec.containers[0].ports[0].name: Invalid value: "
        "\"HTTP-port-number-1\": must be no more than 15 characters",
        "spec.containers[0].ports[0].name: Invalid value: "
        "\"HTTP-port-number-1\": must contain only alpha-numeric characters "
        "(a-z, 0-9), and hyphens (-)"}},
      {"bad protocol",
       [](auto* p) {
         p->mutable_spec()
             ->mutable_containers(0)
             ->mutable_ports(0)
             ->set_protocol("tcp");
       },
       {"spec.containers[0].ports[0].protocol: Unsupported value: \"tcp\": "
        "supported values: \"SCTP\", \"TCP\", \"UDP\""}},
      {"restart policy",
       [](auto* p) { p->mutable_spec()->set_restartpolicy("Sometimes"); },
       {"spec.restartPolicy: Unsupported value: \"Sometimes\": supported "
        "values: \"Always\", \"OnFailure\", \"Never\""}},
      {"dns policy",
       [](auto* p) { p->mutable_spec()->set_dnspolicy("Google"); },
       {"spec.dnsPolicy: Unsupported value: \"Google\": supported values: "
        "\"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", "
        "\"None\""}},
      {"pull policy",
       [](auto* p) {
         p->mutable_spec()->mutable_containers(0)->set_imagepullpolicy(
             "Sometimes");
       },
       {"spec.containers[0].imagePullPolicy: Unsupported value: "
        "\"Sometimes\": supported values: \"Always\", \"IfNotPresent\", "
        "\"Never\""}},
      {"env name and source",
       [](auto* p) {
         auto* e = p->mutable_spec()->mutable_containers(0)->add_env();
         e->set_name("A=B");
         e->mutable_valuefrom();
       },
       {"spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid "
        "environment variable name must consist only of printable ASCII "
        "characters other than '='",
        "spec.containers[0].env[0].valueFrom: Invalid value: \"\": must "
        "specify "
        "one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
        "`secretKeyRef`"}},
      {"downward API field",
       [](auto* p) {
         auto* e = p->mutable_spec()->mutable_containers(0)->add_env();
         e->set_name("X");
         auto* f = e->mutable_valuefrom()->mutable_fieldref();
         f->set_apiversion("v1");
         f->set_fieldpath("metadata.labels");
       },
       {"spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported "
        "value: \"metadata.labels\": supported values: \"metadata.name\", "
        "\"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", "
        "\"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", "
        "\"status.podIP\", \"status.podIPs\""}},
      {"negative quantity and request over limit",
       [](auto* p) {
         auto* r =
             p->mutable_spec()->mutable_containers(0)->mutable_resources();
         (*r->mutable_limits())["cpu"].set_string("100m");
         (*r->mutable_requests())["cpu"].set_string("200m");
         (*r->mutable_requests())["memory"].set_string("-1Mi");
       },
       {"spec.containers[0].resources.requests: Invalid value: \"200m\": must "
        "be less than or equal to cpu limit of 100m",
        "spec.containers[0].resources.requests[memory]: Invalid value: "
        "\"-1Mi\": must be greater than or equal to 0"}},
      {"unknown resource name",
       [](auto* p) {
         (*p->mutable_spec()
               ->mutable_containers(0)
               ->mutable_resources()
               ->mutable_limits())["gpu"]
             .set_string("1");
       },
       {"spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": "
        "must be a standard resource type or fully qualified",
        "spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": "
        "must be a standard resource for containers"}},
      {"volume mount of unknown volume",
       [](auto* p) {
         auto* m = p->mutable_spec()->mutable_containers(0)->add_volumemounts();
         m->set_name("data");
         m->set_mountpath("/data");
       },
       {"spec.containers[0].volumeMounts[0].name: Not found: \"data\""}},
      {"volume with two sources",
       [](auto* p) {
         auto* v = p->mutable_spec()->add_volumes();
         v->set_name("v");
         v->mutable_volumesource()->mutable_emptydir();
         v->mutable_volumesource()
             ->mutable_configmap()
             ->mutable_localobjectreference()
             ->set_name("c");
       },
       {"spec.volumes[0].configMap: Forbidden: may not specify more than 1 "
        "volume type"}},
      {"probe",
       [](auto* p) {
         auto* pr =
             p->mutable_spec()->mutable_containers(0)->mutable_livenessprobe();
         pr->set_successthreshold(2);
         pr->set_periodseconds(-1);
         pr->mutable_handler()->mutable_tcpsocket()->mutable_port()->set_intval(
             80);
       },
       {"spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: "
        "must be greater than or equal to 0",
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: "
        "must be 1"}},
      {"probe without handler",
       [](auto* p) {
         p->mutable_spec()
             ->mutable_containers(0)
             ->mutable_readinessprobe()
             ->set_periodseconds(5);
       },
       {"spec.containers[0].readinessProbe: Required value: must specify a "
        "handler type"}},
      {"toleration",
       [](auto* p) {
         auto* t = p->mutable_spec()->add_tolerations();
         t->set_operator_("Equal");
         t->set_value("x");
       },
       {"spec.tolerations[2].operator: Invalid value: \"Equal\": operator must "
        "be Exists when `key` is empty, which means \"match all values and all "
        "keys\""}},
      {"node selector label",
       [](auto* p) {
         (*p->mutable_spec()->mutable_nodeselector())["disk"] = "ssd!";
       },
       {"spec.nodeSelector: Invalid value: \"ssd!\": a valid label must be an "
        "empty string or consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}},
      {"active deadline",
       [](auto* p) { p->mutable_spec()->set_activedeadlineseconds(0); },
       {"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and "
        "2147483647, inclusive"}},
      {"host port conflict",
       [](auto* p) {
         auto* c = p->mutable_spec()->mutable_containers(0);
         c->mutable_ports(0)->set_hostport(8080);
         auto* port = c->add_ports();
         port->set_containerport(81);
         port->set_protocol("TCP");
         port->set_hostport(8080);
       },
       {"spec.containers[0].ports[1].hostPort: Duplicate value: "
        "\"TCP//8080\""}},
      {"image whitespace",
       [](auto* p) {
         p->mutable_spec()->mutable_containers(0)->set_image(" nginx");
       },
       {"spec.containers[0].image: Invalid value: \" nginx\": must not have "
        "leading or trailing whitespace"}},
      {"node name with gates",
       [](auto* p) {
         p->mutable_spec()->set_nodename("n1");
         p->mutable_spec()->add_schedulinggates()->set_name("example.com/gate");
       },
       {"spec.nodeName: Forbidden: cannot be set until all schedulingGates "
        "have been cleared"}},
      {"init container probe",
       [](auto* p) {
         auto* c = p->mutable_spec()->add_initcontainers();
         *c = p->spec().containers(0);
         c->set_name("init");
         c->clear_ports();
         c->mutable_livenessprobe()
             ->mutable_handler()
             ->mutable_exec()
             ->add_command("true");
         c->mutable_livenessprobe()->set_successthreshold(1);
       },
       {"spec.initContainers[0].livenessProbe: Forbidden: may not be set for "
        "init containers without restartPolicy=Always"}},
  };
  for (const auto& c : cases) {
    auto pod = ValidPod();
    c.mutate(&pod);
    EXPECT_EQ(Texts(s.ValidateCreate(pod)), c.want) << c.name;
  }
}

TEST(PodValidationTest, InvalidMessageForSeveralErrors) {
  const Strategy& s = StrategyOf("", "pods");
  auto pod = PodFrom(R"({"metadata":{"name":"bad","namespace":"default"},
    "spec":{"containers":[{"image":""}]}})");
  EXPECT_EQ(InvalidMessage("Pod", "bad", s.ValidateCreate(pod)),
            "Pod \"bad\" is invalid: [spec.containers[0].name: Required value, "
            "spec.containers[0].image: Required value]");
}

TEST(PodUpdateTest, ImageActiveDeadlineAndTolerationAdditionsAreAllowed) {
  const Strategy& s = StrategyOf("", "pods");
  auto old = ValidPod();
  auto pod = old;
  s.Default(&pod);
  s.PrepareForUpdate(&pod, old);
  pod.mutable_spec()->mutable_containers(0)->set_image("nginx:1.28");
  pod.mutable_spec()->set_activedeadlineseconds(60);
  auto* t = pod.mutable_spec()->add_tolerations();
  t->set_key("dedicated");
  t->set_operator_("Exists");
  t->set_effect("NoSchedule");
  EXPECT_THAT(Texts(s.ValidateUpdate(pod, old)), IsEmpty());
}

TEST(PodUpdateTest, OtherSpecChangesAreForbidden) {
  const Strategy& s = StrategyOf("", "pods");
  auto old = ValidPod();
  auto pod = old;
  pod.mutable_spec()->set_restartpolicy("Never");
  FieldErrors errs = s.ValidateUpdate(pod, old);
  ASSERT_EQ(errs.size(), 1u) << ::testing::PrintToString(Texts(errs));
  EXPECT_EQ(errs[0].field, "spec");
  EXPECT_EQ(errs[0].type, FieldError::Type::kForbidden);
  EXPECT_EQ(
      errs[0].detail,
      "pod updates may not change fields other than "
      "`spec.containers[*].image`,`spec.initContainers[*].image`,"
      "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
      "existing tolerations),`spec.terminationGracePeriodSeconds` (allow "
      "it to be set to 1 if it was previously negative)\n"
      "  - restartPolicy: \"Always\"\n"
      "  + restartPolicy: \"Never\"\n");
}

TEST(PodUpdateTest, ContainersMayNotBeAddedOrRemoved) {
  const Strategy& s = StrategyOf("", "pods");
  auto old = ValidPod();
  auto pod = old;
  *pod.mutable_spec()->add_containers() = pod.spec().containers(0);
  pod.mutable_spec()->mutable_containers(1)->set_name("second");
  pod.mutable_spec()->mutable_containers(1)->clear_ports();
  EXPECT_THAT(Texts(s.ValidateUpdate(pod, old)),
              ElementsAre("spec.containers: Forbidden: pod updates may not add "
                          "or remove containers"));
}

TEST(PodUpdateTest, ActiveDeadlineRules) {
  const Strategy& s = StrategyOf("", "pods");
  auto old = ValidPod();
  old.mutable_spec()->set_activedeadlineseconds(30);
  auto pod = old;
  pod.mutable_spec()->set_activedeadlineseconds(60);
  EXPECT_THAT(Texts(s.ValidateUpdate(pod, old)),
              ElementsAre("spec.activeDeadlineSeconds: Invalid value: 60: must "
                          "be less than or equal to previous value"));
  pod.mutable_spec()->clear_activedeadlineseconds();
  EXPECT_THAT(Texts(s.ValidateUpdate(pod, old)),
              ElementsAre("spec.activeDeadlineSeconds: Invalid value: null: "
                          "must not update from a positive integer to nil "
                          "value"));
}

TEST(PodUpdateTest, ExistingTolerationsMayOnlyChangeSeconds) {
  const Strategy& s = StrategyOf("", "pods");
  auto old = ValidPod();
  auto pod = old;
  pod.mutable_spec()->mutable_tolerations(0)->set_tolerationseconds(60);
  EXPECT_THAT(Texts(s.ValidateUpdate(pod, old)), IsEmpty());
  pod.mutable_spec()->mutable_tolerations(0)->set_key("other");
  EXPECT_THAT(
      Texts(s.ValidateUpdate(pod, old)),
      ElementsAre("spec.tolerations: Forbidden: existing toleration can "
                  "not be modified except its tolerationSeconds"));
}

TEST(PodUpdateTest, SchedulingGatesMayOnlyBeRemoved) {
  const Strategy& s = StrategyOf("", "pods");
  auto old = ValidPod();
  old.mutable_spec()->add_schedulinggates()->set_name("a.io/one");
  auto pod = old;
  pod.mutable_spec()->clear_schedulinggates();
  EXPECT_THAT(Texts(s.ValidateUpdate(pod, old)), IsEmpty());
  pod.mutable_spec()->add_schedulinggates()->set_name("a.io/two");
  EXPECT_THAT(Texts(s.ValidateUpdate(pod, old)),
              ElementsAre("spec.schedulingGates[0].name: Forbidden: only "
                          "deletion is allowed, but found new scheduling gate "
                          "'a.io/two'"));
}

TEST(PodStatusUpdateTest, Rules) {
  const Strategy& s = StrategyOf("", "pods");
  auto old = ValidPod();
  old.mutable_spec()->set_restartpolicy("Never");
  auto* cs = old.mutable_status()->add_containerstatuses();
  cs->set_name("nginx");
  cs->mutable_state()->mutable_terminated()->set_exitcode(0);
  auto pod = old;
  pod.mutable_status()->mutable_containerstatuses(0)->mutable_state()->Clear();
  pod.mutable_status()
      ->mutable_containerstatuses(0)
      ->mutable_state()
      ->mutable_running();
  pod.mutable_status()->set_hostip("10.0.0.1");
  pod.mutable_status()->add_hostips()->set_ip("10.0.0.2");
  pod.mutable_status()->add_podips()->set_ip("10.1.0.5");
  pod.mutable_status()->add_podips()->set_ip("10.1.0.5");
  pod.mutable_status()->set_nominatednodename("Bad_Node");
  auto* cond = pod.mutable_status()->add_conditions();
  cond->set_type("my condition");
  EXPECT_THAT(
      Texts(s.ValidateStatusUpdate(pod, old)),
      ElementsAre(
          "metadata.conditions[0].Type: Invalid value: \"my condition\": name "
          "part must consist of alphanumeric characters, '-', '_' or '.', and "
          "must start and end with an alphanumeric character (e.g. 'MyName',  "
          "or 'my.name',  or '123-abc', regex used for validation is "
          "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
          "status.nominatedNodeName: Invalid value: \"Bad_Node\": a lowercase "
          "RFC 1123 subdomain must consist of lower case alphanumeric "
          "characters, '-' or '.', and must start and end with an "
          "alphanumeric character (e.g. 'example.com', regex used for "
          "validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
          "status.containerStatuses[0].state: Forbidden: may not be "
          "transitioned to non-terminated state",
          "status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:"
          "\"10.1.0.5\"}, core.PodIP{IP:\"10.1.0.5\"}}: may specify no more "
          "than one IP for each IP family",
          "status.podIPs[1]: Duplicate value: core.PodIP{IP:\"10.1.0.5\"}",
          "status.hostIPs[0].ip: Invalid value: \"10.0.0.2\": must be equal to "
          "`hostIP`"));
}

TEST(BindingTest, ApplyBindingAssignsNodeAndCondition) {
  auto pod = ValidPod();
  pod.mutable_metadata()->set_uid("u1");
  auto b = Decode<objects::corev1::Binding>(R"({"metadata":{"name":"web",
    "annotations":{"scheduler.io/score":"7"}},"target":{"kind":"Node","name":"n1"}})");
  ASSERT_TRUE(ApplyBinding(b, &pod, testing::At(testing::kCreated)).ok());
  EXPECT_EQ(pod.spec().nodename(), "n1");
  EXPECT_EQ(pod.metadata().annotations().at("scheduler.io/score"), "7");
  ASSERT_EQ(pod.status().conditions_size(), 1);
  EXPECT_EQ(pod.status().conditions(0).type(), "PodScheduled");
  EXPECT_EQ(pod.status().conditions(0).status(), "True");
  EXPECT_EQ(objects::UnixSeconds(pod.status().conditions(0).lasttransitiontime()),
            testing::kCreated);

  Status again = ApplyBinding(b, &pod, testing::At(testing::kCreated));
  EXPECT_EQ(again.code(), StatusCode::kConflict);
  EXPECT_EQ(again.message(), "pod web is already assigned to node \"n1\"");

  auto gated = ValidPod();
  gated.mutable_spec()->add_schedulinggates()->set_name("a.io/g");
  EXPECT_EQ(ApplyBinding(b, &gated, testing::At(0)).message(),
            "pod web has non-empty .spec.schedulingGates");

  auto other = ValidPod();
  other.mutable_metadata()->set_uid("u2");
  b.mutable_metadata()->set_uid("u1");
  EXPECT_EQ(ApplyBinding(b, &other, testing::At(0)).message(),
            "Precondition failed: UID in precondition: u1, UID in object meta: "
            "u2");

  auto deleting = ValidPod();
  deleting.mutable_metadata()->mutable_deletiontimestamp()->set_seconds(5);
  b.mutable_metadata()->clear_uid();
  EXPECT_EQ(ApplyBinding(b, &deleting, testing::At(0)).message(),
            "pod web is being deleted, cannot be assigned to a host");
}

TEST(PodValidationTest, GatedPodGetsSchedulingGatedCondition) {
  auto pod = PodFrom(R"({"metadata":{"name":"g","namespace":"d"},
    "spec":{"schedulingGates":[{"name":"example.com/quota"}],
    "containers":[{"name":"c","image":"i"}]}})");
  ASSERT_EQ(pod.status().conditions_size(), 1);
  EXPECT_EQ(pod.status().conditions(0).reason(), "SchedulingGated");
  EXPECT_THAT(objects::EncodeJson(pod.status()),
              HasSubstr("\"message\":\"Scheduling is blocked due to non-empty "
                        "scheduling gates\""));
}

}  // namespace
}  // namespace kplane::apiserver
