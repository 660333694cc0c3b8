#include "kubeletsim/objects.h"

#include <gtest/gtest.h>

#include "objects/time.h"

namespace kplane::kubeletsim {
namespace {

WallTime At(int64_t s) { return WallTime(seconds(s)); }

const corev1::NodeCondition* Cond(const corev1::NodeStatus& s,
                                  const std::string& type) {
  for (const auto& c : s.conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}
const corev1::PodCondition* Cond(const corev1::PodStatus& s,
                                 const std::string& type) {
  for (const auto& c : s.conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

TEST(ObjectsTest, NodeIdentityAddresses) {
  NodeIdentity id = MakeNodeIdentity("node-300", 300);
  EXPECT_EQ(id.pod_cidr, "10.65.44.0/24");
  EXPECT_EQ(id.internal_ip, "172.16.1.45");
  EXPECT_EQ(FormatIPv4(id.pod_net | 7), "10.65.44.7");
  EXPECT_EQ(MakeNodeIdentity("a", 0).pod_cidr, "10.64.0.0/24");
  EXPECT_EQ(MakeNodeIdentity("b", 16383).pod_cidr, "10.127.255.0/24");
}

TEST(ObjectsTest, BuildNodeHasWhatTheControlPlaneReads) {
  NodeTemplate t;
  t.cpu = "8";
  t.memory = "32Gi";
  t.pods = "50";
  t.labels["zone"] = "a";
  t.taints.push_back(*ParseTaint("dedicated=sim:NoSchedule"));
  corev1::Node n = BuildNode(t, MakeNodeIdentity("node-1", 1), At(1000));
  EXPECT_EQ(n.metadata().name(), "node-1");
  EXPECT_EQ(n.metadata().labels().at("kubernetes.io/hostname"), "node-1");
  EXPECT_EQ(n.metadata().labels().at("kubernetes.io/os"), "linux");
  EXPECT_EQ(n.metadata().labels().at("zone"), "a");
  EXPECT_EQ(n.spec().podcidr(), "10.64.1.0/24");
  ASSERT_EQ(n.spec().taints_size(), 1);
  EXPECT_EQ(n.spec().taints(0).key(), "dedicated");
  EXPECT_EQ(n.spec().taints(0).value(), "sim");
  EXPECT_EQ(n.spec().taints(0).effect(), "NoSchedule");
  EXPECT_EQ(n.status().capacity().at("cpu").string(), "8");
  EXPECT_EQ(n.status().allocatable().at("memory").string(), "32Gi");
  EXPECT_EQ(n.status().allocatable().at("pods").string(), "50");
  EXPECT_EQ(n.status().nodeinfo().kubeletversion(), kKubeletVersion);
  ASSERT_GE(n.status().addresses_size(), 1);
  EXPECT_EQ(n.status().addresses(0).type(), "InternalIP");
  EXPECT_EQ(n.status().addresses(0).address(), "172.16.0.2");
  for (const char* type :
       {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}) {
    const corev1::NodeCondition* c = Cond(n.status(), type);
    ASSERT_NE(c, nullptr) << type;
    EXPECT_EQ(c->status(), std::string(type) == "Ready" ? "True" : "False");
    EXPECT_EQ(objects::UnixSeconds(c->lastheartbeattime()), 1000);
  }
  EXPECT_FALSE(NodeStatusDiffers(t, n.status()));
}

TEST(ObjectsTest, RefreshKeepsTransitionTimesAndRepairsConditions) {
  NodeTemplate t;
  NodeIdentity id = MakeNodeIdentity("node-1", 1);
  corev1::Node n = BuildNode(t, id, At(1000));
  // The node lifecycle controller marks the node Unknown.
  for (auto& c : *n.mutable_status()->mutable_conditions()) {
    if (c.type() == "Ready") c.set_status("Unknown");
  }
  EXPECT_TRUE(NodeStatusDiffers(t, n.status()));
  RefreshNodeStatus(t, id, At(2000), n.mutable_status());
  EXPECT_FALSE(NodeStatusDiffers(t, n.status()));
  const corev1::NodeCondition* ready = Cond(n.status(), "Ready");
  EXPECT_EQ(ready->status(), "True");
  EXPECT_EQ(objects::UnixSeconds(ready->lasttransitiontime()), 2000);
  EXPECT_EQ(objects::UnixSeconds(ready->lastheartbeattime()), 2000);
  const corev1::NodeCondition* mem = Cond(n.status(), "MemoryPressure");
  EXPECT_EQ(objects::UnixSeconds(mem->lasttransitiontime()), 1000);
  EXPECT_EQ(objects::UnixSeconds(mem->lastheartbeattime()), 2000);
  t.cpu = "4";
  EXPECT_TRUE(NodeStatusDiffers(t, n.status()));
}

TEST(ObjectsTest, Lease) {
  coordinationv1::Lease l = BuildLease("node-2", "uid-9", 40, At(1234));
  EXPECT_EQ(l.metadata().namespace_(), "kube-node-lease");
  EXPECT_EQ(l.metadata().name(), "node-2");
  EXPECT_EQ(l.spec().holderidentity(), "node-2");
  EXPECT_EQ(l.spec().leasedurationseconds(), 40);
  EXPECT_EQ(objects::ToWallTime(l.spec().renewtime()), At(1234));
  ASSERT_EQ(l.metadata().ownerreferences_size(), 1);
  EXPECT_EQ(l.metadata().ownerreferences(0).kind(), "Node");
  EXPECT_EQ(l.metadata().ownerreferences(0).uid(), "uid-9");
  EXPECT_EQ(BuildLease("n", "", 40, At(1)).metadata().ownerreferences_size(),
            0);
}

corev1::Pod TestPod() {
  corev1::Pod p;
  p.mutable_metadata()->set_name("web");
  p.mutable_metadata()->set_namespace_("default");
  p.mutable_metadata()->set_uid("u1");
  p.mutable_spec()->set_nodename("node-1");
  corev1::Container* c = p.mutable_spec()->add_containers();
  c->set_name("app");
  c->set_image("nginx:1.27");
  c = p.mutable_spec()->add_containers();
  c->set_name("side");
  c->set_image("ghcr.io/x/side:v1");
  return p;
}

TEST(ObjectsTest, PodStages) {
  corev1::Pod pod = TestPod();
  PodRuntime rt;
  rt.host_ip = "172.16.0.2";
  rt.start_time = At(100);

  corev1::PodStatus s = BuildPodStatus(pod, PodStage::kCreating, rt);
  EXPECT_EQ(s.phase(), "Pending");
  EXPECT_EQ(s.hostip(), "172.16.0.2");
  EXPECT_EQ(s.podip(), "");
  EXPECT_EQ(objects::UnixSeconds(s.starttime()), 100);
  ASSERT_EQ(s.containerstatuses_size(), 2);
  EXPECT_EQ(s.containerstatuses(0).state().waiting().reason(),
            "ContainerCreating");
  EXPECT_FALSE(s.containerstatuses(0).ready());
  EXPECT_EQ(Cond(s, "PodScheduled")->status(), "True");
  EXPECT_EQ(Cond(s, "Initialized")->status(), "True");
  EXPECT_EQ(Cond(s, "ContainersReady")->status(), "False");
  EXPECT_EQ(Cond(s, "Ready")->status(), "False");
  EXPECT_EQ(s.qosclass(), "BestEffort");

  rt.pod_ip = "10.64.1.2";
  rt.started_at = At(101);
  s = BuildPodStatus(pod, PodStage::kStarted, rt);
  EXPECT_EQ(s.phase(), "Running");
  EXPECT_EQ(s.podip(), "10.64.1.2");
  ASSERT_EQ(s.podips_size(), 1);
  const corev1::ContainerStatus& cs = s.containerstatuses(0);
  EXPECT_TRUE(cs.started());
  EXPECT_FALSE(cs.ready());
  EXPECT_EQ(cs.restartcount(), 0);
  EXPECT_EQ(objects::UnixSeconds(cs.state().running().startedat()), 101);
  EXPECT_EQ(cs.containerid(), FakeContainerId("u1", "app"));
  EXPECT_EQ(cs.containerid().substr(0, 13), "containerd://");
  const std::string nginx = "docker.io/library/nginx@sha256:";
  EXPECT_EQ(cs.imageid().substr(0, nginx.size()), nginx);
  EXPECT_EQ(cs.imageid().size(), nginx.size() + 64);
  const std::string side = "ghcr.io/x/side@sha256:";
  EXPECT_EQ(s.containerstatuses(1).imageid().substr(0, side.size()), side);
  EXPECT_EQ(Cond(s, "Ready")->status(), "False");

  rt.ready_at = At(105);
  s = BuildPodStatus(pod, PodStage::kReady, rt);
  EXPECT_TRUE(s.containerstatuses(1).ready());
  EXPECT_EQ(Cond(s, "Ready")->status(), "True");
  EXPECT_EQ(Cond(s, "ContainersReady")->status(), "True");
  EXPECT_EQ(objects::UnixSeconds(Cond(s, "Ready")->lasttransitiontime()), 105);

  rt.finished_at = At(200);
  s = BuildPodStatus(pod, PodStage::kTerminated, rt);
  EXPECT_EQ(s.phase(), "Succeeded");
  EXPECT_EQ(s.containerstatuses(0).state().terminated().exitcode(), 0);
  EXPECT_EQ(s.containerstatuses(0).state().terminated().reason(), "Completed");
  EXPECT_EQ(objects::UnixSeconds(
                s.containerstatuses(0).state().terminated().finishedat()),
            200);
  EXPECT_EQ(Cond(s, "Ready")->status(), "False");
  EXPECT_EQ(Cond(s, "Ready")->reason(), "PodCompleted");
}

TEST(ObjectsTest, PodScheduledTransitionIsKept) {
  corev1::Pod pod = TestPod();
  corev1::PodCondition* c = pod.mutable_status()->add_conditions();
  c->set_type("PodScheduled");
  c->set_status("True");
  objects::SetTime(c->mutable_lasttransitiontime(), 42);
  PodRuntime rt;
  rt.start_time = At(100);
  corev1::PodStatus s = BuildPodStatus(pod, PodStage::kCreating, rt);
  EXPECT_EQ(objects::UnixSeconds(Cond(s, "PodScheduled")->lasttransitiontime()),
            42);
}

// Kubernetes' status manager (mergePodStatus) keeps the conditions of the
// API pod that the kubelet does not own: a controller's or a user's custom
// condition, and DisruptionTarget (shared) from an eviction.
TEST(ObjectsTest, ConditionsTheKubeletDoesNotOwnAreKept) {
  corev1::Pod pod = TestPod();
  corev1::PodCondition* c = pod.mutable_status()->add_conditions();
  c->set_type("example.com/custom");
  c->set_status("True");
  c->set_reason("Because");
  objects::SetTime(c->mutable_lasttransitiontime(), 7);
  c = pod.mutable_status()->add_conditions();
  c->set_type("DisruptionTarget");
  c->set_status("True");
  c->set_reason("EvictionByEvictionAPI");
  // A stale kubelet-owned condition is replaced, not duplicated.
  c = pod.mutable_status()->add_conditions();
  c->set_type("Ready");
  c->set_status("True");
  PodRuntime rt;
  rt.start_time = At(100);
  rt.started_at = At(101);
  for (PodStage stage : {PodStage::kCreating, PodStage::kStarted,
                         PodStage::kReady, PodStage::kTerminated}) {
    corev1::PodStatus s = BuildPodStatus(pod, stage, rt);
    const corev1::PodCondition* custom = Cond(s, "example.com/custom");
    ASSERT_NE(custom, nullptr) << PodStageName(stage);
    EXPECT_EQ(custom->status(), "True");
    EXPECT_EQ(custom->reason(), "Because");
    EXPECT_EQ(objects::UnixSeconds(custom->lasttransitiontime()), 7);
    const corev1::PodCondition* dt = Cond(s, "DisruptionTarget");
    ASSERT_NE(dt, nullptr) << PodStageName(stage);
    EXPECT_EQ(dt->reason(), "EvictionByEvictionAPI");
    int ready = 0;
    for (const auto& k : s.conditions()) ready += k.type() == "Ready";
    EXPECT_EQ(ready, 1);
  }
  EXPECT_EQ(
      Cond(BuildPodStatus(pod, PodStage::kCreating, rt), "Ready")->status(),
      "False");
}

// Containers killed at the pod's deletion die of the kubelet's SIGTERM
// (exit 143): the pod ends Failed, as Kubernetes reports a deleted pod
// whose containers did not all exit 0, so that a Job does not count it as
// succeeded.
TEST(ObjectsTest, ContainersKilledAtDeletionFailThePod) {
  corev1::Pod pod = TestPod();
  PodRuntime rt;
  rt.start_time = At(100);
  rt.started_at = At(101);
  rt.finished_at = At(200);
  rt.exit_code = kKilledExitCode;
  corev1::PodStatus s = BuildPodStatus(pod, PodStage::kTerminated, rt);
  EXPECT_EQ(s.phase(), "Failed");
  ASSERT_EQ(s.containerstatuses_size(), 2);
  EXPECT_EQ(s.containerstatuses(0).state().terminated().exitcode(), 143);
  EXPECT_EQ(s.containerstatuses(0).state().terminated().reason(), "Error");
  EXPECT_EQ(Cond(s, "Ready")->status(), "False");
  EXPECT_EQ(Cond(s, "Ready")->reason(), "ContainersNotReady");
}

// GeneratePodReadyCondition: Ready only when the containers are and every
// readiness gate's condition is True.
TEST(ObjectsTest, ReadinessGates) {
  corev1::Pod pod = TestPod();
  pod.mutable_spec()->add_readinessgates()->set_conditiontype("example.com/lb");
  pod.mutable_spec()->add_readinessgates()->set_conditiontype("example.com/fw");
  PodRuntime rt;
  rt.start_time = At(100);
  rt.started_at = At(101);
  rt.ready_at = At(105);
  corev1::PodStatus s = BuildPodStatus(pod, PodStage::kReady, rt);
  EXPECT_EQ(Cond(s, "ContainersReady")->status(), "True");
  const corev1::PodCondition* ready = Cond(s, "Ready");
  EXPECT_EQ(ready->status(), "False");
  EXPECT_EQ(ready->reason(), "ReadinessGatesNotReady");
  EXPECT_EQ(ready->message(),
            "corresponding condition of pod readiness gate \"example.com/lb\" "
            "does not exist., corresponding condition of pod readiness gate "
            "\"example.com/fw\" does not exist.");

  corev1::PodCondition* lb = pod.mutable_status()->add_conditions();
  lb->set_type("example.com/lb");
  lb->set_status("True");
  corev1::PodCondition* fw = pod.mutable_status()->add_conditions();
  fw->set_type("example.com/fw");
  fw->set_status("False");
  s = BuildPodStatus(pod, PodStage::kReady, rt);
  ready = Cond(s, "Ready");
  EXPECT_EQ(ready->status(), "False");
  EXPECT_EQ(ready->reason(), "ReadinessGatesNotReady");
  EXPECT_EQ(ready->message(),
            "the status of pod readiness gate \"example.com/fw\" is not "
            "\"True\", but False");

  pod.mutable_status()->mutable_conditions(1)->set_status("True");
  s = BuildPodStatus(pod, PodStage::kReady, rt);
  EXPECT_EQ(Cond(s, "Ready")->status(), "True");
  EXPECT_EQ(Cond(s, "Ready")->reason(), "");
  EXPECT_EQ(objects::UnixSeconds(Cond(s, "Ready")->lasttransitiontime()), 105);
  // Unready containers say so first, gates or not.
  s = BuildPodStatus(pod, PodStage::kStarted, rt);
  EXPECT_EQ(Cond(s, "Ready")->reason(), "ContainersNotReady");
}

// isPodStatusByKubeletEqual: what the kubelet would write against what the
// API holds, ignoring others' conditions and condition times.
TEST(ObjectsTest, PodStatusByKubeletEqual) {
  corev1::Pod pod = TestPod();
  PodRuntime rt;
  rt.start_time = At(100);
  rt.started_at = At(101);
  rt.ready_at = At(105);
  rt.pod_ip = "10.64.1.2";
  corev1::PodStatus want = BuildPodStatus(pod, PodStage::kReady, rt);
  corev1::PodStatus api = want;
  EXPECT_TRUE(PodStatusByKubeletEqual(api, want));
  // Someone else's condition, or a transition time moved: still equal.
  corev1::PodCondition* c = api.add_conditions();
  c->set_type("example.com/custom");
  c->set_status("True");
  objects::SetTime(api.mutable_conditions(0)->mutable_lasttransitiontime(), 1);
  EXPECT_TRUE(PodStatusByKubeletEqual(api, want));
  // The node lifecycle controller marked the pod not Ready.
  for (auto& k : *api.mutable_conditions()) {
    if (k.type() == "Ready") k.set_status("False");
  }
  EXPECT_FALSE(PodStatusByKubeletEqual(api, want));
  api = want;
  api.set_podip("10.64.1.9");
  EXPECT_FALSE(PodStatusByKubeletEqual(api, want));
  api = want;
  api.mutable_containerstatuses(0)->set_ready(false);
  EXPECT_FALSE(PodStatusByKubeletEqual(api, want));
  api = want;
  api.mutable_conditions()->RemoveLast();
  EXPECT_FALSE(PodStatusByKubeletEqual(api, want));
}

TEST(ObjectsTest, QosClass) {
  corev1::Pod pod = TestPod();
  pod.mutable_spec()->mutable_containers()->RemoveLast();
  auto* r = pod.mutable_spec()->mutable_containers(0)->mutable_resources();
  (*r->mutable_requests())["cpu"].set_string("100m");
  EXPECT_EQ(BuildPodStatus(pod, PodStage::kCreating, {}).qosclass(),
            "Burstable");
  (*r->mutable_limits())["cpu"].set_string("100m");
  (*r->mutable_limits())["memory"].set_string("1Gi");
  EXPECT_EQ(BuildPodStatus(pod, PodStage::kCreating, {}).qosclass(),
            "Guaranteed");
}

TEST(ObjectsTest, ParseLabelsAndTaints) {
  auto l = ParseLabel("zone=us-east-1a");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->first, "zone");
  EXPECT_EQ(l->second, "us-east-1a");
  EXPECT_FALSE(ParseLabel("novalue").ok());
  EXPECT_FALSE(ParseLabel("=x").ok());
  auto t = ParseTaint("gpu:NoExecute");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->key(), "gpu");
  EXPECT_FALSE(t->has_value());
  EXPECT_EQ(t->effect(), "NoExecute");
  EXPECT_FALSE(ParseTaint("gpu=x").ok());
  EXPECT_FALSE(ParseTaint("gpu=x:Sometimes").ok());
  EXPECT_FALSE(ParseTaint(":NoSchedule").ok());
}

}  // namespace
}  // namespace kplane::kubeletsim
