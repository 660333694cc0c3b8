// events.k8s.io/v1 with the real kubectl (1.32) against the whole control
// plane `kplane up` runs in process (security on): events the controllers
// record through core/v1 are listed as events.k8s.io/v1 (`kubectl get
// events.v1.events.k8s.io -A`), an event created through events.k8s.io/v1
// shows in `kubectl events` (core/v1), RBAC authorizes the group on its own,
// and the Python client's EventsV1Api lists them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cmd/kplane/control_plane.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::e2e {
namespace {

constexpr char kDeployment[] = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.27
)";

// What client-go's events.EventRecorder writes.
constexpr char kEvent[] = R"(apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: web.checked
  namespace: default
eventTime: "2026-12-01T10:00:00.000000Z"
reportingController: example.com/checker
reportingInstance: checker-1
action: Check
reason: Checked
regarding:
  apiVersion: apps/v1
  kind: Deployment
  name: web
  namespace: default
note: written through events.k8s.io/v1
type: Normal
)";

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

TEST(KubectlEventsV1, ListedAcrossVersionsUnderRbac) {
  char tmpl[] = "/tmp/kplane-eventsv1-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  cmd::UpOptions o;
  o.data_dir = dir + "/data";
  o.apiserver_port = 0;
  o.store_port = 0;
  o.nodes = 1;
  o.controllers = true;
  o.controller_manager_port = -1;
  o.kubeconfig_out = dir + "/kubeconfig";
  auto cp = cmd::ControlPlane::Start(o);
  ASSERT_TRUE(cp.ok()) << cp.status();
  const std::vector<std::string> env = {"KUBECONFIG=" + dir + "/kubeconfig",
                                        "HOME=" + dir};
  auto kubectl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl", "--cache-dir", dir + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, env);
    p.Start();
    return p.Wait(std::chrono::milliseconds(120000));
  };
  std::ofstream(dir + "/deploy.yaml") << kDeployment;
  RunResult r = kubectl({"apply", "-f", dir + "/deploy.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"rollout", "status", "deployment/web", "--timeout=120s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // The controllers' core/v1 events, listed through events.k8s.io/v1 with
  // the server's table.
  r = kubectl({"get", "events.v1.events.k8s.io", "-A"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "NAMESPACE")) << r.out;
  EXPECT_TRUE(Contains(r.out, "REASON")) << r.out;
  EXPECT_TRUE(Contains(r.out, "ScalingReplicaSet")) << r.out;
  EXPECT_TRUE(Contains(r.out, "deployment/web")) << r.out;
  EXPECT_TRUE(Contains(r.out, "SuccessfulCreate")) << r.out;
  r = kubectl({"get", "events.events.k8s.io", "-o",
               "jsonpath={range .items[?(@.reason==\"ScalingReplicaSet\")]}"
               "{.apiVersion} {.regarding.kind}/{.regarding.name}: "
               "{.note}{\"\\n\"}{end}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "events.k8s.io/v1 Deployment/web: Scaled up "))
      << r.out;

  // An event written through events.k8s.io/v1 is a core/v1 event too.
  std::ofstream(dir + "/event.yaml") << kEvent;
  r = kubectl({"create", "-f", dir + "/event.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"events", "--for", "deployment/web"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "Checked")) << r.out;
  EXPECT_TRUE(Contains(r.out, "written through events.k8s.io/v1")) << r.out;
  EXPECT_TRUE(Contains(r.out, "ScalingReplicaSet")) << r.out;
  r = kubectl({"get", "events", "web.checked", "-o",
               "jsonpath={.apiVersion} {.involvedObject.name} "
               "{.reportingComponent} {.message}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "v1 web example.com/checker written through events.k8s.io/v1");
  // Kube's validation of the version: a core/v1-style body is refused.
  std::ofstream(dir + "/old.yaml")
      << "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata:\n"
         "  name: old\nregarding: {kind: Pod, name: x, namespace: default}\n"
         "note: hi\ntype: Normal\n";
  r = kubectl({"create", "-f", dir + "/old.yaml"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.err, "eventTime: Required value")) << r.err;

  // RBAC authorizes events.k8s.io on its own: a ServiceAccount allowed to
  // list core/v1 events only is refused the other group.
  r = kubectl({"config", "view", "--raw", "-o",
               "jsonpath={.clusters[0].cluster.server}"});
  const std::string server = r.out;
  ASSERT_EQ(kubectl({"create", "serviceaccount", "reader"}).exit_code, 0);
  r = kubectl({"create", "role", "core-events", "--verb=get,list",
               "--resource=events"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"create", "rolebinding", "core-events", "--role=core-events",
               "--serviceaccount=default:reader"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult t = kubectl({"create", "token", "reader"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const std::string token = t.out.substr(0, t.out.find('\n'));
  auto as_reader = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"--kubeconfig=/dev/null",
                                     "--server=" + server,
                                     "--insecure-skip-tls-verify",
                                     "--token=" + token,
                                     "-n",
                                     "default"};
    argv.insert(argv.end(), args.begin(), args.end());
    return kubectl(argv);
  };
  r = as_reader({"get", "events", "web.checked"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = as_reader({"get", "events.v1.events.k8s.io", "web.checked"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Contains(r.err,
                       "cannot get resource \"events\" in API group "
                       "\"events.k8s.io\""))
      << r.err;
  r = kubectl({"create", "role", "new-events", "--verb=get,list",
               "--resource=events.events.k8s.io"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kubectl({"create", "rolebinding", "new-events", "--role=new-events",
               "--serviceaccount=default:reader"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A binding takes effect once the authorizer's watch cache has it: a
  // few kubectl runs at most (each takes ~100 ms).
  for (int i = 0; i < 20; ++i) {
    r = as_reader({"get", "events.v1.events.k8s.io", "web.checked"});
    if (r.exit_code == 0) break;
  }
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "Checked")) << r.out;

  // The Python client (Debian's python3-kubernetes). Its EventsV1Event
  // refuses a null eventTime, which core/v1-style events have (against
  // kube too), so it lists the new-style event by field selector.
  {
    Process probe({"/usr/bin/python3", "-c", "import kubernetes"}, env);
    probe.Start();
    if (probe.Wait(std::chrono::milliseconds(30000)).exit_code == 0) {
      Process py({"/usr/bin/python3", "-c",
                  "from kubernetes import client, config\n"
                  "config.load_kube_config()\n"
                  "evs = client.EventsV1Api().list_namespaced_event("
                  "'default', field_selector="
                  "'regarding.name=web,reason=Checked')\n"
                  "for e in evs.items:\n"
                  "  print(e.reporting_controller, e.note)\n"},
                 env);
      py.Start();
      RunResult pr = py.Wait(std::chrono::milliseconds(60000));
      EXPECT_EQ(pr.exit_code, 0) << pr.err;
      EXPECT_EQ(pr.out,
                "example.com/checker written through events.k8s.io/v1\n");
    } else {
      // As KubectlTest.PythonClientListsNodesWithTheKubeconfig, which
      // skips: scripts/install-deps.sh installs the package.
      std::cerr << "python3-kubernetes is not installed: EventsV1Api not "
                   "checked\n";
    }
  }

  cp->reset();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kplane::e2e
