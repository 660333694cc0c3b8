// StatefulSets and DaemonSets with the real kubectl (issue 20): the whole
// control plane `kplane up` runs (in process, ephemeral ports, security on:
// the controllers act as system:kube-controller-manager under RBAC, the
// simulated nodes as system:node:<name>), kubectl talks to it through the
// kubeconfig `up` writes.
//
// StatefulSet: `kubectl apply` and `rollout status` complete; a watch of
// the pods (kubectl get -w --output-watch-events, running the whole
// time) shows web-1 created only after web-0 was Ready, a scale down
// deleting web-2 before web-1, and an image change rolling web-2, then
// web-1, then web-0. DaemonSet: one pod per node, `rollout status`, a node
// that joins later gets its pod, an image change rolls. Disruption: a
// Service's EndpointSlice lists its pods' addresses, `kubectl get pdb`
// shows the budget, `kubectl drain` is refused by it (429 from
// pods/eviction, retried until --timeout) and goes through once the budget
// allows a disruption. Rollout history: `kubectl rollout history` of a
// DaemonSet and a StatefulSet lists the ControllerRevisions their
// controllers keep, `--revision=1` shows the first template, and
// `kubectl rollout undo` brings the pods back to it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/metrics.h"
#include "cmd/kplane/control_plane.h"
#include "kubeletsim/fleet.h"
#include "net/tls.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::e2e {
namespace {

constexpr char kStatefulSet[] = R"(apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.0
)";

constexpr char kDaemonSet[] = R"(apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: agent:1.0
)";

// One pod as a watch event showed it.
struct Seen {
  std::string type;  // ADDED | MODIFIED | DELETED
  std::string name;
  std::string image;
  bool ready = false;
  bool deleting = false;
};

// Parses kubectl's `--output-watch-events -o custom-columns=` lines
// ("MODIFIED  web-0  nginx:1.0  True  <none>": kWatchColumns). Compact on
// purpose: a watch's pipe is read only at the end, and JSON would fill it.
// With --output-watch-events the columns apply to the WatchEvent.
constexpr char kWatchColumns[] =
    "custom-columns=EVENT:.type,NAME:.object.metadata.name,"
    "IMAGE:.object.spec.containers[0].image,"
    "READY:.object.status.conditions[?(@.type==\"Ready\")].status,"
    "DELETING:.object.metadata.deletionTimestamp";

std::vector<Seen> ParseWatchEvents(const std::string& out) {
  std::vector<Seen> events;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream cols(line);
    Seen s;
    std::string ready, deleting;
    if (!(cols >> s.type >> s.name >> s.image >> ready >> deleting)) continue;
    if (s.type == "EVENT") continue;  // the header
    s.ready = ready == "True";
    s.deleting = deleting != "<none>";
    events.push_back(s);
  }
  return events;
}

// The index of the first event matching `pred`, or -1.
template <typename Pred>
int First(const std::vector<Seen>& events, Pred pred) {
  for (size_t i = 0; i < events.size(); ++i) {
    if (pred(events[i])) return static_cast<int>(i);
  }
  return -1;
}

class WorkloadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kplane-workloads-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cmd::UpOptions o;
    o.data_dir = dir_ + "/data";
    o.apiserver_port = 0;
    o.store_port = 0;
    o.nodes = 2;
    o.controllers = true;
    o.kubeletsim_port = -1;
    o.controller_manager_port = -1;
    o.kubeconfig_out = dir_ + "/kubeconfig";
    auto cp = cmd::ControlPlane::Start(o);
    ASSERT_TRUE(cp.ok()) << cp.status();
    cp_ = std::move(*cp);
  }
  void TearDown() override {
    extra_nodes_.reset();
    cp_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  RunResult Kubectl(std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl", "--cache-dir", dir_ + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, Env());
    p.Start();
    return p.Wait(std::chrono::milliseconds(150000));
  }
  // Runs kubectl and expects it to succeed; returns its stdout.
  std::string MustKubectl(std::vector<std::string> args) {
    RunResult r = Kubectl(args);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << cmd << "\n" << r.out << r.err;
    return r.out;
  }
  std::vector<std::string> Env() const {
    return {"KUBECONFIG=" + dir_ + "/kubeconfig", "HOME=" + dir_};
  }
  std::string File(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

  std::string dir_;
  std::unique_ptr<cmd::ControlPlane> cp_;
  metrics::Registry extra_nodes_metrics_;
  std::unique_ptr<kubeletsim::Fleet> extra_nodes_;
};

TEST_F(WorkloadsTest, StatefulSetOrderedScaleAndRollingUpdate) {
  Process watch({"kubectl", "--cache-dir", dir_ + "/cache", "get", "pods", "-l",
                 "app=web", "-w", "--output-watch-events", "-o", kWatchColumns},
                Env());
  watch.Start();
  MustKubectl({"wait", "--for=condition=Ready", "node/node-0", "node/node-1",
               "--timeout=60s"});

  MustKubectl({"apply", "-f", File("sts.yaml", kStatefulSet)});
  MustKubectl({"rollout", "status", "statefulset/web", "--timeout=120s"});
  std::string table = MustKubectl({"get", "statefulsets"});
  EXPECT_NE(table.find("READY"), std::string::npos) << table;
  EXPECT_NE(table.find("3/3"), std::string::npos) << table;
  std::string labels = MustKubectl(
      {"get", "pod", "web-1", "-o",
       "jsonpath={.metadata.labels.statefulset\\.kubernetes\\.io/pod-name} "
       "{.metadata.labels.apps\\.kubernetes\\.io/pod-index} "
       "{.metadata.ownerReferences[0].kind}"});
  EXPECT_EQ(labels, "web-1 1 StatefulSet");

  MustKubectl({"scale", "statefulset/web", "--replicas=1"});
  MustKubectl({"wait", "--for=delete", "pod/web-1", "--timeout=120s"});
  MustKubectl({"rollout", "status", "statefulset/web", "--timeout=120s"});

  MustKubectl({"scale", "statefulset/web", "--replicas=3"});
  MustKubectl({"rollout", "status", "statefulset/web", "--timeout=120s"});
  MustKubectl({"set", "image", "statefulset/web", "app=nginx:2.0"});
  MustKubectl({"rollout", "status", "statefulset/web", "--timeout=120s"});
  std::string images = MustKubectl(
      {"get", "pods", "-l", "app=web", "-o",
       "jsonpath={range .items[*]}{.metadata.name}={.spec.containers[0]."
       "image} {end}"});
  EXPECT_EQ(images, "web-0=nginx:2.0 web-1=nginx:2.0 web-2=nginx:2.0 ");
  std::string revisions = MustKubectl(
      {"get", "statefulset", "web", "-o",
       "jsonpath={.status.currentRevision}={.status.updateRevision}"});
  size_t eq = revisions.find('=');
  ASSERT_NE(eq, std::string::npos);
  EXPECT_EQ(revisions.substr(0, eq), revisions.substr(eq + 1));

  watch.Signal(SIGTERM);
  RunResult w = watch.Wait(std::chrono::milliseconds(10000));
  File("watch.txt", w.out);  // kept for a look when the test fails
  std::vector<Seen> ev = ParseWatchEvents(w.out);
  ASSERT_GT(ev.size(), 10u) << w.out.substr(0, 2000);
  std::string history;  // for failure messages
  for (const Seen& s : ev) {
    history += s.type + " " + s.name + " " + s.image +
               (s.ready ? " ready" : "") + (s.deleting ? " deleting" : "") +
               "\n";
  }
  SCOPED_TRACE(history);
  auto first = [&](const std::string& name, auto pred) {
    return First(ev, [&](const Seen& s) { return s.name == name && pred(s); });
  };
  auto any = [](const Seen&) { return true; };
  auto ready = [](const Seen& s) { return s.ready && !s.deleting; };
  // OrderedReady scale up: each pod appears only once the one before is
  // Ready.
  EXPECT_GT(first("web-1", any), first("web-0", ready));
  EXPECT_GT(first("web-2", any), first("web-1", ready));
  EXPECT_GE(first("web-0", ready), 0);
  // Scale down: web-2 is gone before web-1 starts terminating.
  int web2_gone =
      first("web-2", [](const Seen& s) { return s.type == "DELETED"; });
  ASSERT_GE(web2_gone, 0);
  EXPECT_GT(first("web-1", [](const Seen& s) { return s.deleting; }),
            web2_gone);
  // Rolling update from the highest ordinal down, each waiting for the
  // previous one to be Ready at the new image.
  auto updated = [](const Seen& s) { return s.image == "nginx:2.0"; };
  auto updated_ready = [](const Seen& s) {
    return s.image == "nginx:2.0" && s.ready;
  };
  EXPECT_GT(first("web-1", updated), first("web-2", updated_ready));
  EXPECT_GT(first("web-0", updated), first("web-1", updated_ready));
  EXPECT_GE(first("web-2", updated_ready), 0);
}

TEST_F(WorkloadsTest, DaemonSetFollowsNodesAndRolls) {
  MustKubectl({"wait", "--for=condition=Ready", "node/node-0", "node/node-1",
               "--timeout=60s"});
  MustKubectl({"apply", "-f", File("ds.yaml", kDaemonSet)});
  MustKubectl({"rollout", "status", "daemonset/agent", "--timeout=120s"});
  std::string table = MustKubectl({"get", "daemonsets"});
  EXPECT_NE(table.find("NODE SELECTOR"), std::string::npos) << table;
  std::string nodes =
      MustKubectl({"get", "pods", "-l", "app=agent", "-o",
                   "jsonpath={range .items[*]}{.spec.nodeName} {end}"});
  EXPECT_NE(nodes.find("node-0"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("node-1"), std::string::npos) << nodes;
  EXPECT_EQ(std::count(nodes.begin(), nodes.end(), ' '), 2) << nodes;

  // A third simulated node joins (with the admin's certificate: its
  // kubelet identity does not matter here).
  const std::string pki = dir_ + "/data/pki";
  auto tls = net::TlsContext::NewClient({.ca_file = pki + "/ca.crt",
                                         .cert_file = pki + "/admin.crt",
                                         .key_file = pki + "/admin.key"});
  ASSERT_TRUE(tls.ok()) << tls.status();
  kubeletsim::FleetOptions fo;
  fo.server = cp_->apiserver_url();
  fo.tls = *tls;
  fo.nodes = 1;
  fo.first_index = 2;
  fo.port = 0;
  fo.metrics = &extra_nodes_metrics_;
  auto fleet = kubeletsim::Fleet::Start(fo);
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  extra_nodes_ = std::move(*fleet);
  MustKubectl({"wait", "--for=jsonpath={.status.numberAvailable}=3",
               "daemonset/agent", "--timeout=120s"});
  nodes = MustKubectl({"get", "pods", "-l", "app=agent", "-o",
                       "jsonpath={range .items[*]}{.spec.nodeName} {end}"});
  EXPECT_NE(nodes.find("node-2"), std::string::npos) << nodes;

  MustKubectl({"set", "image", "daemonset/agent", "agent=agent:2.0"});
  MustKubectl({"rollout", "status", "daemonset/agent", "--timeout=120s"});
  std::string images = MustKubectl(
      {"get", "pods", "-l", "app=agent", "-o",
       "jsonpath={range .items[*]}{.spec.containers[0].image} {end}"});
  EXPECT_EQ(images, "agent:2.0 agent:2.0 agent:2.0 ") << images;
}

TEST_F(WorkloadsTest, RolloutHistoryAndUndo) {
  MustKubectl({"wait", "--for=condition=Ready", "node/node-0", "node/node-1",
               "--timeout=60s"});
  MustKubectl({"apply", "-f", File("ds.yaml", kDaemonSet)});
  std::string sts = kStatefulSet;
  sts.replace(sts.find("replicas: 3"), 11, "replicas: 2");
  MustKubectl({"apply", "-f", File("sts.yaml", sts)});
  MustKubectl({"rollout", "status", "daemonset/agent", "--timeout=120s"});
  MustKubectl({"rollout", "status", "statefulset/web", "--timeout=120s"});
  MustKubectl({"set", "image", "daemonset/agent", "agent=agent:2.0"});
  MustKubectl({"set", "image", "statefulset/web", "app=nginx:2.0"});
  MustKubectl({"rollout", "status", "daemonset/agent", "--timeout=120s"});
  MustKubectl({"rollout", "status", "statefulset/web", "--timeout=120s"});

  // Served: in discovery and in OpenAPI (kubectl explain).
  std::string resources = MustKubectl({"api-resources", "--api-group=apps"});
  EXPECT_NE(resources.find("controllerrevisions"), std::string::npos)
      << resources;
  std::string explain =
      MustKubectl({"explain", "controllerrevisions.revision"});
  EXPECT_NE(explain.find("KIND:       ControllerRevision"), std::string::npos)
      << explain;
  EXPECT_NE(explain.find("integer"), std::string::npos) << explain;

  // The revisions, as `kubectl get` prints them.
  std::string table = MustKubectl({"get", "controllerrevisions"});
  EXPECT_NE(table.find("CONTROLLER"), std::string::npos) << table;
  EXPECT_NE(table.find("daemonset.apps/agent"), std::string::npos) << table;
  EXPECT_NE(table.find("statefulset.apps/web"), std::string::npos) << table;

  for (const char* set_name : {"daemonset/agent", "statefulset/web"}) {
    const std::string set = set_name;
    SCOPED_TRACE(set);
    const std::string old_image =
        set == "daemonset/agent" ? "agent:1.0" : "nginx:1.0";
    const std::string app = set == "daemonset/agent" ? "agent" : "web";
    std::string history = MustKubectl({"rollout", "history", set});
    EXPECT_NE(history.find("REVISION"), std::string::npos) << history;
    EXPECT_NE(history.find("\n1 "), std::string::npos) << history;
    EXPECT_NE(history.find("\n2 "), std::string::npos) << history;
    std::string first =
        MustKubectl({"rollout", "history", set, "--revision=1"});
    EXPECT_NE(first.find("Image:"), std::string::npos) << first;
    EXPECT_NE(first.find(old_image), std::string::npos) << first;

    std::string undo = MustKubectl({"rollout", "undo", set});
    EXPECT_NE(undo.find("rolled back"), std::string::npos) << undo;
    MustKubectl({"rollout", "status", set, "--timeout=120s"});
    std::string images = MustKubectl(
        {"get", "pods", "-l", "app=" + app, "-o",
         "jsonpath={range .items[*]}{.spec.containers[0].image} {end}"});
    EXPECT_EQ(images, old_image + " " + old_image + " ") << images;
    // Revision 1 came back as revision 3.
    history = MustKubectl({"rollout", "history", set});
    EXPECT_EQ(history.find("\n1 "), std::string::npos) << history;
    EXPECT_NE(history.find("\n3 "), std::string::npos) << history;
  }
  std::string revisions = MustKubectl(
      {"get", "statefulset", "web", "-o",
       "jsonpath={.status.currentRevision} {.status.updateRevision}"});
  size_t space = revisions.find(' ');
  ASSERT_NE(space, std::string::npos) << revisions;
  EXPECT_EQ(revisions.substr(0, space), revisions.substr(space + 1));
  EXPECT_EQ(
      MustKubectl({"get", "controllerrevision", revisions.substr(0, space),
                   "-o", "jsonpath={.revision}"}),
      "3");
}

TEST_F(WorkloadsTest, EndpointSlicesBudgetsAndDrain) {
  MustKubectl({"wait", "--for=condition=Ready", "node/node-0", "node/node-1",
               "--timeout=60s"});
  MustKubectl({"create", "deployment", "web", "--image=nginx", "--replicas=2",
               "--port=8080"});
  MustKubectl({"rollout", "status", "deployment/web", "--timeout=120s"});
  // Exposed once the pods are Ready, so that the first slice already lists
  // them (no placeholder to be replaced while kubectl waits on it).
  MustKubectl(
      {"expose", "deployment", "web", "--port=80", "--target-port=8080"});

  // The EndpointSlice controller lists both pods, ready, with their port.
  MustKubectl({"wait", "endpointslice", "-l", "kubernetes.io/service-name=web",
               "--for=jsonpath={.endpoints[1].conditions.ready}=true",
               "--timeout=60s"});
  std::string ips =
      MustKubectl({"get", "pods", "-l", "app=web", "-o",
                   "jsonpath={range .items[*]}{.status.podIP}{\"\\n\"}{end}"});
  std::string slices = MustKubectl(
      {"get", "endpointslices", "-l", "kubernetes.io/service-name=web"});
  EXPECT_NE(slices.find("ADDRESSTYPE"), std::string::npos) << slices;
  EXPECT_NE(slices.find("IPv4"), std::string::npos) << slices;
  EXPECT_NE(slices.find("8080"), std::string::npos) << slices;
  std::istringstream ip_lines(ips);
  std::string ip;
  int pod_ips = 0;
  while (std::getline(ip_lines, ip)) {
    if (ip.empty()) continue;
    ++pod_ips;
    EXPECT_NE(slices.find(ip), std::string::npos) << ip << "\n" << slices;
  }
  EXPECT_EQ(pod_ips, 2) << ips;
  EXPECT_EQ(MustKubectl({"get", "endpointslice", "kubernetes", "-o",
                         "jsonpath={.ports[0].name}"}),
            "https");

  // A budget that allows no disruption: minAvailable 2 of 2.
  MustKubectl(
      {"create", "pdb", "web", "--selector=app=web", "--min-available=2"});
  MustKubectl({"wait", "pdb/web", "--for=jsonpath={.status.currentHealthy}=2",
               "--timeout=60s"});
  std::string pdbs = MustKubectl({"get", "pdb"});
  EXPECT_NE(pdbs.find("MIN AVAILABLE"), std::string::npos) << pdbs;
  EXPECT_NE(pdbs.find("ALLOWED DISRUPTIONS"), std::string::npos) << pdbs;
  std::istringstream pdb_rows(pdbs);
  std::string header, row_name, min_available, max_unavailable, allowed;
  std::getline(pdb_rows, header);
  pdb_rows >> row_name >> min_available >> max_unavailable >> allowed;
  EXPECT_EQ(
      row_name + " " + min_available + " " + max_unavailable + " " + allowed,
      "web 2 N/A 0")
      << pdbs;

  // Drain the node of one of the pods: refused by the budget until the
  // timeout.
  std::string node = MustKubectl({"get", "pods", "-l", "app=web", "-o",
                                  "jsonpath={.items[0].spec.nodeName}"});
  ASSERT_FALSE(node.empty());
  RunResult refused =
      Kubectl({"drain", node, "--ignore-daemonsets", "--timeout=8s"});
  EXPECT_NE(refused.exit_code, 0) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("Cannot evict pod as it would violate the "
                             "pod's disruption budget."),
            std::string::npos)
      << refused.out << refused.err;
  std::string still =
      MustKubectl({"get", "pods", "-l", "app=web", "--field-selector",
                   "spec.nodeName=" + node, "-o", "name"});
  EXPECT_FALSE(still.empty()) << "the drain evicted a pod";

  // One disruption allowed: the drain evicts the node's pods and ends.
  MustKubectl({"patch", "pdb", "web", "--type=merge", "-p",
               "{\"spec\":{\"minAvailable\":1}}"});
  MustKubectl({"wait", "pdb/web",
               "--for=jsonpath={.status.disruptionsAllowed}=1",
               "--timeout=60s"});
  RunResult drained =
      Kubectl({"drain", node, "--ignore-daemonsets", "--timeout=120s"});
  EXPECT_EQ(drained.exit_code, 0) << drained.out << drained.err;
  EXPECT_NE(drained.out.find("evicted"), std::string::npos) << drained.out;
  EXPECT_NE(drained.out.find("drained"), std::string::npos) << drained.out;
  EXPECT_EQ(MustKubectl({"get", "pods", "-l", "app=web", "--field-selector",
                         "spec.nodeName=" + node, "-o", "name"}),
            "");
}

}  // namespace
}  // namespace kplane::e2e
