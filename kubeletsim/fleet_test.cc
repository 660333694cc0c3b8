// The fleet against the real API server in process (an embedded
// single-member store), with the fleet's timers on a FakeClock. The test
// observes the API through informers of its own (real clock) and awaits
// their events on a condition variable; the deadline only turns a hang into
// a failure.
#include "kubeletsim/fleet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>

#include "apiserver/test_server.h"
#include "base/mutex.h"
#include "informer/api_errors.h"
#include "informer/fake_api_server.h"
#include "informer/list_watch.h"
#include "informer/rest_client.h"
#include "informer/shared_informer.h"
#include "kubeletsim/control_server.h"
#include "kubeletsim/pod_logs.h"
#include "net/http_client.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::kubeletsim {
namespace {

using informer::ObjectPtr;
constexpr Duration kDeadline = seconds(20);

// Follows one resource; every event wakes Await().
class Observer {
 public:
  Observer(informer::RestClient* client, const objects::ResourceInfo* r,
           std::string ns = "") {
    informer_ = std::make_unique<informer::SharedIndexInformer>(
        std::make_shared<informer::RestListerWatcher>(
            client, r, informer::ListWatchScope{.ns = ns}));
    auto notify = [this](const ObjectPtr& o) {
      std::lock_guard<std::recursive_mutex> l(mu_);
      history_.push_back(o);
      cv_.notify_all();
    };
    informer_->AddEventHandler(informer::EventHandlerFuncs{
        .on_add = [notify](const ObjectPtr& o, bool) { notify(o); },
        .on_update = [notify](const ObjectPtr&,
                              const ObjectPtr& o) { notify(o); },
        .on_delete =
            [notify](const informer::DeletedObject& d) { notify(d.object); },
    });
    informer_->Start();
    CHECK(informer_->WaitForCacheSync(kDeadline));
  }
  ~Observer() { informer_->Stop(); }

  template <typename T>
  std::shared_ptr<const T> Get(const std::string& key) {
    return std::static_pointer_cast<const T>(informer_->GetIndexer().Get(key));
  }
  size_t Size() { return informer_->GetIndexer().Size(); }
  // Waits until pred() (checked after every event) holds.
  bool Await(const std::function<bool()>& pred) {
    std::unique_lock<std::recursive_mutex> l(mu_);
    return cv_.wait_for(l, kDeadline, [&] { return pred(); });
  }
  std::vector<ObjectPtr> History() {
    std::lock_guard<std::recursive_mutex> l(mu_);
    return history_;
  }

 private:
  std::unique_ptr<informer::SharedIndexInformer> informer_;
  // Recursive: Await's predicate may call History().
  std::recursive_mutex mu_;
  std::condition_variable_any cv_;
  std::vector<ObjectPtr> history_;
};

template <typename T>
const objects::ResourceInfo* R() {
  return informer::RestClient::ResourceFor<T>();
}

std::string CondStatus(const corev1::Node& n, const std::string& type) {
  for (const auto& c : n.status().conditions()) {
    if (c.type() == type) return c.status();
  }
  return "";
}
std::string CondStatus(const corev1::Pod& p, const std::string& type) {
  for (const auto& c : p.status().conditions()) {
    if (c.type() == type) return c.status();
  }
  return "";
}

class FleetTest : public ::testing::Test {
 protected:
  FleetTest() {
    auto c = informer::RestClient::New(
        {.server = "http://127.0.0.1:" + std::to_string(server_.port())});
    CHECK(c.ok());
    client_ = std::move(*c);
    nodes_ = std::make_unique<Observer>(client_.get(), R<corev1::Node>());
    leases_ = std::make_unique<Observer>(
        client_.get(), R<coordinationv1::Lease>(), kNodeLeaseNamespace);
    pods_ = std::make_unique<Observer>(client_.get(), R<corev1::Pod>());
  }
  ~FleetTest() override {
    if (fleet_) fleet_->Stop();
  }

  FleetOptions Options(int nodes) {
    FleetOptions o;
    o.server = "http://127.0.0.1:" + std::to_string(server_.port());
    o.nodes = nodes;
    o.port = 0;  // no control endpoint
    o.clock = &clock_;
    o.metrics = &metrics_;
    o.seed = 7;
    o.workers = 4;
    // Pod CIDRs by index (the expected addresses below); PodsWaitFor-
    // TheNodeIpamsCidr covers the node IPAM's way.
    o.register_pod_cidr = true;
    o.on_pod_step = [this](const std::string& pod, const std::string& step) {
      MutexLock l(&steps_mu_);
      steps_.push_back(pod + " " + step);
      steps_cv_.notify_all();
    };
    return o;
  }

  // Starts the fleet and waits until every node is registered, Ready, and
  // has its lease.
  void StartFleet(FleetOptions o) {
    auto f = Fleet::Start(o);
    ASSERT_TRUE(f.ok()) << f.status();
    fleet_ = std::move(*f);
    size_t n = static_cast<size_t>(o.nodes);
    ASSERT_TRUE(nodes_->Await([&] { return nodes_->Size() == n; }));
    ASSERT_TRUE(leases_->Await([&] { return leases_->Size() == n; }));
    fleet_->WaitIdle();
  }

  std::shared_ptr<const coordinationv1::Lease> Lease(const std::string& n) {
    return leases_->Get<coordinationv1::Lease>(
        std::string(kNodeLeaseNamespace) + "/" + n);
  }
  int64_t Renewals(const std::string& n) {
    for (const NodeInfo& i : fleet_->List()) {
      if (i.name == n) return i.lease_renewals;
    }
    return -1;
  }
  std::string CidrOf(const std::string& n) {
    for (const NodeInfo& i : fleet_->List()) {
      if (i.name == n) return i.pod_cidr;
    }
    return "?";
  }
  int64_t StatusUpdates(const std::string& n) {
    for (const NodeInfo& i : fleet_->List()) {
      if (i.name == n) return i.status_updates;
    }
    return -1;
  }
  void Advance(Duration d) {
    clock_.Advance(d);
    fleet_->WaitIdle();
  }
  corev1::Pod MakePod(const std::string& name, const std::string& node) {
    corev1::Pod p;
    p.mutable_metadata()->set_name(name);
    p.mutable_metadata()->set_namespace_("default");
    p.mutable_spec()->set_nodename(node);
    corev1::Container* c = p.mutable_spec()->add_containers();
    c->set_name("app");
    c->set_image("nginx:1.27");
    return p;
  }
  std::shared_ptr<const corev1::Pod> Pod(const std::string& name) {
    return pods_->Get<corev1::Pod>("default/" + name);
  }
  bool AwaitPod(const std::string& name,
                const std::function<bool(const corev1::Pod&)>& pred) {
    return pods_->Await([&] {
      auto p = Pod(name);
      return p && pred(*p);
    });
  }

  // Waits until the fleet has put `step` of `pod` on the clock, so that
  // advancing the clock next fires it.
  void AwaitStep(const std::string& pod, const std::string& step) {
    MutexLock l(&steps_mu_);
    ASSERT_TRUE(steps_cv_.wait_for(
        l.native(), kDeadline,
        [&]() REQUIRES(steps_mu_) {
          return std::find(steps_.begin(), steps_.end(),
                           "default/" + pod + " " + step) != steps_.end();
        }))
        << pod << " " << step;
    l.Unlock();
    fleet_->WaitIdle();
  }

  Mutex steps_mu_;
  std::condition_variable steps_cv_;
  std::vector<std::string> steps_ GUARDED_BY(steps_mu_);
  apiserver::testing::TestServer server_;
  FakeClock clock_;
  metrics::Registry metrics_;
  std::unique_ptr<informer::RestClient> client_;
  std::unique_ptr<Observer> nodes_, leases_, pods_;
  std::unique_ptr<Fleet> fleet_;
};

TEST_F(FleetTest, RegistersNodesAndLeases) {
  FleetOptions o = Options(3);
  o.node.cpu = "4";
  o.node.labels["zone"] = "a";
  o.node.taints.push_back(*ParseTaint("sim=yes:NoSchedule"));
  StartFleet(o);
  for (int i = 0; i < 3; ++i) {
    std::string name = "node-" + std::to_string(i);
    auto n = nodes_->Get<corev1::Node>(name);
    ASSERT_TRUE(n) << name;
    EXPECT_EQ(CondStatus(*n, "Ready"), "True");
    EXPECT_EQ(CondStatus(*n, "MemoryPressure"), "False");
    EXPECT_EQ(CondStatus(*n, "DiskPressure"), "False");
    EXPECT_EQ(CondStatus(*n, "PIDPressure"), "False");
    EXPECT_EQ(n->status().capacity().at("cpu").string(), "4");
    EXPECT_EQ(n->status().allocatable().at("pods").string(), "110");
    EXPECT_EQ(n->status().nodeinfo().kubeletversion(), kKubeletVersion);
    EXPECT_EQ(n->spec().podcidr(), "10.64." + std::to_string(i) + ".0/24");
    EXPECT_EQ(n->metadata().labels().at("kubernetes.io/hostname"), name);
    EXPECT_EQ(n->metadata().labels().at("zone"), "a");
    ASSERT_EQ(n->spec().taints_size(), 1);
    EXPECT_EQ(n->spec().taints(0).key(), "sim");
    auto l = Lease(name);
    ASSERT_TRUE(l);
    EXPECT_EQ(l->spec().holderidentity(), name);
    EXPECT_EQ(l->spec().leasedurationseconds(), 40);
    EXPECT_EQ(objects::ToWallTime(l->spec().renewtime()),
              std::chrono::time_point_cast<microseconds>(clock_.WallNow()));
    ASSERT_EQ(l->metadata().ownerreferences_size(), 1);
    EXPECT_EQ(l->metadata().ownerreferences(0).uid(), n->metadata().uid());
    EXPECT_EQ(Renewals(name), 1);
  }
  EXPECT_EQ(metrics_.NewGauge("kubeletsim_nodes", "", {"state"})
                ->With({"ready"})
                ->Value(),
            3);
}

// Registrations go through a window (here one at a time); every node still
// registers, also when a node is stopped while it waits for its turn (it
// is last of 12 in line, so it almost surely is) and resumed later.
TEST_F(FleetTest, PacedRegistrationRegistersEveryNode) {
  FleetOptions o = Options(12);
  o.max_registering = 1;
  auto f = Fleet::Start(o);
  ASSERT_TRUE(f.ok()) << f.status();
  fleet_ = std::move(*f);
  ASSERT_TRUE(fleet_->StopNode("node-11").ok());
  ASSERT_TRUE(nodes_->Await([&] {
    for (int i = 0; i < 11; ++i) {
      if (!nodes_->Get<corev1::Node>("node-" + std::to_string(i))) return false;
    }
    return true;
  }));
  ASSERT_TRUE(fleet_->ResumeNode("node-11").ok());
  ASSERT_TRUE(nodes_->Await([&] { return nodes_->Size() == 12; }));
  ASSERT_TRUE(leases_->Await([&] { return leases_->Size() == 12; }));
  fleet_->WaitIdle();
  for (int i = 0; i < 12; ++i) {
    EXPECT_GE(Renewals("node-" + std::to_string(i)), 1) << i;
  }
}

TEST_F(FleetTest, RestartedFleetAdoptsExistingNodes) {
  StartFleet(Options(2));
  fleet_->Stop();
  fleet_.reset();
  std::string rv =
      nodes_->Get<corev1::Node>("node-1")->metadata().resourceversion();
  // A second later, so the status it reports differs (its heartbeat time):
  // the API server writes nothing for a status that did not change.
  clock_.Advance(std::chrono::seconds(1));
  auto f = Fleet::Start(Options(2));
  ASSERT_TRUE(f.ok()) << f.status();
  fleet_ = std::move(*f);
  // The second fleet finds the Node registered and reports its status.
  ASSERT_TRUE(nodes_->Await([&] {
    return nodes_->Get<corev1::Node>("node-1")->metadata().resourceversion() !=
           rv;
  }));
  fleet_->WaitIdle();
  EXPECT_EQ(StatusUpdates("node-1"), 1);
  EXPECT_EQ(nodes_->Size(), 2u);
}

TEST_F(FleetTest, LeaseRenewalCadence) {
  StartFleet(Options(2));
  std::string rv0 = Lease("node-0")->metadata().resourceversion();
  WallTime t0 = clock_.WallNow();
  // Renewals come every 10 s plus 0-4 % jitter.
  Advance(milliseconds(9900));
  EXPECT_EQ(Renewals("node-0"), 1);
  Advance(milliseconds(600));  // 10.5 s
  EXPECT_EQ(Renewals("node-0"), 2);
  EXPECT_EQ(Renewals("node-1"), 2);
  ASSERT_TRUE(leases_->Await(
      [&] { return Lease("node-0")->metadata().resourceversion() != rv0; }));
  WallTime renewed = objects::ToWallTime(Lease("node-0")->spec().renewtime());
  EXPECT_GE(renewed, t0 + seconds(10));
  EXPECT_LE(renewed, t0 + milliseconds(10500));
  for (int i = 0; i < 6; ++i) Advance(milliseconds(10500));  // 73.5 s
  // 7 periods of 10.0-10.4 s fit in 73.5 s: 1 + 7 renewals.
  EXPECT_EQ(Renewals("node-0"), 8);
  auto* lag =
      metrics_.NewHistogram("kubeletsim_heartbeat_lag_seconds", "", {}, {})
          ->With({});
  // 8 renewals per node (the first, at registration, has no lag).
  EXPECT_EQ(lag->Count(), 16u);
  // Each renewal fired when the fake clock jumped past its due time, at
  // most one 10.5 s step late... and never early.
  EXPECT_GE(lag->Sum(), 0);
}

TEST_F(FleetTest, LeaseConflictIsResolvedByReReading) {
  StartFleet(Options(1));
  // Another writer changes the lease: our cached resourceVersion is stale.
  auto l = *client_->Get<coordinationv1::Lease>(kNodeLeaseNamespace, "node-0");
  l->mutable_spec()->set_holderidentity("intruder");
  ASSERT_TRUE(client_->Update(*l).ok());
  ASSERT_TRUE(leases_->Await(
      [&] { return Lease("node-0")->spec().holderidentity() == "intruder"; }));
  Advance(milliseconds(10500));
  EXPECT_EQ(Renewals("node-0"), 2);
  ASSERT_TRUE(leases_->Await(
      [&] { return Lease("node-0")->spec().holderidentity() == "node-0"; }));
  EXPECT_EQ(
      metrics_.NewCounter("kubeletsim_api_errors_total", "", {"operation"})
          ->With({"lease"})
          ->Value(),
      0);
  // A deleted lease is re-created.
  ASSERT_TRUE(
      client_->Delete<coordinationv1::Lease>(kNodeLeaseNamespace, "node-0")
          .ok());
  ASSERT_TRUE(leases_->Await([&] { return leases_->Size() == 0; }));
  Advance(milliseconds(10500));
  EXPECT_EQ(Renewals("node-0"), 3);
  ASSERT_TRUE(leases_->Await([&] { return leases_->Size() == 1; }));
}

TEST_F(FleetTest, StatusReportedOnlyOnChangeOrEveryReportFrequency) {
  StartFleet(Options(1));
  EXPECT_EQ(StatusUpdates("node-0"), 0);  // registration carried the status
  // Steps of 10.5 s: every step renews the lease (10.0-10.4 s periods).
  for (int i = 0; i < 28; ++i) Advance(milliseconds(10500));  // 4m54s
  EXPECT_EQ(StatusUpdates("node-0"), 0);
  EXPECT_EQ(Renewals("node-0"), 29);
  Advance(seconds(6));  // 5m00s
  EXPECT_EQ(StatusUpdates("node-0"), 1);
  for (int i = 0; i < 28; ++i) Advance(milliseconds(10500));
  EXPECT_EQ(StatusUpdates("node-0"), 1);
  Advance(seconds(6));
  EXPECT_EQ(StatusUpdates("node-0"), 2);

  // A change (the node lifecycle controller marks it Unknown) is answered
  // at once, without the clock moving.
  auto n = *client_->Get<corev1::Node>("", "node-0");
  for (auto& c : *n->mutable_status()->mutable_conditions()) {
    if (c.type() == "Ready") c.set_status("Unknown");
  }
  auto unknown = client_->UpdateStatus(*n);
  ASSERT_TRUE(unknown.ok());
  int64_t unknown_rv = std::stoll((*unknown)->metadata().resourceversion());
  ASSERT_TRUE(nodes_->Await([&] {
    auto cur = nodes_->Get<corev1::Node>("node-0");
    return std::stoll(cur->metadata().resourceversion()) > unknown_rv &&
           CondStatus(*cur, "Ready") == "True";
  }));
  fleet_->WaitIdle();
  EXPECT_EQ(StatusUpdates("node-0"), 3);
}

// The kubelet heartbeats through a client of its own; the fleet gives
// heartbeats their own workers. With one FIFO pool for both, a burst of
// 30,000 pods on 5,000 nodes queued so much pod work in front of the
// renewals that every node went NotReady (docs/kubeletsim.md).
TEST_F(FleetTest, PodWorkNeverDelaysAHeartbeat) {
  struct Gate {
    Mutex mu;
    std::condition_variable cv;
    bool held GUARDED_BY(mu) = false;
    bool open GUARDED_BY(mu) = false;
  };
  auto gate = std::make_shared<Gate>();
  FleetOptions o = Options(1);
  o.workers = 1;  // the one pod worker is held below
  o.heartbeat_workers = 1;
  o.on_pod_step = [gate](const std::string&, const std::string& step) {
    if (step != "start") return;
    MutexLock l(&gate->mu);
    gate->held = true;
    gate->cv.notify_all();
    gate->cv.wait(l.native(), [&]() REQUIRES(gate->mu) { return gate->open; });
  };
  StartFleet(o);
  auto open_gate = [gate] {
    MutexLock l(&gate->mu);
    gate->open = true;
    gate->cv.notify_all();
  };
  ASSERT_TRUE(client_->Create(MakePod("web", "node-0")).ok());
  {
    MutexLock l(&gate->mu);
    bool held = gate->cv.wait_for(
        l.native(), kDeadline, [&]() REQUIRES(gate->mu) { return gate->held; });
    if (!held) {
      l.Unlock();
      open_gate();
      FAIL() << "the pod's start step never ran";
    }
  }
  // The pod worker is busy; a renewal falls due.
  std::string rv0 = Lease("node-0")->metadata().resourceversion();
  clock_.Advance(milliseconds(10500));
  bool renewed = leases_->Await(
      [&] { return Lease("node-0")->metadata().resourceversion() != rv0; });
  open_gate();
  fleet_->Stop();
  EXPECT_TRUE(renewed) << "the lease renewal waited for pod work";
}

TEST(AutoHeartbeatWorkersTest, EnoughFor250MsPerRenewalWithinBounds) {
  EXPECT_EQ(AutoHeartbeatWorkers(5000, seconds(10)), 125);  // 500/s * 0.25 s
  EXPECT_EQ(AutoHeartbeatWorkers(1000, seconds(1)), 250);
  EXPECT_EQ(AutoHeartbeatWorkers(3, seconds(10)), 2);
  EXPECT_EQ(AutoHeartbeatWorkers(50000, seconds(10)), 256);
}

// Bad sizes are refused at start with the flag's name, before any thread
// or connection is made.
TEST_F(FleetTest, RefusesBadWorkerCounts) {
  FleetOptions o = Options(1);
  o.heartbeat_workers = -1;
  StatusOr<std::unique_ptr<Fleet>> f = Fleet::Start(o);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("--heartbeat-workers"), std::string::npos)
      << f.status();
  o = Options(1);
  o.workers = 0;
  f = Fleet::Start(o);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("--workers"), std::string::npos)
      << f.status();
}

TEST_F(FleetTest, PodLifecycle) {
  StartFleet(Options(2));
  corev1::Pod p = MakePod("web", "node-1");
  (*p.mutable_metadata()->mutable_annotations())[kReadyAfterAnnotation] = "5s";
  ASSERT_TRUE(client_->Create(p).ok());
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return p.status().containerstatuses_size() == 1;
  }));
  auto pod = Pod("web");
  EXPECT_EQ(pod->status().phase(), "Pending");
  EXPECT_EQ(pod->status().containerstatuses(0).state().waiting().reason(),
            "ContainerCreating");
  EXPECT_EQ(pod->status().hostip(), "172.16.0.2");
  EXPECT_FALSE(objects::IsZero(pod->status().starttime()));
  EXPECT_EQ(CondStatus(*pod, "PodScheduled"), "True");
  EXPECT_EQ(CondStatus(*pod, "Initialized"), "True");
  EXPECT_EQ(CondStatus(*pod, "Ready"), "False");

  AwaitStep("web", "start");
  Advance(seconds(1));  // start delay
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return p.status().phase() == "Running";
  }));
  pod = Pod("web");
  EXPECT_EQ(pod->status().podip(), "10.64.1.2");
  const auto& cs = pod->status().containerstatuses(0);
  EXPECT_TRUE(cs.state().has_running());
  EXPECT_TRUE(cs.started());
  EXPECT_FALSE(cs.ready());  // ready-after: 5s
  EXPECT_EQ(cs.restartcount(), 0);
  EXPECT_FALSE(cs.containerid().empty());
  EXPECT_FALSE(cs.imageid().empty());
  EXPECT_EQ(CondStatus(*pod, "Ready"), "False");

  AwaitStep("web", "ready");
  Advance(seconds(4));
  EXPECT_EQ(CondStatus(*Pod("web"), "Ready"), "False");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));
  pod = Pod("web");
  EXPECT_EQ(CondStatus(*pod, "ContainersReady"), "True");
  EXPECT_TRUE(pod->status().containerstatuses(0).ready());

  // A second pod on the node gets the next IP; a pod without the
  // annotation is ready as soon as it runs (--pod-ready-delay 0).
  ASSERT_TRUE(client_->Create(MakePod("db", "node-1")).ok());
  ASSERT_TRUE(AwaitPod("db", [](const corev1::Pod& p) {
    return p.status().phase() == "Pending" && !p.status().hostip().empty();
  }));
  AwaitStep("db", "start");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("db", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));
  EXPECT_EQ(Pod("db")->status().podip(), "10.64.1.3");
  fleet_->WaitIdle();
  auto* pods = metrics_.NewGauge("kubeletsim_pods", "", {"stage"});
  EXPECT_EQ(pods->With({"Ready"})->Value(), 2);
  EXPECT_EQ(pods->With({"ContainerCreating"})->Value(), 0);
  EXPECT_EQ(pods->With({"Started"})->Value(), 0);
}

TEST_F(FleetTest, GracefulDeletion) {
  StartFleet(Options(1));
  ASSERT_TRUE(client_->Create(MakePod("web", "node-0")).ok());
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return !p.status().hostip().empty();
  }));
  AwaitStep("web", "start");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));
  objects::metav1::DeleteOptions del;
  del.set_graceperiodseconds(30);
  ASSERT_TRUE(client_->Delete<corev1::Pod>("default", "web", del).ok());
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return objects::IsBeingDeleted(p.metadata());
  }));
  AwaitStep("web", "terminate");
  EXPECT_TRUE(Pod("web"));  // still there: containers are stopping
  Advance(seconds(1));      // --pod-termination-delay
  ASSERT_TRUE(pods_->Await([&] { return !Pod("web"); }));
  // On its way out the pod reported terminated containers.
  bool saw_terminated = false;
  for (const ObjectPtr& o : pods_->History()) {
    const auto& p = static_cast<const corev1::Pod&>(*o);
    // Killed by the kubelet's SIGTERM: Failed, not Succeeded (a Job must
    // not count a deleted pod as a success).
    EXPECT_NE(p.status().phase(), "Succeeded");
    if (p.status().phase() == "Failed" &&
        p.status().containerstatuses(0).state().terminated().exitcode() ==
            kKilledExitCode &&
        p.status().containerstatuses(0).state().terminated().reason() ==
            "Error") {
      saw_terminated = true;
    }
  }
  EXPECT_TRUE(saw_terminated);
  EXPECT_EQ(
      metrics_.NewCounter("kubeletsim_api_writes_total", "", {"operation"})
          ->With({"pod_delete"})
          ->Value(),
      1);
}

TEST_F(FleetTest, PodWithRestartPolicyNeverCompletesAfterTheRunDuration) {
  StartFleet(Options(1));
  corev1::Pod job = MakePod("pi", "node-0");
  job.mutable_spec()->set_restartpolicy("Never");
  ASSERT_TRUE(client_->Create(job).ok());
  // restartPolicy Always (the default) and no run-for: runs until deleted.
  ASSERT_TRUE(client_->Create(MakePod("web", "node-0")).ok());
  AwaitStep("pi", "start");
  AwaitStep("web", "start");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("pi", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));
  AwaitStep("pi", "exit");
  Advance(seconds(1));
  EXPECT_EQ(Pod("pi")->status().phase(), "Running");
  Advance(seconds(1));  // --pod-run-duration 2s
  ASSERT_TRUE(AwaitPod("pi", [](const corev1::Pod& p) {
    return p.status().phase() == "Succeeded";
  }));
  auto pod = Pod("pi");
  const auto& t = pod->status().containerstatuses(0).state().terminated();
  EXPECT_EQ(t.exitcode(), 0);
  EXPECT_EQ(t.reason(), "Completed");
  EXPECT_EQ(
      objects::ToWallTime(t.finishedat()) - objects::ToWallTime(t.startedat()),
      seconds(2));
  EXPECT_FALSE(pod->status().containerstatuses(0).ready());
  EXPECT_EQ(pod->status().containerstatuses(0).restartcount(), 0);
  EXPECT_EQ(CondStatus(*pod, "Ready"), "False");
  EXPECT_EQ(pod->status().podip(), "10.64.0.2");  // still shown
  Advance(minutes(10));
  EXPECT_EQ(Pod("web")->status().phase(), "Running");
  EXPECT_EQ(Pod("pi")->status().phase(), "Succeeded");
  auto* pods = metrics_.NewGauge("kubeletsim_pods", "", {"stage"});
  EXPECT_EQ(pods->With({"Completed"})->Value(), 1);
  EXPECT_EQ(pods->With({"Ready"})->Value(), 1);
}

TEST_F(FleetTest, AnnotatedExitCodeFailsThePodAndDeletionKeepsFailed) {
  StartFleet(Options(1));
  corev1::Pod job = MakePod("bad", "node-0");
  job.mutable_spec()->set_restartpolicy("Never");
  auto* a = job.mutable_metadata()->mutable_annotations();
  (*a)[kRunForAnnotation] = "5s";
  (*a)[kExitCodeAnnotation] = "3";
  ASSERT_TRUE(client_->Create(job).ok());
  AwaitStep("bad", "start");
  Advance(seconds(1));
  AwaitStep("bad", "exit");
  Advance(seconds(4));
  EXPECT_EQ(Pod("bad")->status().phase(), "Running");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("bad", [](const corev1::Pod& p) {
    return p.status().phase() == "Failed";
  }));
  auto pod = Pod("bad");
  EXPECT_EQ(pod->status().containerstatuses(0).state().terminated().exitcode(),
            3);
  EXPECT_EQ(pod->status().containerstatuses(0).state().terminated().reason(),
            "Error");
  for (const auto& c : pod->status().conditions()) {
    if (c.type() == "Ready") {
      EXPECT_EQ(c.reason(), "ContainersNotReady");
    }
  }

  // It stays Failed, and goes (a terminal pod is deleted at once) without
  // ever having reported Succeeded.
  Advance(minutes(10));
  EXPECT_EQ(Pod("bad")->status().phase(), "Failed");
  ASSERT_TRUE(client_->Delete<corev1::Pod>("default", "bad").ok());
  ASSERT_TRUE(pods_->Await([&] { return !Pod("bad"); }));
  for (const ObjectPtr& o : pods_->History()) {
    EXPECT_NE(static_cast<const corev1::Pod&>(*o).status().phase(),
              "Succeeded");
  }
}

// A container that keeps failing is restarted as the kubelet does: at once
// the first time, then after a CrashLoopBackOff wait of 10 s, 20 s, ...
// (a container that exits at once must not restart as fast as status writes
// go).
TEST_F(FleetTest, OnFailureRestartsTheContainersWithCrashLoopBackOff) {
  StartFleet(Options(1));
  corev1::Pod job = MakePod("flaky", "node-0");
  job.mutable_spec()->set_restartpolicy("OnFailure");
  auto* a = job.mutable_metadata()->mutable_annotations();
  (*a)[kRunForAnnotation] = "3s";
  (*a)[kExitCodeAnnotation] = "1";
  ASSERT_TRUE(client_->Create(job).ok());
  AwaitStep("flaky", "start");
  Advance(seconds(1));
  auto restarted = [&](int restarts) {
    return AwaitPod("flaky", [&](const corev1::Pod& p) {
      const auto& cs = p.status().containerstatuses(0);
      return cs.restartcount() == restarts && cs.state().has_running();
    });
  };
  auto backing_off = [&](const std::string& wait, int restarts) {
    return AwaitPod("flaky", [&](const corev1::Pod& p) {
      const auto& cs = p.status().containerstatuses(0);
      return cs.restartcount() == restarts &&
             cs.state().waiting().reason() == "CrashLoopBackOff" &&
             cs.state().waiting().message().rfind("back-off " + wait, 0) == 0;
    });
  };
  AwaitStep("flaky", "exit");
  Advance(seconds(3));  // the first exit: restarted at once
  ASSERT_TRUE(restarted(1));
  auto pod = Pod("flaky");
  EXPECT_EQ(pod->status().phase(), "Running");
  EXPECT_EQ(
      pod->status().containerstatuses(0).laststate().terminated().reason(),
      "Error");
  Advance(seconds(3));  // the second: 10 s in CrashLoopBackOff
  ASSERT_TRUE(backing_off("10s", 1));
  pod = Pod("flaky");
  EXPECT_EQ(pod->status().phase(), "Running");
  EXPECT_FALSE(pod->status().containerstatuses(0).ready());
  EXPECT_EQ(CondStatus(*pod, "Ready"), "False");
  EXPECT_EQ(
      pod->status().containerstatuses(0).laststate().terminated().exitcode(),
      1);
  AwaitStep("flaky", "restart");
  Advance(seconds(10));
  ASSERT_TRUE(restarted(2));
  Advance(seconds(3));  // the third: 20 s
  ASSERT_TRUE(backing_off("20s", 2));
  Advance(seconds(19));
  EXPECT_EQ(Pod("flaky")->status().containerstatuses(0).restartcount(), 2);
  Advance(seconds(1));
  ASSERT_TRUE(restarted(3));
}

TEST(CrashLoopBackOff, DoublesToFiveMinutesAndForgetsAfterTenQuietOnes) {
  int level = 0;
  std::vector<int64_t> waits;
  for (int i = 0; i < 9; ++i) {
    waits.push_back(std::chrono::duration_cast<seconds>(
                        NextCrashLoopBackOff(&level, seconds(1)))
                        .count());
  }
  EXPECT_EQ(waits,
            (std::vector<int64_t>{0, 10, 20, 40, 80, 160, 300, 300, 300}));
  EXPECT_EQ(NextCrashLoopBackOff(&level, minutes(9)), minutes(5));
  EXPECT_EQ(NextCrashLoopBackOff(&level, minutes(10)), Duration(0));
  EXPECT_EQ(NextCrashLoopBackOff(&level, seconds(0)), seconds(10));
  level = 1 << 30;  // never shifts past the maximum
  EXPECT_EQ(NextCrashLoopBackOff(&level, seconds(0)), minutes(5));
}

// Sets `type` to `status` in the pod's status as another writer would
// (a controller, the node lifecycle controller), re-reading on conflict.
void SetPodCondition(informer::RestClient* client, const std::string& name,
                     const std::string& type, const std::string& status,
                     const std::string& reason = "") {
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto got = client->Get<corev1::Pod>("default", name);
    ASSERT_TRUE(got.ok()) << got.status();
    corev1::Pod p = **got;
    corev1::PodCondition* c = nullptr;
    for (auto& k : *p.mutable_status()->mutable_conditions()) {
      if (k.type() == type) c = &k;
    }
    if (c == nullptr) c = p.mutable_status()->add_conditions();
    c->set_type(type);
    c->set_status(status);
    c->set_reason(reason);
    auto r = client->UpdateStatus(p);
    if (r.ok()) return;
    ASSERT_TRUE(informer::IsConflict(r.status())) << r.status();
  }
  FAIL() << "conflicts on every attempt";
}

// The kubelet rewrites only its own conditions: a custom one and an
// eviction's DisruptionTarget survive its later writes, to the end.
TEST_F(FleetTest, ConditionsOfOthersSurviveTheKubeletsWrites) {
  StartFleet(Options(1));
  corev1::Pod p = MakePod("web", "node-0");
  (*p.mutable_metadata()->mutable_annotations())[kReadyAfterAnnotation] = "5s";
  ASSERT_TRUE(client_->Create(p).ok());
  AwaitStep("web", "start");
  SetPodCondition(client_.get(), "web", "example.com/custom", "True");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return p.status().phase() == "Running";
  }));
  EXPECT_EQ(CondStatus(*Pod("web"), "example.com/custom"), "True");
  AwaitStep("web", "ready");
  Advance(seconds(5));
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));
  EXPECT_EQ(CondStatus(*Pod("web"), "example.com/custom"), "True");

  SetPodCondition(client_.get(), "web", "DisruptionTarget", "True",
                  "EvictionByEvictionAPI");
  objects::metav1::DeleteOptions del;
  del.set_graceperiodseconds(30);
  ASSERT_TRUE(client_->Delete<corev1::Pod>("default", "web", del).ok());
  AwaitStep("web", "terminate");
  Advance(seconds(1));
  ASSERT_TRUE(pods_->Await([&] { return !Pod("web"); }));
  bool saw_final = false;
  for (const ObjectPtr& o : pods_->History()) {
    const auto& q = static_cast<const corev1::Pod&>(*o);
    if (q.status().phase() != "Failed") continue;
    saw_final = true;
    EXPECT_EQ(CondStatus(q, "DisruptionTarget"), "True");
    EXPECT_EQ(CondStatus(q, "example.com/custom"), "True");
  }
  EXPECT_TRUE(saw_final);
}

// Ready waits for the readiness gates' conditions, and follows them when
// their owner sets them later.
TEST_F(FleetTest, ReadinessGatesHoldReadyUntilTheirConditionsAreTrue) {
  StartFleet(Options(1));
  corev1::Pod p = MakePod("gated", "node-0");
  p.mutable_spec()->add_readinessgates()->set_conditiontype("example.com/lb");
  ASSERT_TRUE(client_->Create(p).ok());
  AwaitStep("gated", "start");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("gated", [](const corev1::Pod& p) {
    return CondStatus(p, "ContainersReady") == "True";
  }));
  fleet_->WaitIdle();
  auto pod = Pod("gated");
  EXPECT_EQ(CondStatus(*pod, "Ready"), "False");
  for (const auto& c : pod->status().conditions()) {
    if (c.type() == "Ready") {
      EXPECT_EQ(c.reason(), "ReadinessGatesNotReady");
    }
  }
  SetPodCondition(client_.get(), "gated", "example.com/lb", "True");
  ASSERT_TRUE(AwaitPod("gated", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));
  SetPodCondition(client_.get(), "gated", "example.com/lb", "False");
  ASSERT_TRUE(AwaitPod("gated", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "False";
  }));
}

// The status manager's reconcile: a status someone else changed (the node
// lifecycle controller marks the pods of an unreachable node not Ready) is
// re-posted once the node is back, and at once while it runs.
TEST_F(FleetTest, StatusChangedByOthersIsRepaired) {
  StartFleet(Options(1));
  ASSERT_TRUE(client_->Create(MakePod("web", "node-0")).ok());
  AwaitStep("web", "start");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));

  ASSERT_TRUE(fleet_->StopNode("node-0").ok());
  SetPodCondition(client_.get(), "web", "Ready", "False", "NodeNotReady");
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "False";
  }));
  Advance(seconds(15));
  EXPECT_EQ(CondStatus(*Pod("web"), "Ready"), "False");  // silent
  ASSERT_TRUE(fleet_->ResumeNode("node-0").ok());
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));

  // While it runs: repaired as soon as the fleet's watch shows the change.
  // A change to others' conditions alone is not answered (what the API
  // holds of our own write compares equal): one write, the repair.
  fleet_->WaitIdle();
  auto* pod_writes =
      metrics_.NewCounter("kubeletsim_api_writes_total", "", {"operation"})
          ->With({"pod_status"});
  const double writes = pod_writes->Value();
  const size_t seen = pods_->History().size();
  SetPodCondition(client_.get(), "web", "example.com/custom", "True");
  SetPodCondition(client_.get(), "web", "Ready", "False", "NodeNotReady");
  ASSERT_TRUE(pods_->Await([&] {
    auto h = pods_->History();
    bool unready = false;
    for (size_t i = seen; i < h.size(); ++i) {
      unready |= CondStatus(static_cast<const corev1::Pod&>(*h[i]), "Ready") ==
                 "False";
    }
    return unready && CondStatus(*Pod("web"), "Ready") == "True";
  }));
  fleet_->WaitIdle();
  EXPECT_EQ(pod_writes->Value(), writes + 1);
}

// A failed status write is not the end of it: the status manager writes
// it again after a back-off. Against the informer's FakeApiServer, which
// can fail a request; on a fake clock nothing else calls the server
// while the pod's write fails.
TEST(FleetStatusRetryTest, AFailedPodStatusWriteIsRetriedWithBackOff) {
  informer::FakeApiServer server;
  ASSERT_TRUE(server.Start().ok());
  informer::FakeListerWatcher* pods = server.Resource(*R<corev1::Pod>());
  informer::FakeListerWatcher* nodes = server.Resource(*R<corev1::Node>());
  server.Resource(*R<coordinationv1::Lease>());
  FakeClock clock;
  metrics::Registry metrics;
  Mutex mu;
  std::condition_variable cv;
  std::vector<std::string> steps;
  FleetOptions o;
  o.server = server.Url();
  o.nodes = 1;
  o.port = 0;
  o.clock = &clock;
  o.metrics = &metrics;
  o.seed = 7;
  o.workers = 2;
  o.protobuf = false;
  o.record_events = false;
  o.register_pod_cidr = true;
  o.on_pod_step = [&](const std::string& pod, const std::string& step) {
    MutexLock l(&mu);
    steps.push_back(pod + " " + step);
    cv.notify_all();
  };
  auto f = Fleet::Start(o);
  ASSERT_TRUE(f.ok()) << f.status();
  std::unique_ptr<Fleet> fleet = std::move(*f);
  auto phase = [&] {
    auto got = pods->Get("default", "web");
    return got.ok() ? static_cast<const corev1::Pod&>(**got).status().phase()
                    : std::string("?");
  };
  auto await = [&](const std::function<bool()>& pred) {
    MutexLock l(&mu);
    return cv.wait_for(l.native(), kDeadline, [&] { return pred(); });
  };
  auto has_step = [&](const std::string& s) NO_THREAD_SAFETY_ANALYSIS {
    return std::find(steps.begin(), steps.end(), "default/web " + s) !=
           steps.end();
  };
  fleet->WaitIdle();
  ASSERT_TRUE(nodes->Get("", "node-0").ok());

  corev1::Pod p;
  p.mutable_metadata()->set_name("web");
  p.mutable_metadata()->set_namespace_("default");
  p.mutable_metadata()->set_uid("u1");
  (*p.mutable_metadata()->mutable_annotations())[kReadyAfterAnnotation] = "1h";
  p.mutable_spec()->set_nodename("node-0");
  p.mutable_spec()->add_containers()->set_name("app");
  ASSERT_TRUE(pods->Create(p).ok());
  ASSERT_TRUE(await([&] { return has_step("start"); }));
  fleet->WaitIdle();
  ASSERT_EQ(phase(), "Pending");

  // The write of Running fails; nothing else is due until the retry.
  server.FailNext(1, 500);
  clock.Advance(seconds(1));
  fleet->WaitIdle();
  EXPECT_EQ(phase(), "Pending");
  auto* errors =
      metrics.NewCounter("kubeletsim_api_errors_total", "", {"operation"});
  EXPECT_EQ(errors->With({"pod_status"})->Value(), 1);
  // Fails again: the next try waits twice as long.
  server.FailNext(1, 500);
  clock.Advance(seconds(1));
  fleet->WaitIdle();
  EXPECT_EQ(phase(), "Pending");
  EXPECT_EQ(errors->With({"pod_status"})->Value(), 2);
  clock.Advance(seconds(1));
  fleet->WaitIdle();
  EXPECT_EQ(phase(), "Pending");  // 1 s of the 2 s back-off
  clock.Advance(seconds(1));
  fleet->WaitIdle();
  EXPECT_EQ(phase(), "Running");
  EXPECT_EQ(errors->With({"pod_status"})->Value(), 2);
  fleet->Stop();
}

TEST_F(FleetTest, StoppedNodeGoesSilentAndResumes) {
  StartFleet(Options(3));
  ASSERT_TRUE(client_->Create(MakePod("old", "node-2")).ok());
  ASSERT_TRUE(AwaitPod("old", [](const corev1::Pod& p) {
    return !p.status().hostip().empty();
  }));
  AwaitStep("old", "start");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("old", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));

  EXPECT_TRUE(informer::IsNotFound(fleet_->StopNode("node-9")));
  ASSERT_TRUE(fleet_->StopNode("node-2").ok());
  auto before = Lease("node-2");
  // A pod bound to the stopped node is not started; one on a live node is.
  ASSERT_TRUE(client_->Create(MakePod("new", "node-2")).ok());
  ASSERT_TRUE(client_->Create(MakePod("probe", "node-1")).ok());
  ASSERT_TRUE(AwaitPod("probe", [](const corev1::Pod& p) {
    return !p.status().hostip().empty();
  }));
  for (int i = 0; i < 6; ++i) Advance(milliseconds(10500));
  EXPECT_EQ(Renewals("node-2"), 1);
  EXPECT_EQ(Renewals("node-1"), 7);
  EXPECT_EQ(Lease("node-2")->metadata().resourceversion(),
            before->metadata().resourceversion());
  EXPECT_TRUE(Pod("new")->status().hostip().empty());
  EXPECT_EQ(CondStatus(*Pod("old"), "Ready"), "True");  // last status kept
  bool stopped_listed = false;
  for (const NodeInfo& i : fleet_->List()) {
    if (i.name == "node-2") stopped_listed = i.stopped;
  }
  EXPECT_TRUE(stopped_listed);

  // Resume: the lease is renewed at once and the pending pod starts.
  ASSERT_TRUE(fleet_->ResumeNode("node-2").ok());
  ASSERT_TRUE(leases_->Await([&] {
    return Lease("node-2")->metadata().resourceversion() !=
           before->metadata().resourceversion();
  }));
  ASSERT_TRUE(AwaitPod("new", [](const corev1::Pod& p) {
    return !p.status().hostip().empty();
  }));
  AwaitStep("new", "start");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("new", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));
  EXPECT_EQ(Pod("new")->status().podip(), "10.64.2.3");

  // The whole fleet.
  fleet_->StopAll();
  int64_t r0 = Renewals("node-0");
  for (int i = 0; i < 3; ++i) Advance(milliseconds(10500));
  EXPECT_EQ(Renewals("node-0"), r0);
  fleet_->ResumeAll();
  fleet_->WaitIdle();
  EXPECT_EQ(Renewals("node-0"), r0 + 1);
}

TEST_F(FleetTest, ControlEndpoint) {
  FleetOptions o = Options(2);
  o.port = -1;  // any free port
  StartFleet(o);
  ASSERT_NE(fleet_->port(), 0);
  std::string url = "http://127.0.0.1:" + std::to_string(fleet_->port());
  auto cc = ControlClient::New(url);
  ASSERT_TRUE(cc.ok());
  auto list = cc->List();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "node-0");
  EXPECT_FALSE((*list)[0].stopped);
  EXPECT_EQ((*list)[0].lease_renewals, 1);

  ASSERT_TRUE(cc->StopNode("node-1").ok());
  EXPECT_TRUE(informer::IsNotFound(cc->StopNode("nope")));
  list = cc->List();
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE((*list)[1].stopped);
  ASSERT_TRUE(cc->ResumeNode("node-1").ok());
  ASSERT_TRUE(cc->StopAll().ok());
  list = cc->List();
  EXPECT_TRUE((*list)[0].stopped && (*list)[1].stopped);
  ASSERT_TRUE(cc->ResumeAll().ok());

  net::HttpClient http("127.0.0.1", fleet_->port());
  auto health = http.Request("GET", "/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok");
  auto m = http.Request("GET", "/metrics");
  ASSERT_TRUE(m.ok());
  EXPECT_NE(m->body.find("kubeletsim_heartbeat_lag_seconds_bucket"),
            std::string::npos);
  EXPECT_NE(m->body.find("kubeletsim_nodes{state=\"ready\"} 2"),
            std::string::npos);
}

// pods/log through the real apiserver, which proxies to the fleet's
// /containerLogs (plain HTTP here); the lines follow the fleet's FakeClock,
// and a follower gets each line when the clock reaches it.
TEST_F(FleetTest, ContainerLogsThroughTheApiserver) {
  FleetOptions o = Options(2);
  o.port = -1;
  StartFleet(o);
  auto node = nodes_->Get<corev1::Node>("node-1");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->status().daemonendpoints().kubeletendpoint().port(),
            fleet_->port());
  EXPECT_EQ(node->status().addresses(2).type(), "ExternalIP");
  EXPECT_EQ(node->status().addresses(2).address(), "127.0.0.1");

  corev1::Pod p = MakePod("web", "node-1");
  (*p.mutable_metadata()->mutable_annotations())[kLogIntervalAnnotation] =
      "10s";
  ASSERT_TRUE(client_->Create(p).ok());
  AwaitStep("web", "start");
  net::HttpClient api("127.0.0.1", server_.port());
  const std::string path = "/api/v1/namespaces/default/pods/web/log";
  auto r = api.Request("GET", path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find(R"(container \"app\" in pod \"web\" is waiting )"
                         "to start: ContainerCreating"),
            std::string::npos)
      << r->body;

  Advance(seconds(1));  // start delay
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return p.status().phase() == "Running";
  }));
  r = api.Request("GET", path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "kubeletsim: container app of pod default/web started\n");
  Advance(seconds(25));
  r = api.Request("GET", path + "?tailLines=2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body,
            "app: log line 1 of pod default/web\n"
            "app: log line 2 of pod default/web\n");
  r = api.Request("GET", path + "?previous=true");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("previous terminated container"), std::string::npos);

  auto follow = api.OpenStream("GET", path + "?follow=true&tailLines=1");
  ASSERT_TRUE(follow.ok()) << follow.status();
  ASSERT_TRUE((*follow)->CloseSend().ok());
  auto head = (*follow)->ReadHead(kDeadline);
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->status, 200);
  std::string got;
  auto read_until = [&](const std::string& want) {
    while (got.find(want) == std::string::npos) {
      auto more = (*follow)->Read(&got, kDeadline);
      if (!more.ok() || !*more) return false;
    }
    return true;
  };
  ASSERT_TRUE(read_until("log line 2 of"));
  Advance(seconds(10));
  ASSERT_TRUE(read_until("log line 3 of"));
  Advance(seconds(20));
  ASSERT_TRUE(read_until("log line 5 of"));
  EXPECT_EQ(got,
            "app: log line 2 of pod default/web\n"
            "app: log line 3 of pod default/web\n"
            "app: log line 4 of pod default/web\n"
            "app: log line 5 of pod default/web\n");
  (*follow)->Cancel();
}

// The same paths on the real clock with short intervals: the timer thread
// really sleeps and wakes.
TEST_F(FleetTest, RealClock) {
  FleetOptions o = Options(2);
  o.clock = nullptr;
  o.lease_renew_interval = milliseconds(100);
  o.pod_start_delay = milliseconds(20);
  o.pod_termination_delay = milliseconds(20);
  auto f = Fleet::Start(o);
  ASSERT_TRUE(f.ok()) << f.status();
  fleet_ = std::move(*f);
  auto renewals_seen = [&] {
    int n = 0;
    for (const ObjectPtr& obj : leases_->History()) {
      if (objects::Name(*obj) == "node-1") ++n;
    }
    return n;
  };
  ASSERT_TRUE(leases_->Await([&] { return renewals_seen() >= 5; }));
  ASSERT_TRUE(client_->Create(MakePod("web", "node-0")).ok());
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return CondStatus(p, "Ready") == "True";
  }));
  objects::metav1::DeleteOptions del;
  del.set_graceperiodseconds(30);
  ASSERT_TRUE(client_->Delete<corev1::Pod>("default", "web", del).ok());
  ASSERT_TRUE(pods_->Await([&] { return !Pod("web"); }));
}

TEST_F(FleetTest, UnreachableServerFailsStart) {
  FleetOptions o = Options(1);
  o.server = "http://127.0.0.1:1";
  auto f = Fleet::Start(o);
  EXPECT_FALSE(f.ok());
  o = Options(1);
  o.first_index = 16384;  // past 10.64.0.0/10's /24s
  EXPECT_FALSE(Fleet::Start(o).ok());
  o.register_pod_cidr = false;
  o.first_index = (1 << 20) - 2;  // past 172.16.0.0/12's InternalIPs
  EXPECT_FALSE(Fleet::Start(o).ok());
}

// Without register_pod_cidr the nodes register with no podCIDR, as real
// kubelets do; the controller manager's node IPAM assigns it (the test
// plays that part) and only then do bound pods get an IP from it.
TEST_F(FleetTest, PodsWaitForTheNodeIpamsCidr) {
  FleetOptions o = Options(2);
  o.register_pod_cidr = false;
  o.first_index = 20000;  // beyond what register_pod_cidr allows
  StartFleet(o);
  auto node = nodes_->Get<corev1::Node>("node-20001");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->spec().podcidr(), "");
  EXPECT_EQ(node->spec().podcidrs_size(), 0);
  EXPECT_EQ(node->status().addresses(0).address(), "172.16.78.34");

  ASSERT_TRUE(client_->Create(MakePod("web", "node-20001")).ok());
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return p.status().containerstatuses_size() == 1;
  }));
  Advance(seconds(5));  // well past the start delay: no CIDR, no start
  auto pod = Pod("web");
  EXPECT_EQ(pod->status().phase(), "Pending");
  EXPECT_EQ(pod->status().containerstatuses(0).state().waiting().reason(),
            "ContainerCreating");
  EXPECT_EQ(pod->status().podip(), "");
  EXPECT_EQ(CidrOf("node-20001"), "");

  corev1::Node assigned = *node;
  assigned.mutable_spec()->set_podcidr("10.200.7.64/26");
  assigned.mutable_spec()->add_podcidrs("10.200.7.64/26");
  ASSERT_TRUE(client_->Update(assigned).ok());
  // The fleet's node watch delivers it and resyncs the node's pods.
  AwaitStep("web", "start");
  EXPECT_EQ(CidrOf("node-20001"), "10.200.7.64/26");
  Advance(seconds(1));
  ASSERT_TRUE(AwaitPod("web", [](const corev1::Pod& p) {
    return p.status().phase() == "Running";
  }));
  EXPECT_EQ(Pod("web")->status().podip(), "10.200.7.66");
}

TEST_F(FleetTest, RecordsKubeletEventsOnPodsAndNodes) {
  Observer events(client_.get(), R<corev1::Event>());
  StartFleet(Options(1));
  // "<kind> <name> <reason> <message> <source.host>" of every event seen.
  auto seen = [&] {
    std::set<std::string> out;
    for (const ObjectPtr& o : events.History()) {
      const auto& e = static_cast<const corev1::Event&>(*o);
      out.insert(e.involvedobject().kind() + " " + e.involvedobject().name() +
                 " " + e.reason() + " " + e.message() + " " +
                 e.source().host());
    }
    return out;
  };
  auto has = [&](const std::string& e) {
    return events.Await([&] { return seen().count(e) > 0; });
  };
  EXPECT_TRUE(has("Node node-0 Starting Starting kubelet. node-0"));
  EXPECT_TRUE(
      has("Node node-0 NodeReady Node node-0 status is now: NodeReady node-0"));
  for (const ObjectPtr& o : events.History()) {
    const auto& e = static_cast<const corev1::Event&>(*o);
    EXPECT_EQ(e.metadata().namespace_(), "default");
    EXPECT_EQ(e.involvedobject().uid(), "node-0");  // kubelet's node ref
    EXPECT_EQ(e.source().component(), "kubelet");
  }

  ASSERT_TRUE(client_->Create(MakePod("web", "node-0")).ok());
  AwaitStep("web", "start");
  Advance(seconds(1));
  EXPECT_TRUE(has(
      "Pod web Pulled Container image \"nginx:1.27\" already present on "
      "machine node-0"));
  EXPECT_TRUE(has("Pod web Created Created container app node-0"));
  EXPECT_TRUE(has("Pod web Started Started container app node-0"));
  objects::metav1::DeleteOptions del;
  del.set_graceperiodseconds(30);
  ASSERT_TRUE(client_->Delete<corev1::Pod>("default", "web", del).ok());
  EXPECT_TRUE(has("Pod web Killing Stopping container app node-0"));
  // Heartbeats record nothing: only transitions do.
  const size_t before = seen().size();
  Advance(seconds(30));
  Advance(seconds(30));
  EXPECT_EQ(seen().size(), before);
}

}  // namespace
}  // namespace kplane::kubeletsim
