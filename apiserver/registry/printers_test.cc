// Table rows as kube-apiserver prints them: pods in each phase and waiting
// reason, nodes Ready/NotReady/cordoned, deployments, replicasets, services,
// events, leases, namespaces, configmaps, secrets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "objects/codec.h"
#include "objects/endpoints_types.h"
#include "objects/test_util.h"
#include "apiserver/registry/test_util.h"

namespace kplane::apiserver {
namespace {

using testing::At;
using testing::Decode;
using testing::kCreated;
using testing::StrategyOf;

// Cells as strings; integer cells print as their number.
std::vector<std::string> Cells(const std::vector<TableCell>& row) {
  std::vector<std::string> out;
  for (const auto& c : row)
    out.push_back(c.is_int ? std::to_string(c.num) : c.str);
  return out;
}

std::vector<std::string> ColumnNames(const Strategy& s) {
  std::vector<std::string> out;
  for (const auto& c : s.Columns()) {
    out.push_back(c.name + (c.priority == 1 ? "*" : ""));
  }
  return out;
}

const char kPodMeta[] =
    R"("metadata":{"name":"web-0","namespace":"default",
       "creationTimestamp":"2026-11-29T08:37:42Z"})";

std::vector<std::string> PodCells(const std::string& rest, int64_t age_s) {
  auto pod =
      Decode<objects::corev1::Pod>("{" + std::string(kPodMeta) + "," + rest + "}");
  return Cells(StrategyOf("", "pods").Row(pod, At(kCreated + age_s)));
}

TEST(PodTableTest, Columns) {
  const Strategy& s = StrategyOf("", "pods");
  EXPECT_EQ(ColumnNames(s),
            (std::vector<std::string>{"Name", "Ready", "Status", "Restarts",
                                      "Age", "IP*", "Node*", "Nominated Node*",
                                      "Readiness Gates*"}));
  auto cols = s.Columns();
  EXPECT_EQ(cols[0].format, "name");
  EXPECT_EQ(cols[3].type, "string");  // Restarts is a string since 1.22
  for (size_t i = 1; i < cols.size(); ++i) EXPECT_EQ(cols[i].format, "");
  EXPECT_FALSE(cols[1].description.empty());
}

TEST(PodTableTest, Rows) {
  struct Case {
    const char* name;
    std::string json;
    int64_t age;
    std::vector<std::string> want;
  } cases[] = {
      {"pending, unscheduled",
       R"("spec":{"containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Pending"})",
       5,
       {"web-0", "0/1", "Pending", "0", "5s", "<none>", "<none>", "<none>",
        "<none>"}},
      {"container creating",
       R"("spec":{"nodeName":"node-1","containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Pending","containerStatuses":[{"name":"c",
            "state":{"waiting":{"reason":"ContainerCreating"}},"ready":false,
            "restartCount":0,"image":"i","imageID":""}]})",
       90,
       {"web-0", "0/1", "ContainerCreating", "0", "90s", "<none>", "node-1",
        "<none>", "<none>"}},
      {"running and ready",
       R"("spec":{"nodeName":"node-1","containers":[{"name":"c","image":"i"},
            {"name":"d","image":"j"}]},
          "status":{"phase":"Running","podIP":"10.244.0.5",
            "podIPs":[{"ip":"10.244.0.5"}],
            "containerStatuses":[
              {"name":"c","state":{"running":{"startedAt":"2026-11-29T08:37:50Z"}},
               "ready":true,"restartCount":0,"image":"i","imageID":""},
              {"name":"d","state":{"running":{"startedAt":"2026-11-29T08:37:50Z"}},
               "ready":false,"restartCount":0,"image":"j","imageID":""}]})",
       3 * 3600,
       {"web-0", "1/2", "Running", "0", "3h", "10.244.0.5", "node-1", "<none>",
        "<none>"}},
      {"crash loop with restarts five minutes ago",
       R"("spec":{"nodeName":"node-1","containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Running","containerStatuses":[{"name":"c",
            "state":{"waiting":{"reason":"CrashLoopBackOff"}},
            "lastState":{"terminated":{"exitCode":1,"reason":"Error",
              "startedAt":"2026-11-29T09:00:00Z",
              "finishedAt":"2026-11-29T09:32:42Z"}},
            "ready":false,"restartCount":5,"image":"i","imageID":""}]})",
       3600,
       {"web-0", "0/1", "CrashLoopBackOff", "5 (5m ago)", "60m", "<none>",
        "node-1", "<none>", "<none>"}},
      {"completed",
       R"("spec":{"containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Succeeded","containerStatuses":[{"name":"c",
            "state":{"terminated":{"exitCode":0,"reason":"Completed",
              "startedAt":null,"finishedAt":null}},
            "ready":false,"restartCount":0,"image":"i","imageID":""}]})",
       7200,
       {"web-0", "0/1", "Completed", "0", "120m", "<none>", "<none>", "<none>",
        "<none>"}},
      {"terminated without reason",
       R"("spec":{"containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Failed","containerStatuses":[{"name":"c",
            "state":{"terminated":{"exitCode":137,"signal":9,
              "startedAt":null,"finishedAt":null}},
            "ready":false,"restartCount":0,"image":"i","imageID":""}]})",
       60,
       {"web-0", "0/1", "Signal:9", "0", "60s", "<none>", "<none>", "<none>",
        "<none>"}},
      {"evicted (status.reason)",
       R"("spec":{"containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Failed","reason":"Evicted"})",
       60,
       {"web-0", "0/1", "Evicted", "0", "60s", "<none>", "<none>", "<none>",
        "<none>"}},
      {"terminating",
       R"("spec":{"nodeName":"node-1","containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Running","containerStatuses":[{"name":"c",
            "state":{"running":{"startedAt":null}},"ready":true,
            "restartCount":0,"image":"i","imageID":""}]})",
       60,
       {"web-0", "1/1", "Terminating", "0", "60s", "<none>", "node-1", "<none>",
        "<none>"}},
      {"init containers running",
       R"("spec":{"initContainers":[{"name":"a","image":"i"},{"name":"b","image":"i"}],
          "containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Pending","initContainerStatuses":[
            {"name":"a","state":{"terminated":{"exitCode":0,"startedAt":null,
              "finishedAt":null}},"ready":true,"restartCount":0,"image":"i","imageID":""},
            {"name":"b","state":{"running":{"startedAt":null}},"ready":false,
             "restartCount":0,"image":"i","imageID":""}]})",
       60,
       {"web-0", "0/1", "Init:1/2", "0", "60s", "<none>", "<none>", "<none>",
        "<none>"}},
      {"init container crash looping",
       R"("spec":{"initContainers":[{"name":"a","image":"i"}],
          "containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Pending","initContainerStatuses":[
            {"name":"a","state":{"waiting":{"reason":"CrashLoopBackOff"}},
             "ready":false,"restartCount":3,"image":"i","imageID":""}]})",
       60,
       {"web-0", "0/1", "Init:CrashLoopBackOff", "3", "60s", "<none>", "<none>",
        "<none>", "<none>"}},
      {"scheduling gated",
       R"("spec":{"containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Pending","conditions":[{"type":"PodScheduled",
            "status":"False","reason":"SchedulingGated",
            "lastProbeTime":null,"lastTransitionTime":null}]})",
       60,
       {"web-0", "0/1", "SchedulingGated", "0", "60s", "<none>", "<none>",
        "<none>", "<none>"}},
      {"readiness gates and nominated node",
       R"("spec":{"readinessGates":[{"conditionType":"a.io/ready"},
            {"conditionType":"b.io/ready"}],
          "containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Pending","nominatedNodeName":"node-2",
            "conditions":[{"type":"a.io/ready","status":"True",
              "lastProbeTime":null,"lastTransitionTime":null}]})",
       60,
       {"web-0", "0/1", "Pending", "0", "60s", "<none>", "<none>", "node-2",
        "1/2"}},
      {"sidecar counts as a container",
       R"("spec":{"initContainers":[{"name":"proxy","image":"i","restartPolicy":"Always"}],
          "containers":[{"name":"c","image":"i"}]},
          "status":{"phase":"Running",
            "conditions":[{"type":"Initialized","status":"True",
              "lastProbeTime":null,"lastTransitionTime":null}],
            "initContainerStatuses":[{"name":"proxy","started":true,"ready":true,
              "state":{"running":{"startedAt":null}},"restartCount":1,
              "image":"i","imageID":""}],
            "containerStatuses":[{"name":"c","ready":true,
              "state":{"running":{"startedAt":null}},"restartCount":0,
              "image":"i","imageID":""}]})",
       60,
       {"web-0", "2/2", "Running", "1", "60s", "<none>", "<none>", "<none>",
        "<none>"}},
  };
  for (auto& c : cases) {
    std::vector<std::string> got;
    if (std::string(c.name) == "terminating") {
      auto pod = Decode<objects::corev1::Pod>(
          R"({"metadata":{"name":"web-0","namespace":"default",
             "creationTimestamp":"2026-11-29T08:37:42Z",
             "deletionTimestamp":"2026-11-29T08:38:00Z"},)" +
          c.json + "}");
      got = Cells(StrategyOf("", "pods").Row(pod, At(kCreated + c.age)));
    } else {
      got = PodCells(c.json, c.age);
    }
    EXPECT_EQ(got, c.want) << c.name;
  }
}

TEST(PodTableTest, FixturePod) {
  auto pod = Decode<objects::corev1::Pod>(objects::testing::ReadTestdata("pod.json"));
  auto cells = Cells(StrategyOf("", "pods").Row(pod, At(kCreated + 600)));
  ASSERT_EQ(cells.size(), 9u);
  EXPECT_EQ(cells[0], "web-7d9c8f6b5-x2k4p");
  EXPECT_EQ(cells[4], "10m");
}

TEST(NodeTableTest, Rows) {
  const Strategy& s = StrategyOf("", "nodes");
  EXPECT_EQ(ColumnNames(s), (std::vector<std::string>{
                                "Name", "Status", "Roles", "Age", "Version",
                                "Internal-IP*", "External-IP*", "OS-Image*",
                                "Kernel-Version*", "Container-Runtime*"}));
  auto ready = Decode<objects::corev1::Node>(R"json({"metadata":{"name":"node-1",
    "creationTimestamp":"2026-11-29T08:37:42Z",
    "labels":{"node-role.kubernetes.io/control-plane":"",
              "node-role.kubernetes.io/worker":"","kubernetes.io/role":"edge"}},
    "status":{"conditions":[{"type":"MemoryPressure","status":"False",
        "lastHeartbeatTime":null,"lastTransitionTime":null},
      {"type":"Ready","status":"True","lastHeartbeatTime":null,
       "lastTransitionTime":null}],
      "addresses":[{"type":"InternalIP","address":"10.0.0.11"},
                   {"type":"Hostname","address":"node-1"}],
      "nodeInfo":{"machineID":"","systemUUID":"","bootID":"",
        "kernelVersion":"6.1.0","osImage":"Debian GNU/Linux 12 (bookworm)",
        "containerRuntimeVersion":"containerd://1.7.0",
        "kubeletVersion":"v1.32.4","kubeProxyVersion":"",
        "operatingSystem":"linux","architecture":"amd64"}}})json");
  EXPECT_EQ(
      Cells(s.Row(ready, At(kCreated + 50 * 3600))),
      (std::vector<std::string>{"node-1", "Ready", "control-plane,edge,worker",
                                "2d2h", "v1.32.4", "10.0.0.11", "<none>",
                                "Debian GNU/Linux 12 (bookworm)", "6.1.0",
                                "containerd://1.7.0"}));

  auto not_ready = ready;
  not_ready.mutable_status()->mutable_conditions(1)->set_status("Unknown");
  not_ready.mutable_spec()->set_unschedulable(true);
  not_ready.mutable_metadata()->clear_labels();
  auto cells = Cells(s.Row(not_ready, At(kCreated + 30)));
  EXPECT_EQ(cells[1], "NotReady,SchedulingDisabled");
  EXPECT_EQ(cells[2], "<none>");

  auto no_status = Decode<objects::corev1::Node>(R"({"metadata":{"name":"n"}})");
  cells = Cells(s.Row(no_status, At(kCreated)));
  EXPECT_EQ(cells[1], "Unknown");
  EXPECT_EQ(cells[3], "<unknown>");
  EXPECT_EQ(cells[7], "<unknown>");
}

TEST(DeploymentTableTest, Rows) {
  const Strategy& s = StrategyOf("apps", "deployments");
  EXPECT_EQ(ColumnNames(s), (std::vector<std::string>{
                                "Name", "Ready", "Up-to-date", "Available",
                                "Age", "Containers*", "Images*", "Selector*"}));
  auto d = Decode<objects::appsv1::Deployment>(
      objects::testing::ReadTestdata("deployment.json"));
  auto row = s.Row(d, At(kCreated + 3600 * 5 + 60 * 7));
  EXPECT_FALSE(row[1].is_int);
  EXPECT_TRUE(row[2].is_int);
  EXPECT_EQ(Cells(row),
            (std::vector<std::string>{"web", "3/3", "3", "3", "5h7m", "nginx",
                                      "nginx:1.27", "app=web"}));
}

TEST(ReplicaSetTableTest, Rows) {
  const Strategy& s = StrategyOf("apps", "replicasets");
  EXPECT_EQ(ColumnNames(s), (std::vector<std::string>{
                                "Name", "Desired", "Current", "Ready", "Age",
                                "Containers*", "Images*", "Selector*"}));
  auto rs = Decode<objects::appsv1::ReplicaSet>(R"({"metadata":{"name":"web-5f",
    "creationTimestamp":"2026-11-29T08:37:42Z"},
    "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web",
      "pod-template-hash":"5f"},"matchExpressions":[{"key":"tier",
      "operator":"NotIn","values":["db","cache"]}]},
      "template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[
        {"name":"a","image":"x:1"},{"name":"b","image":"y:2"}]}}},
    "status":{"replicas":2,"readyReplicas":1}})");
  auto row = s.Row(rs, At(kCreated + 20));
  EXPECT_TRUE(row[1].is_int);
  EXPECT_EQ(Cells(row), (std::vector<std::string>{
                            "web-5f", "3", "2", "1", "20s", "a,b", "x:1,y:2",
                            "app=web,pod-template-hash=5f,tier notin "
                            "(cache,db)"}));
}

TEST(ServiceTableTest, Rows) {
  const Strategy& s = StrategyOf("", "services");
  auto svc = Decode<objects::corev1::Service>(R"({"metadata":{"name":"web",
    "creationTimestamp":"2026-11-29T08:37:42Z"},
    "spec":{"type":"NodePort","clusterIP":"10.96.0.20","clusterIPs":["10.96.0.20"],
      "selector":{"app":"web","tier":"fe"},
      "ports":[{"port":80,"protocol":"TCP","targetPort":8080,"nodePort":30080},
               {"port":53,"protocol":"UDP","targetPort":53}]}})");
  EXPECT_EQ(Cells(s.Row(svc, At(kCreated + 120))),
            (std::vector<std::string>{"web", "NodePort", "10.96.0.20", "<none>",
                                      "80:30080/TCP,53/UDP", "2m",
                                      "app=web,tier=fe"}));
  auto lb = svc;
  lb.mutable_spec()->set_type("LoadBalancer");
  EXPECT_EQ(Cells(s.Row(lb, At(kCreated)))[3], "<pending>");
  lb.mutable_status()->mutable_loadbalancer()->add_ingress()->set_ip("1.2.3.4");
  EXPECT_EQ(Cells(s.Row(lb, At(kCreated)))[3], "1.2.3.4");
  auto en = Decode<objects::corev1::Service>(
      R"({"metadata":{"name":"db"},"spec":{"type":"ExternalName",
          "externalName":"db.example.com"}})");
  EXPECT_EQ(Cells(s.Row(en, At(kCreated))),
            (std::vector<std::string>{"db", "ExternalName", "<none>",
                                      "db.example.com", "<none>", "<unknown>",
                                      "<none>"}));
}

TEST(EventTableTest, Rows) {
  const Strategy& s = StrategyOf("", "events");
  EXPECT_EQ(ColumnNames(s),
            (std::vector<std::string>{"Last Seen", "Type", "Reason", "Object",
                                      "Subobject*", "Source*", "Message",
                                      "First Seen*", "Count*", "Name*"}));
  EXPECT_EQ(s.Columns()[9].format, "name");
  auto ev = Decode<objects::corev1::Event>(R"({"metadata":{"name":"web.17a",
    "namespace":"default"},
    "involvedObject":{"kind":"Pod","namespace":"default","name":"web",
      "fieldPath":"spec.containers{nginx}"},
    "reason":"Pulled","message":"Successfully pulled image \"nginx\"\n",
    "source":{"component":"kubelet","host":"node-1"},
    "firstTimestamp":"2026-11-29T08:37:42Z","lastTimestamp":"2026-11-29T08:40:42Z",
    "count":4,"type":"Normal","eventTime":null,
    "reportingComponent":"","reportingInstance":""})");
  EXPECT_EQ(Cells(s.Row(ev, At(kCreated + 300))),
            (std::vector<std::string>{
                "2m", "Normal", "Pulled", "pod/web", "spec.containers{nginx}",
                "kubelet, node-1", "Successfully pulled image \"nginx\"", "5m",
                "4", "web.17a"}));
  // events.k8s.io-style: eventTime and series, reportingController.
  auto series = Decode<objects::corev1::Event>(R"({"metadata":{"name":"n.1"},
    "involvedObject":{"kind":"Node","name":"node-1"},"reason":"Ready",
    "type":"Normal","eventTime":"2026-11-29T08:37:42.000000Z",
    "series":{"count":7,"lastObservedTime":"2026-11-29T08:38:42.000000Z"},
    "reportingComponent":"node-controller","reportingInstance":""})");
  EXPECT_EQ(
      Cells(s.Row(series, At(kCreated + 120))),
      (std::vector<std::string>{"60s", "Normal", "Ready", "node/node-1", "",
                                "node-controller", "", "2m", "7", "n.1"}));
  auto bare = Decode<objects::corev1::Event>(
      R"({"metadata":{"name":"x"},"involvedObject":{"kind":"Node"}})");
  auto cells = Cells(s.Row(bare, At(kCreated)));
  EXPECT_EQ(cells[0], "<unknown>");
  EXPECT_EQ(cells[3], "node");
  EXPECT_EQ(cells[8], "1");
}

TEST(SmallKindsTableTest, Rows) {
  auto lease =
      Decode<objects::coordinationv1::Lease>(R"({"metadata":{"name":"node-1",
    "namespace":"kube-node-lease","creationTimestamp":"2026-11-29T08:37:42Z"},
    "spec":{"holderIdentity":"node-1","leaseDurationSeconds":40}})");
  const Strategy& ls = StrategyOf("coordination.k8s.io", "leases");
  EXPECT_EQ(ColumnNames(ls),
            (std::vector<std::string>{"Name", "Holder", "Age"}));
  EXPECT_EQ(Cells(ls.Row(lease, At(kCreated + 9 * 86400))),
            (std::vector<std::string>{"node-1", "node-1", "9d"}));

  auto ns = Decode<objects::corev1::Namespace>(R"({"metadata":{"name":"team",
    "creationTimestamp":"2026-11-29T08:37:42Z"},"status":{"phase":"Terminating"}})");
  EXPECT_EQ(
      Cells(StrategyOf("", "namespaces").Row(ns, At(kCreated + 400 * 86400))),
      (std::vector<std::string>{"team", "Terminating", "400d"}));

  auto cm = Decode<objects::corev1::ConfigMap>(R"({"metadata":{"name":"c",
    "creationTimestamp":"2026-11-29T08:37:42Z"},"data":{"a":"1","b":"2"},
    "binaryData":{"c":"AA=="}})");
  auto row = StrategyOf("", "configmaps").Row(cm, At(kCreated + 65));
  EXPECT_TRUE(row[1].is_int);
  EXPECT_EQ(Cells(row), (std::vector<std::string>{"c", "3", "65s"}));

  auto sec = Decode<objects::corev1::Secret>(R"({"metadata":{"name":"s",
    "creationTimestamp":"2026-11-29T08:37:42Z"},"type":"Opaque",
    "data":{"a":"eA=="}})");
  EXPECT_EQ(Cells(StrategyOf("", "secrets").Row(sec, At(kCreated + 3 * 86400))),
            (std::vector<std::string>{"s", "Opaque", "1", "3d"}));
}

TEST(SmallKindsTableTest, ServiceAccountRows) {
  const Strategy& s = StrategyOf("", "serviceaccounts");
  EXPECT_EQ(ColumnNames(s),
            (std::vector<std::string>{"Name", "Secrets", "Age"}));
  auto sa = Decode<objects::corev1::ServiceAccount>(R"({"metadata":{
    "name":"default","creationTimestamp":"2026-11-29T08:37:42Z"},
    "secrets":[{"name":"a"},{"name":"b"}]})");
  auto row = s.Row(sa, At(kCreated + 120));
  EXPECT_TRUE(row[1].is_int);
  EXPECT_EQ(Cells(row), (std::vector<std::string>{"default", "2", "2m"}));
}

TEST(SmallKindsTableTest, EndpointsRows) {
  const Strategy& s = StrategyOf("", "endpoints");
  EXPECT_EQ(ColumnNames(s),
            (std::vector<std::string>{"Name", "Endpoints", "Age"}));
  auto ep = Decode<objects::corev1::Endpoints>(R"({"metadata":{
    "name":"web","creationTimestamp":"2026-11-29T08:37:42Z"},
    "subsets":[{"addresses":[{"ip":"10.0.0.1"},{"ip":"fd00::2"}],
      "notReadyAddresses":[{"ip":"10.0.0.9"}],
      "ports":[{"name":"http","port":80},{"name":"https","port":443}]}]})");
  EXPECT_EQ(
      Cells(s.Row(ep, At(kCreated + 120))),
      (std::vector<std::string>{
          "web", "10.0.0.1:80,[fd00::2]:80,10.0.0.1:443 + 1 more...", "2m"}));
  ep.mutable_subsets(0)->clear_addresses();
  EXPECT_EQ(Cells(s.Row(ep, At(kCreated)))[1], "");
  ep.clear_subsets();
  EXPECT_EQ(Cells(s.Row(ep, At(kCreated)))[1], "<none>");
}

TEST(DefaultTableTest, KindsWithoutPrinter) {
  const Strategy& s = StrategyOf("", "bindings");
  auto cols = s.Columns();
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[1].name, "Created At");
  EXPECT_EQ(cols[1].type, "date");
  auto b = Decode<objects::corev1::Binding>(R"({"metadata":{"name":"web",
    "creationTimestamp":"2026-11-29T08:37:42Z"}})");
  EXPECT_EQ(Cells(s.Row(b, At(0))),
            (std::vector<std::string>{"web", "2026-11-29T08:37:42Z"}));
}

}  // namespace
}  // namespace kplane::apiserver
