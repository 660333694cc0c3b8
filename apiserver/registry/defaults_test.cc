// Defaulting on real manifests: what kube-apiserver 1.32 stores for
// `kubectl run`, `kubectl create deployment`, an nginx Deployment YAML, a
// Service, a Secret and a Namespace.
#include "apiserver/registry/defaults.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/test_util.h"
#include "objects/yaml.h"
#include "apiserver/registry/test_util.h"

namespace kplane::apiserver {
namespace {

using objects::testing::JsonEqual;
using objects::testing::ReadTestdata;
using testing::Decode;
using testing::StrategyOf;

TEST(PullPolicyTest, LatestOrNoTagIsAlways) {
  struct Case {
    const char* image;
    const char* policy;
  } cases[] = {
      {"nginx", "Always"},
      {"nginx:latest", "Always"},
      {"nginx:1.27", "IfNotPresent"},
      {"docker.io/library/nginx", "Always"},
      {"localhost:5000/web", "Always"},
      {"localhost:5000/web:v2", "IfNotPresent"},
      {"registry.example.com:443/team/app:latest", "Always"},
      {"nginx@sha256:"
       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
       "IfNotPresent"},
      {"nginx:1.2@sha256:"
       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
       "IfNotPresent"},
      // Unparsable references: upstream ignores the error, tag "".
      {"NGINX", "IfNotPresent"},
      {"", "IfNotPresent"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(defaults::DefaultPullPolicy(c.image), c.policy) << c.image;
  }
}

TEST(DefaultsTest, KubectlRunPodAsStoredByKubeApiserver) {
  auto pod = Decode<objects::corev1::Pod>(ReadTestdata("kubectl_run_pod.json"));
  const Strategy& s = StrategyOf("", "pods");
  s.Default(&pod);
  s.PrepareForCreate(&pod);
  pod.mutable_metadata()->set_namespace_("default");
  EXPECT_TRUE(s.ValidateCreate(pod).empty())
      << ::testing::PrintToString(testing::Texts(s.ValidateCreate(pod)));
  EXPECT_TRUE(JsonEqual(R"({
    "metadata":{"name":"web","namespace":"default","creationTimestamp":null,
                "labels":{"run":"web"}},
    "spec":{
      "containers":[{"name":"web","image":"nginx","resources":{},
        "terminationMessagePath":"/dev/termination-log",
        "terminationMessagePolicy":"File","imagePullPolicy":"Always"}],
      "restartPolicy":"Always","terminationGracePeriodSeconds":30,
      "dnsPolicy":"ClusterFirst","serviceAccountName":"default",
      "serviceAccount":"default","securityContext":{},
      "schedulerName":"default-scheduler",
      "tolerations":[
        {"key":"node.kubernetes.io/not-ready","operator":"Exists",
         "effect":"NoExecute","tolerationSeconds":300},
        {"key":"node.kubernetes.io/unreachable","operator":"Exists",
         "effect":"NoExecute","tolerationSeconds":300}],
      "priority":0,"enableServiceLinks":true,
      "preemptionPolicy":"PreemptLowerPriority"},
    "status":{"phase":"Pending","qosClass":"BestEffort"}})",
                        objects::EncodeJson(pod)));
}

TEST(DefaultsTest, KubectlCreateDeploymentAsStoredByKubeApiserver) {
  auto d = Decode<objects::appsv1::Deployment>(
      ReadTestdata("kubectl_create_deployment.json"));
  const Strategy& s = StrategyOf("apps", "deployments");
  s.Default(&d);
  s.PrepareForCreate(&d);
  EXPECT_TRUE(JsonEqual(R"({
    "metadata":{"name":"web","generation":1,"creationTimestamp":null,
                "labels":{"app":"web"}},
    "spec":{
      "replicas":1,"selector":{"matchLabels":{"app":"web"}},
      "template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},
        "spec":{"containers":[{"name":"nginx","image":"nginx","resources":{},
            "terminationMessagePath":"/dev/termination-log",
            "terminationMessagePolicy":"File","imagePullPolicy":"Always"}],
          "restartPolicy":"Always","terminationGracePeriodSeconds":30,
          "dnsPolicy":"ClusterFirst","securityContext":{},
          "schedulerName":"default-scheduler"}},
      "strategy":{"type":"RollingUpdate",
                  "rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}},
      "revisionHistoryLimit":10,"progressDeadlineSeconds":600},
    "status":{}})",
                        objects::EncodeJson(d)));
}

TEST(DefaultsTest, NginxDeploymentYamlKeepsWhatIsGiven) {
  const char* yaml = R"(
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: default
spec:
  replicas: 3
  selector:
    matchLabels: {app: nginx}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1}
  template:
    metadata:
      labels: {app: nginx}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
        readinessProbe:
          httpGet: {port: 80}
        livenessProbe:
          tcpSocket: {port: 80}
          periodSeconds: 5
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
      volumes:
      - name: cache
      - name: conf
        configMap: {name: nginx-conf}
)";
  objects::appsv1::Deployment d;
  auto r = objects::DecodeYaml(yaml, &d);
  ASSERT_TRUE(r.ok()) << r.status();
  const Strategy& s = StrategyOf("apps", "deployments");
  s.Default(&d);
  const auto& spec = d.spec();
  EXPECT_EQ(spec.replicas(), 3);
  // Only the missing maxUnavailable is defaulted.
  EXPECT_EQ(spec.strategy().rollingupdate().maxsurge().intval(), 1);
  EXPECT_EQ(spec.strategy().rollingupdate().maxsurge().type(), 0);
  EXPECT_EQ(spec.strategy().rollingupdate().maxunavailable().strval(), "25%");
  const auto& c = spec.template_().spec().containers(0);
  EXPECT_EQ(c.imagepullpolicy(), "IfNotPresent");
  EXPECT_EQ(c.ports(0).protocol(), "TCP");
  EXPECT_EQ(c.readinessprobe().handler().httpget().path(), "/");
  EXPECT_EQ(c.readinessprobe().handler().httpget().scheme(), "HTTP");
  EXPECT_EQ(c.readinessprobe().timeoutseconds(), 1);
  EXPECT_EQ(c.readinessprobe().periodseconds(), 10);
  EXPECT_EQ(c.readinessprobe().successthreshold(), 1);
  EXPECT_EQ(c.readinessprobe().failurethreshold(), 3);
  EXPECT_EQ(c.livenessprobe().periodseconds(), 5);  // given, kept
  EXPECT_EQ(c.env(0).valuefrom().fieldref().apiversion(), "v1");
  const auto& vols = spec.template_().spec().volumes();
  EXPECT_TRUE(vols[0].volumesource().has_emptydir());
  EXPECT_EQ(vols[1].volumesource().configmap().defaultmode(), 420);
  // Templates do not get the Pod-only defaults.
  EXPECT_FALSE(spec.template_().spec().has_enableservicelinks());
  EXPECT_TRUE(s.ValidateCreate(d).empty())
      << ::testing::PrintToString(testing::Texts(s.ValidateCreate(d)));
}

TEST(DefaultsTest, PodRequestsDefaultToLimitsAndQosIsGuaranteed) {
  auto pod =
      Decode<objects::corev1::Pod>(R"({"metadata":{"name":"p","namespace":"d"},
    "spec":{"containers":[{"name":"c","image":"busybox",
      "resources":{"limits":{"cpu":"500m","memory":"128Mi"}}}]}})");
  const Strategy& s = StrategyOf("", "pods");
  s.Default(&pod);
  s.PrepareForCreate(&pod);
  const auto& req = pod.spec().containers(0).resources().requests();
  EXPECT_EQ(req.at("cpu").string(), "500m");
  EXPECT_EQ(req.at("memory").string(), "128Mi");
  EXPECT_EQ(pod.status().qosclass(), "Guaranteed");
}

TEST(DefaultsTest, QosClasses) {
  struct Case {
    const char* resources;
    const char* qos;
  } cases[] = {
      {R"({})", "BestEffort"},
      {R"({"requests":{"cpu":"100m"}})", "Burstable"},
      {R"({"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"500m"}})",
       "Burstable"},
      {R"({"limits":{"cpu":"1","memory":"1Gi"}})", "Guaranteed"},
      {R"({"requests":{"cpu":"0"}})", "BestEffort"},
      {R"({"limits":{"nvidia.com/gpu":"1"}})", "BestEffort"},
  };
  const Strategy& s = StrategyOf("", "pods");
  for (const auto& c : cases) {
    auto pod = Decode<objects::corev1::Pod>(
        std::string(
            R"({"spec":{"containers":[{"name":"c","image":"i","resources":)") +
        c.resources + "}]}}");
    s.Default(&pod);
    s.PrepareForCreate(&pod);
    EXPECT_EQ(pod.status().qosclass(), c.qos) << c.resources;
  }
}

TEST(DefaultsTest, HostNetworkCopiesContainerPortsToHostPorts) {
  auto pod = Decode<objects::corev1::Pod>(R"({"spec":{"hostNetwork":true,
    "containers":[{"name":"c","image":"i","ports":[{"containerPort":8080}]}]}})");
  StrategyOf("", "pods").Default(&pod);
  EXPECT_EQ(pod.spec().containers(0).ports(0).hostport(), 8080);
}

TEST(DefaultsTest, DeprecatedServiceAccountMirrorsServiceAccountName) {
  auto pod = Decode<objects::corev1::Pod>(R"({"spec":{"serviceAccount":"robot",
    "containers":[{"name":"c","image":"i"}]}})");
  StrategyOf("", "pods").Default(&pod);
  EXPECT_EQ(pod.spec().serviceaccountname(), "robot");
  EXPECT_EQ(pod.spec().serviceaccount(), "robot");
}

TEST(DefaultsTest, AdmissionKeepsExistingTolerationsAndPriorityClass) {
  auto pod = Decode<objects::corev1::Pod>(R"({"spec":{"priorityClassName":"high",
    "tolerations":[{"operator":"Exists"}],
    "containers":[{"name":"c","image":"i"}]}})");
  const Strategy& s = StrategyOf("", "pods");
  s.Default(&pod);
  s.PrepareForCreate(&pod);
  // An empty-key Exists toleration already covers both taints.
  EXPECT_EQ(pod.spec().tolerations_size(), 1);
  EXPECT_FALSE(pod.spec().has_priority());
}

TEST(DefaultsTest, ReplicaSetReplicasDefaultToOne) {
  auto rs = Decode<objects::appsv1::ReplicaSet>(R"({"spec":{"selector":
    {"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
    "spec":{"containers":[{"name":"c","image":"i:1"}]}}}})");
  StrategyOf("apps", "replicasets").Default(&rs);
  EXPECT_TRUE(rs.spec().has_replicas());
  EXPECT_EQ(rs.spec().replicas(), 1);
  EXPECT_EQ(rs.spec().template_().spec().restartpolicy(), "Always");
}

TEST(DefaultsTest, ExplicitZeroReplicasIsKept) {
  auto d = Decode<objects::appsv1::Deployment>(R"({"spec":{"replicas":0}})");
  StrategyOf("apps", "deployments").Default(&d);
  EXPECT_EQ(d.spec().replicas(), 0);
  EXPECT_NE(objects::EncodeJson(d).find("\"replicas\":0"), std::string::npos);
}

TEST(DefaultsTest, RecreateStrategyGetsNoRollingUpdate) {
  auto d = Decode<objects::appsv1::Deployment>(
      R"({"spec":{"strategy":{"type":"Recreate"}}})");
  StrategyOf("apps", "deployments").Default(&d);
  EXPECT_FALSE(d.spec().strategy().has_rollingupdate());
}

TEST(DefaultsTest, Service) {
  auto svc = Decode<objects::corev1::Service>(R"({"metadata":{"name":"web"},
    "spec":{"selector":{"app":"web"},"ports":[{"port":80},
      {"name":"named","port":443,"targetPort":"https"}]}})");
  const Strategy& s = StrategyOf("", "services");
  s.Default(&svc);
  s.PrepareForCreate(&svc);
  EXPECT_TRUE(JsonEqual(R"({
    "metadata":{"name":"web","creationTimestamp":null},
    "spec":{"ports":[{"protocol":"TCP","port":80,"targetPort":80},
                     {"name":"named","protocol":"TCP","port":443,"targetPort":"https"}],
      "selector":{"app":"web"},"type":"ClusterIP","sessionAffinity":"None",
      "ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack",
      "internalTrafficPolicy":"Cluster"},
    "status":{"loadBalancer":{}}})",
                        objects::EncodeJson(svc)));
}

TEST(DefaultsTest, LoadBalancerServiceDefaults) {
  auto svc = Decode<objects::corev1::Service>(
      R"({"spec":{"type":"LoadBalancer","sessionAffinity":"ClientIP",
          "ports":[{"port":80}]}})");
  StrategyOf("", "services").Default(&svc);
  EXPECT_EQ(svc.spec().externaltrafficpolicy(), "Cluster");
  EXPECT_TRUE(svc.spec().allocateloadbalancernodeports());
  EXPECT_EQ(svc.spec().sessionaffinityconfig().clientip().timeoutseconds(),
            10800);
}

TEST(DefaultsTest, SecretTypeOpaqueAndStringDataFolded) {
  auto sec = Decode<objects::corev1::Secret>(R"({"metadata":{"name":"s"},
    "data":{"a":"b2xk","b":"Yg=="},"stringData":{"a":"new"}})");
  StrategyOf("", "secrets").Default(&sec);
  EXPECT_EQ(sec.type(), "Opaque");
  EXPECT_EQ(sec.data().at("a"), "new");
  EXPECT_EQ(sec.data().at("b"), "b");
  EXPECT_TRUE(sec.stringdata().empty());
}

TEST(DefaultsTest, NamespaceActiveWithFinalizerAndNameLabel) {
  auto ns = Decode<objects::corev1::Namespace>(R"({"metadata":{"name":"team-a"}})");
  const Strategy& s = StrategyOf("", "namespaces");
  s.Default(&ns);
  s.PrepareForCreate(&ns);
  EXPECT_TRUE(
      JsonEqual(R"({"metadata":{"name":"team-a","creationTimestamp":null,
      "labels":{"kubernetes.io/metadata.name":"team-a"}},
    "spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}})",
                objects::EncodeJson(ns)));
}

TEST(DefaultsTest, NodeAllocatableDefaultsToCapacity) {
  auto node = Decode<objects::corev1::Node>(
      R"({"metadata":{"name":"n1"},"status":{"capacity":{"cpu":"4","pods":"110"}}})");
  StrategyOf("", "nodes").Default(&node);
  EXPECT_EQ(node.status().allocatable().at("cpu").string(), "4");
  EXPECT_EQ(node.status().allocatable().at("pods").string(), "110");
}

TEST(DefaultsTest, VolumeSourceDefaults) {
  auto pod = Decode<objects::corev1::Pod>(
      R"({"spec":{"containers":[{"name":"c","image":"i"}],
    "volumes":[{"name":"s","secret":{"secretName":"x"}},
               {"name":"h","hostPath":{"path":"/data"}},
               {"name":"p","projected":{"sources":[{"serviceAccountToken":{"path":"t"}}]}},
               {"name":"d","downwardAPI":{"items":[{"path":"n","fieldRef":{"fieldPath":"metadata.name"}}]}}]}})");
  StrategyOf("", "pods").Default(&pod);
  const auto& v = pod.spec().volumes();
  EXPECT_EQ(v[0].volumesource().secret().defaultmode(), 420);
  EXPECT_TRUE(v[1].volumesource().hostpath().has_type());
  EXPECT_EQ(v[1].volumesource().hostpath().type(), "");
  EXPECT_EQ(v[2].volumesource().projected().defaultmode(), 420);
  EXPECT_EQ(v[2].volumesource()
                .projected()
                .sources(0)
                .serviceaccounttoken()
                .expirationseconds(),
            3600);
  EXPECT_EQ(v[3].volumesource().downwardapi().items(0).fieldref().apiversion(),
            "v1");
}

}  // namespace
}  // namespace kplane::apiserver
