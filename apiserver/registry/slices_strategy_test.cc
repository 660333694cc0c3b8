// The discovery.k8s.io/v1 EndpointSlice and policy/v1 PodDisruptionBudget
// strategies: kube 1.32's defaults, validation texts, generation rules and
// printing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "apiserver/registry/test_util.h"
#include "objects/discovery_types.h"

namespace kplane::apiserver {
namespace {

using objects::discoveryv1::EndpointSlice;
using objects::policyv1::PodDisruptionBudget;
using testing::At;
using testing::Decode;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::kCreated;
using testing::StrategyOf;
using testing::Texts;

std::vector<std::string> Cells(const std::vector<TableCell>& row) {
  std::vector<std::string> out;
  for (const auto& c : row) {
    out.push_back(c.is_int ? std::to_string(c.num) : c.str);
  }
  return out;
}

const Strategy& Slices() {
  return StrategyOf("discovery.k8s.io", "endpointslices");
}
const Strategy& Budgets() {
  return StrategyOf("policy", "poddisruptionbudgets");
}

constexpr char kSlice[] = R"({"metadata":{"name":"web-abc12",
  "namespace":"default","creationTimestamp":"2026-11-29T08:37:42Z",
  "labels":{"kubernetes.io/service-name":"web"}},
  "addressType":"IPv4",
  "endpoints":[{"addresses":["10.244.0.5"],"conditions":{"ready":true},
    "nodeName":"node-1"},{"addresses":["10.244.0.6"]}],
  "ports":[{"name":"http","port":8080}]})";

EndpointSlice CreatedSlice(std::string_view json = kSlice) {
  EndpointSlice slice = Decode<EndpointSlice>(json);
  Slices().Default(&slice);
  Slices().PrepareForCreate(&slice);
  return slice;
}

TEST(EndpointSliceStrategyTest, DefaultsPortsAndValidates) {
  EndpointSlice slice = CreatedSlice();
  EXPECT_EQ(slice.ports(0).protocol(), "TCP");
  EXPECT_EQ(slice.metadata().generation(), 1);
  EXPECT_THAT(Texts(Slices().ValidateCreate(slice)), IsEmpty());
  // A port without a name is defaulted to "" (written as "name": "").
  EndpointSlice unnamed = CreatedSlice(R"({"metadata":{"name":"s",
    "namespace":"d"},"addressType":"IPv4","endpoints":[],
    "ports":[{"port":80}]})");
  EXPECT_TRUE(unnamed.ports(0).has_name());
  EXPECT_THAT(Texts(Slices().ValidateCreate(unnamed)), IsEmpty());
}

TEST(EndpointSliceStrategyTest, RefusesWhatKubeRefuses) {
  EndpointSlice slice = CreatedSlice(R"({"metadata":{"name":"s",
    "namespace":"d"},"addressType":"IPv4",
    "endpoints":[{"addresses":[]},{"addresses":["10.0.0.300","127.0.0.1"],
      "hostname":"Bad_Host"}],
    "ports":[{"name":"a","port":1,"protocol":"ICMP"},{"name":"a","port":2}]})");
  EXPECT_THAT(
      Texts(Slices().ValidateCreate(slice)),
      ElementsAre(
          "endpoints[0].addresses: Required value: must contain at least 1 "
          "address",
          "endpoints[1].addresses[0]: Invalid value: \"10.0.0.300\": must be "
          "a valid IPv4 address",
          "endpoints[1].addresses[1]: Invalid value: \"127.0.0.1\": may not "
          "be in the loopback range (127.0.0.0/8, ::1/128)",
          "endpoints[1].hostname: Invalid value: \"Bad_Host\": a lowercase "
          "RFC 1123 label must consist of lower case alphanumeric characters "
          "or '-', and must start and end with an alphanumeric character "
          "(e.g. 'my-name',  or '123-abc', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
          "ports[0].protocol: Unsupported value: \"ICMP\": supported values: "
          "\"SCTP\", \"TCP\", \"UDP\"",
          "ports[1].name: Duplicate value: \"a\""));

  EndpointSlice untyped = CreatedSlice(R"({"metadata":{"name":"s",
    "namespace":"d"},"addressType":"IPX","endpoints":[]})");
  EXPECT_THAT(Texts(Slices().ValidateCreate(untyped)),
              ElementsAre("addressType: Unsupported value: \"IPX\": supported "
                          "values: \"FQDN\", \"IPv4\", \"IPv6\""));
  untyped.clear_addresstype();
  EXPECT_THAT(Texts(Slices().ValidateCreate(untyped)),
              ElementsAre("addressType: Required value"));

  EndpointSlice fqdn = CreatedSlice(R"({"metadata":{"name":"s",
    "namespace":"d"},"addressType":"FQDN",
    "endpoints":[{"addresses":["example.com.","localhost"]}]})");
  EXPECT_THAT(Texts(Slices().ValidateCreate(fqdn)),
              ElementsAre("endpoints[0].addresses[1]: Invalid value: "
                          "\"localhost\": should be a domain with at least two "
                          "segments separated by dots"));

  EndpointSlice big = CreatedSlice();
  while (big.endpoints_size() <= 1000) *big.add_endpoints() = big.endpoints(0);
  EXPECT_THAT(Texts(Slices().ValidateCreate(big)),
              ElementsAre("endpoints: Too many: 1001: must have at most 1000 "
                          "items"));
}

TEST(EndpointSliceStrategyTest, AddressTypeIsImmutableAndGenerationMoves) {
  EndpointSlice old = CreatedSlice();
  EndpointSlice same = old;
  same.mutable_metadata()->mutable_annotations()->insert({"a", "b"});
  Slices().PrepareForUpdate(&same, old);
  EXPECT_EQ(same.metadata().generation(), 1);

  EndpointSlice relabelled = old;
  (*relabelled.mutable_metadata()->mutable_labels())["x"] = "y";
  Slices().PrepareForUpdate(&relabelled, old);
  EXPECT_EQ(relabelled.metadata().generation(), 2);

  EndpointSlice v6 = old;
  v6.set_addresstype("IPv6");
  v6.clear_endpoints();
  Slices().PrepareForUpdate(&v6, old);
  EXPECT_EQ(v6.metadata().generation(), 2);
  EXPECT_THAT(Texts(Slices().ValidateUpdate(v6, old)),
              ElementsAre("addressType: Invalid value: \"IPv6\": field is "
                          "immutable"));
}

TEST(EndpointSliceStrategyTest, PrintsLikeKubectl) {
  EXPECT_EQ(Slices().Columns().size(), 5u);
  EXPECT_EQ(Slices().Columns()[1].name, "AddressType");
  EndpointSlice slice = CreatedSlice();
  EXPECT_THAT(
      Cells(Slices().Row(slice, At(kCreated + 90))),
      ElementsAre("web-abc12", "IPv4", "8080", "10.244.0.5,10.244.0.6", "90s"));
  for (int i = 0; i < 3; ++i) *slice.add_endpoints() = slice.endpoints(0);
  slice.mutable_ports(0)->clear_port();
  EXPECT_THAT(
      Cells(Slices().Row(slice, At(kCreated + 90))),
      ElementsAre("web-abc12", "IPv4", "http",
                  "10.244.0.5,10.244.0.6,10.244.0.5 + 2 more...", "90s"));
  slice.clear_endpoints();
  slice.clear_ports();
  EXPECT_THAT(Cells(Slices().Row(slice, At(kCreated + 90))),
              ElementsAre("web-abc12", "IPv4", "<unset>", "<unset>", "90s"));
}

PodDisruptionBudget Budget(std::string_view spec) {
  PodDisruptionBudget pdb = Decode<PodDisruptionBudget>(
      R"({"metadata":{"name":"web","namespace":"default",
      "creationTimestamp":"2026-11-29T08:37:42Z"},"spec":)" +
      std::string(spec) + R"(,"status":{"disruptionsAllowed":5}})");
  Budgets().Default(&pdb);
  Budgets().PrepareForCreate(&pdb);
  return pdb;
}

TEST(PodDisruptionBudgetStrategyTest, ValidatesSpec) {
  PodDisruptionBudget ok =
      Budget(R"({"minAvailable":2,"selector":{"matchLabels":{"app":"web"}}})");
  EXPECT_EQ(ok.status().disruptionsallowed(), 0) << "status is cleared";
  EXPECT_EQ(ok.metadata().generation(), 1);
  EXPECT_THAT(Texts(Budgets().ValidateCreate(ok)), IsEmpty());

  PodDisruptionBudget bad = Budget(
      R"({"minAvailable":"150%","maxUnavailable":-1,
      "unhealthyPodEvictionPolicy":"Sometimes"})");
  EXPECT_THAT(
      Texts(Budgets().ValidateCreate(bad)),
      ElementsAre(
          "spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:"
          "intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}, "
          "MaxUnavailable:intstr.IntOrString{Type:0, IntVal:-1, StrVal:\"\"}}: "
          "minAvailable and maxUnavailable cannot be both set",
          "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, "
          "IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
          "spec.maxUnavailable: Invalid value: -1: must be greater than or "
          "equal to 0",
          "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Sometimes\": "
          "supported values: \"AlwaysAllow\", \"IfHealthyBudget\""));
}

TEST(PodDisruptionBudgetStrategyTest, SpecAndStatusAreWrittenApart) {
  PodDisruptionBudget old = Budget(R"({"maxUnavailable":1})");
  old.mutable_status()->set_disruptionsallowed(1);

  PodDisruptionBudget update = old;
  update.mutable_spec()->mutable_maxunavailable()->set_intval(2);
  update.mutable_status()->set_disruptionsallowed(7);
  Budgets().PrepareForUpdate(&update, old);
  EXPECT_EQ(update.status().disruptionsallowed(), 1);
  EXPECT_EQ(update.metadata().generation(), 2);

  PodDisruptionBudget status = old;
  status.mutable_spec()->mutable_maxunavailable()->set_intval(3);
  status.mutable_status()->set_disruptionsallowed(-1);
  Budgets().PrepareForStatusUpdate(&status, old);
  EXPECT_EQ(status.spec().maxunavailable().intval(), 1);
  EXPECT_THAT(Texts(Budgets().ValidateStatusUpdate(status, old)),
              ElementsAre("status.disruptionsAllowed: Invalid value: -1: must "
                          "be greater than or equal to 0"));
}

TEST(PodDisruptionBudgetStrategyTest, PrintsLikeKubectl) {
  PodDisruptionBudget pdb = Budget(R"({"maxUnavailable":"25%"})");
  pdb.mutable_status()->set_disruptionsallowed(1);
  EXPECT_THAT(Cells(Budgets().Row(pdb, At(kCreated + 90))),
              ElementsAre("web", "N/A", "25%", "1", "90s"));
  EXPECT_EQ(Budgets().Columns()[3].name, "Allowed Disruptions");
}

}  // namespace
}  // namespace kplane::apiserver
