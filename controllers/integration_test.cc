// The controller manager against the real API server (in process, over an
// embedded store): nodes and their Leases are written by the test, and a
// tiny stand-in kubelet (a Controller over the test's own pod informer)
// marks bound pods Running and Ready and finishes graceful deletions on
// live nodes. Every pod event is replayed into a model from which the
// rollout invariants are checked at every observed step.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "base/mutex.h"
#include "objects/meta.h"
#include "objects/time.h"
#include "apiserver/test_server.h"
#include "controllers/controller.h"
#include "controllers/controller_manager.h"
#include "controllers/deployment_controller.h"
#include "controllers/node_lifecycle_controller.h"
#include "controllers/util.h"
#include "informer/api_errors.h"
#include "informer/informer_factory.h"
#include "informer/rest_client.h"
#include "tests/e2e/kubectl/process.h"

namespace kplane::controllers {
namespace {

constexpr Duration kWait = seconds(60);
constexpr Duration kGrace = seconds(2);
constexpr Duration kPeriod = milliseconds(500);

using PodPtr = std::shared_ptr<const corev1::Pod>;

class Cluster {
 public:
  Cluster() {
    auto c = informer::RestClient::New({.server = Url()});
    CHECK(c.ok());
    client_ = std::move(*c);
    factory_ = std::make_unique<informer::SharedInformerFactory>(client_.get());
    pods_ = factory_->InformerFor<corev1::Pod>();
    nodes_ = factory_->InformerFor<corev1::Node>();
    deployments_ = factory_->InformerFor<appsv1::Deployment>();
    rss_ = factory_->InformerFor<appsv1::ReplicaSet>();
    events_informer_ = factory_->InformerFor<corev1::Event>();
    kubelet_ = std::make_unique<Kubelet>(this);
    auto notify = [this] {
      MutexLock l(&mu_);
      ++events_;
      cv_.notify_all();
    };
    for (auto* inf : {nodes_, deployments_, rss_, events_informer_}) {
      inf->AddEventHandler(informer::EventHandlerFuncs{
          .on_add = [notify](const ObjectPtr&, bool) { notify(); },
          .on_update = [notify](const ObjectPtr&,
                                const ObjectPtr&) { notify(); },
          .on_delete = [notify](const informer::DeletedObject&) { notify(); }});
    }
    pods_->AddEventHandler(informer::EventHandlerFuncs{
        .on_add = [this](const ObjectPtr& o, bool) { OnPod(o, false); },
        .on_update = [this](const ObjectPtr&,
                            const ObjectPtr& o) { OnPod(o, false); },
        .on_delete =
            [this](const informer::DeletedObject& d) {
              OnPod(d.object, true);
            }});
    factory_->Start();
    CHECK(factory_->WaitForCacheSync(kWait));
    kubelet_->Run(2);
    renewer_ = std::thread([this] { RenewLoop(); });
  }
  ~Cluster() {
    {
      MutexLock l(&mu_);
      stop_ = true;
      cv_.notify_all();
    }
    renewer_.join();
    factory_->Shutdown();
    kubelet_->Stop();
  }

  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(server_.port());
  }
  informer::RestClient* client() { return client_.get(); }

  void AddNode(const std::string& name) {
    corev1::Node n;
    n.mutable_metadata()->set_name(name);
    (*n.mutable_metadata()->mutable_labels())["kubernetes.io/hostname"] = name;
    auto created = client_->Create(n);
    ASSERT_TRUE(created.ok()) << created.status();
    corev1::Node& s = **created;
    corev1::NodeCondition* c = s.mutable_status()->add_conditions();
    c->set_type("Ready");
    c->set_status("True");
    c->set_reason("KubeletReady");
    c->set_message("kubelet is posting ready status");
    *c->mutable_lastheartbeattime() = objects::TimeNow(*Clock::Real());
    *c->mutable_lasttransitiontime() = objects::TimeNow(*Clock::Real());
    auto* a = s.mutable_status()->mutable_allocatable();
    (*a)["cpu"].set_string("4");
    (*a)["memory"].set_string("8Gi");
    (*a)["pods"].set_string("110");
    *s.mutable_status()->mutable_capacity() = *a;
    auto updated = client_->UpdateStatus(s);
    ASSERT_TRUE(updated.ok()) << updated.status();
    coordinationv1::Lease lease;
    lease.mutable_metadata()->set_name(name);
    lease.mutable_metadata()->set_namespace_("kube-node-lease");
    lease.mutable_spec()->set_holderidentity(name);
    lease.mutable_spec()->set_leasedurationseconds(40);
    objects::SetMicroTime(lease.mutable_spec()->mutable_renewtime(),
                      Clock::Real()->WallNow());
    auto l = client_->Create(lease);
    ASSERT_TRUE(l.ok()) << l.status();
    MutexLock g(&mu_);
    alive_.insert(name);
  }
  void SetAlive(const std::string& node, bool alive) {
    MutexLock l(&mu_);
    if (alive) {
      alive_.insert(node);
    } else {
      alive_.erase(node);
    }
    cv_.notify_all();
  }
  bool Alive(const std::string& node) {
    MutexLock l(&mu_);
    return alive_.count(node) > 0;
  }

  // Waits until `pred` (called under no lock, after any informer event)
  // holds; false at the deadline.
  bool WaitFor(const std::function<bool()>& pred, Duration timeout = kWait) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock l(&mu_);
    for (;;) {
      uint64_t seen = events_;
      l.Unlock();
      if (pred()) return true;
      l.Lock();
      if (!cv_.wait_until(l.native(), deadline,
                          [&]() REQUIRES(mu_) { return events_ != seen; })) {
        l.Unlock();
        return pred();
      }
    }
  }

  // The model of app=web pods, replayed from the pod watch in order.
  struct Model {
    std::map<std::string, PodPtr> pods;
    bool tracking = false;
    int max_pods = 0;             // non-terminating pods
    int min_available = 1 << 30;  // non-terminating and Ready
    int steps = 0;
  };
  Model model() {
    MutexLock l(&mu_);
    return model_;
  }
  void Track(bool on) {
    MutexLock l(&mu_);
    model_.tracking = on;
    model_.max_pods = 0;
    model_.min_available = 1 << 30;
    model_.steps = 0;
  }
  // "<reason> <message>" of the recorded events about `kind` `name`.
  std::vector<std::string> EventsAbout(const std::string& kind,
                                       const std::string& name) {
    std::vector<std::string> out;
    for (const ObjectPtr& o : events_informer_->GetIndexer().List()) {
      const auto& e = static_cast<const corev1::Event&>(*o);
      if (e.involvedobject().kind() == kind &&
          e.involvedobject().name() == name) {
        out.push_back(e.reason() + " " + e.message());
      }
    }
    return out;
  }
  bool HasEvent(const std::string& kind, const std::string& name,
                const std::string& prefix) {
    for (const std::string& e : EventsAbout(kind, name)) {
      if (e.starts_with(prefix)) return true;
    }
    return false;
  }

  std::vector<PodPtr> WebPods(bool include_terminating = false) {
    std::vector<PodPtr> out;
    for (const ObjectPtr& o : pods_->GetIndexer().List()) {
      auto p = std::static_pointer_cast<const corev1::Pod>(o);
      if (objects::Label(p->metadata(), "app") != "web") continue;
      if (!include_terminating && IsPodTerminating(*p)) continue;
      out.push_back(p);
    }
    return out;
  }
  std::shared_ptr<const appsv1::Deployment> Deployment(
      const std::string& name) {
    return std::static_pointer_cast<const appsv1::Deployment>(
        deployments_->GetIndexer().Get("default/" + name));
  }
  std::shared_ptr<const corev1::Node> Node(const std::string& name) {
    return std::static_pointer_cast<const corev1::Node>(
        nodes_->GetIndexer().Get(name));
  }
  size_t ReplicaSetCount() { return rss_->GetIndexer().Size(); }

 private:
  // Marks bound pods on live nodes Running/Ready; deletes terminating pods
  // on live nodes (a kubelet's part of graceful deletion).
  class Kubelet : public Controller {
   public:
    explicit Kubelet(Cluster* c)
        : Controller("test-kubelet", nullptr, &c->metrics_), c_(c) {}
    Status Sync(const std::string& key) override {
      auto obj = c_->pods_->GetIndexer().Get(key);
      if (obj == nullptr) return Status::Ok();
      const auto& pod = static_cast<const corev1::Pod&>(*obj);
      const std::string& node = pod.spec().nodename();
      if (node.empty() || !c_->Alive(node)) return Status::Ok();
      if (IsPodTerminating(pod)) {
        metav1::DeleteOptions opts;
        opts.set_graceperiodseconds(0);
        Status s = c_->client_->Delete<corev1::Pod>(
            pod.metadata().namespace_(), pod.metadata().name(), opts);
        return informer::IsNotFound(s) ? Status::Ok() : s;
      }
      if (pod.status().phase() == "Running") return Status::Ok();
      corev1::Pod p = pod;
      p.mutable_status()->set_phase("Running");
      p.mutable_status()->set_podip("10.0.0.1");
      metav1::Time now = objects::TimeNow(*Clock::Real());
      *p.mutable_status()->mutable_starttime() = now;
      p.mutable_status()->clear_conditions();
      for (const char* type :
           {"PodScheduled", "Initialized", "ContainersReady", "Ready"}) {
        corev1::PodCondition* c = p.mutable_status()->add_conditions();
        c->set_type(type);
        c->set_status("True");
        *c->mutable_lasttransitiontime() = now;
      }
      auto r = c_->client_->UpdateStatus(p);
      if (!r.ok() && (informer::IsNotFound(r.status()) ||
                      informer::IsConflict(r.status()))) {
        return Status::Ok();  // gone, or a newer version is on its way
      }
      return r.status();
    }

   private:
    Cluster* c_;
  };

  void OnPod(const ObjectPtr& o, bool deleted) {
    auto p = std::static_pointer_cast<const corev1::Pod>(o);
    kubelet_->Enqueue(informer::ObjectKey(*p));
    MutexLock l(&mu_);
    ++events_;
    cv_.notify_all();
    if (objects::Label(p->metadata(), "app") != "web") return;
    std::string key = informer::ObjectKey(*p);
    if (deleted) {
      model_.pods.erase(key);
    } else {
      model_.pods[key] = p;
    }
    if (!model_.tracking) return;
    int pods = 0, available = 0;
    for (const auto& [k, pod] : model_.pods) {
      if (IsPodTerminating(*pod)) continue;
      ++pods;
      if (IsPodReady(*pod)) ++available;
    }
    model_.max_pods = std::max(model_.max_pods, pods);
    model_.min_available = std::min(model_.min_available, available);
    ++model_.steps;
  }

  void RenewLoop() {
    MutexLock l(&mu_);
    while (!stop_) {
      std::set<std::string> alive = alive_;
      l.Unlock();
      for (const std::string& n : alive) {
        auto lease = client_->Get<coordinationv1::Lease>("kube-node-lease", n);
        if (!lease.ok()) continue;
        objects::SetMicroTime((*lease)->mutable_spec()->mutable_renewtime(),
                          Clock::Real()->WallNow());
        (void)client_->Update(**lease);
      }
      l.Lock();
      cv_.wait_for(l.native(), milliseconds(200),
                   [this]() REQUIRES(mu_) { return stop_; });
    }
  }

  apiserver::testing::TestServer server_;
  metrics::Registry metrics_;
  std::unique_ptr<informer::RestClient> client_;
  std::unique_ptr<informer::SharedInformerFactory> factory_;
  informer::SharedIndexInformer* pods_;
  informer::SharedIndexInformer* nodes_;
  informer::SharedIndexInformer* deployments_;
  informer::SharedIndexInformer* rss_;
  informer::SharedIndexInformer* events_informer_;
  std::unique_ptr<Kubelet> kubelet_;

  Mutex mu_;
  std::condition_variable cv_;
  uint64_t events_ GUARDED_BY(mu_) = 0;
  std::set<std::string> alive_ GUARDED_BY(mu_);
  Model model_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread renewer_;
};

appsv1::Deployment WebDeployment(int32_t replicas, const std::string& image) {
  appsv1::Deployment d;
  d.mutable_metadata()->set_name("web");
  d.mutable_metadata()->set_namespace_("default");
  d.mutable_spec()->set_replicas(replicas);
  (*d.mutable_spec()->mutable_selector()->mutable_matchlabels())["app"] = "web";
  corev1::PodTemplateSpec* t = d.mutable_spec()->mutable_template_();
  (*t->mutable_metadata()->mutable_labels())["app"] = "web";
  corev1::Container* c = t->mutable_spec()->add_containers();
  c->set_name("web");
  c->set_image(image);
  (*c->mutable_resources()->mutable_requests())["cpu"].set_string("100m");
  (*c->mutable_resources()->mutable_requests())["memory"].set_string("64Mi");
  auto* ru = d.mutable_spec()->mutable_strategy()->mutable_rollingupdate();
  d.mutable_spec()->mutable_strategy()->set_type("RollingUpdate");
  ru->mutable_maxsurge()->set_type(0);
  ru->mutable_maxsurge()->set_intval(2);
  ru->mutable_maxunavailable()->set_type(0);
  ru->mutable_maxunavailable()->set_intval(1);
  return d;
}

bool RolledOut(const appsv1::Deployment* d, int32_t replicas) {
  if (d == nullptr) return false;
  const appsv1::DeploymentStatus& s = d->status();
  bool complete = false;
  for (const auto& c : s.conditions()) {
    if (c.type() == "Progressing" && c.reason() == "NewReplicaSetAvailable") {
      complete = true;
    }
  }
  return complete && s.observedgeneration() >= d->metadata().generation() &&
         s.updatedreplicas() == replicas && s.replicas() == replicas &&
         s.availablereplicas() == replicas;
}

std::map<std::string, int> PodsPerNode(const std::vector<PodPtr>& pods) {
  std::map<std::string, int> out;
  for (const PodPtr& p : pods) ++out[p->spec().nodename()];
  return out;
}

std::string KubectlDir() {
  char tmpl[] = "/tmp/kplane-ctrl-kubectl-XXXXXX";
  char* d = mkdtemp(tmpl);
  CHECK(d != nullptr);
  std::ofstream(std::string(d) + "/kubeconfig") << "";
  return d;
}

// The whole story once per wire format (--kube-api-content-type): protobuf
// is the default, as kube-controller-manager's; JSON stays supported.
class ControllerManagerWireTest
    : public ::testing::TestWithParam<const char*> {};

INSTANTIATE_TEST_SUITE_P(
    ContentTypes, ControllerManagerWireTest,
    ::testing::Values("application/vnd.kubernetes.protobuf",
                      "application/json"),
    [](const ::testing::TestParamInfo<const char*>& info) {
      return std::string(info.index == 0 ? "Protobuf" : "Json");
    });

TEST_P(ControllerManagerWireTest, DeploymentRolloutAndNodeFailure) {
  Cluster cluster;
  for (const char* n : {"node-a", "node-b", "node-c"}) cluster.AddNode(n);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());

  metrics::Registry registry;
  ControllerManagerOptions o;
  o.server = cluster.Url();
  o.identity = "cm-test";
  o.content_type = GetParam();
  o.node_monitor_grace_period = kGrace;
  o.node_monitor_period = kPeriod;
  o.pod_eviction_timeout_default = seconds(1);
  o.ephemeral_port = true;
  o.metrics = &registry;
  auto cm = ControllerManager::Start(o);
  ASSERT_TRUE(cm.ok()) << cm.status();

  // 1. Ten replicas, bound and spread over the three nodes.
  auto created = cluster.client()->Create(WebDeployment(10, "nginx:1"));
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(cluster.WaitFor([&] {
    return RolledOut(cluster.Deployment("web").get(), 10);
  })) << (cluster.Deployment("web") ? cluster.Deployment("web")->DebugString()
                                    : "no deployment");
  std::vector<PodPtr> pods = cluster.WebPods();
  ASSERT_EQ(pods.size(), 10u);
  std::map<std::string, int> per_node = PodsPerNode(pods);
  ASSERT_EQ(per_node.size(), 3u);
  for (const auto& [node, n] : per_node) {
    EXPECT_GE(n, 3) << node;
    EXPECT_LE(n, 4) << node;
  }
  EXPECT_EQ(objects::Annotation(cluster.Deployment("web")->metadata(),
                            kRevisionAnnotation),
            "1");

  // 2. Rolling update to nginx:2 within maxSurge 2 / maxUnavailable 1 at
  // every step of the pod watch; `kubectl rollout status` returns when done.
  cluster.Track(true);
  {
    auto d = cluster.client()->Get<appsv1::Deployment>("default", "web");
    ASSERT_TRUE(d.ok());
    (*d)->mutable_spec()
        ->mutable_template_()
        ->mutable_spec()
        ->mutable_containers(0)
        ->set_image("nginx:2");
    ASSERT_TRUE(cluster.client()->Update(**d).ok());
  }
  std::string kdir = KubectlDir();
  e2e::Process rollout(
      {"kubectl", "--server", cluster.Url(), "--cache-dir", kdir + "/cache",
       "rollout", "status", "deployment/web", "--timeout=90s"},
      {"KUBECONFIG=" + kdir + "/kubeconfig", "HOME=" + kdir});
  rollout.Start();
  ASSERT_TRUE(cluster.WaitFor([&] {
    auto d = cluster.Deployment("web");
    if (!RolledOut(d.get(), 10)) return false;
    for (const PodPtr& p : cluster.WebPods(true)) {
      if (p->spec().containers(0).image() != "nginx:2") return false;
    }
    return true;
  }));
  e2e::RunResult rr = rollout.Wait(std::chrono::milliseconds(90000));
  EXPECT_EQ(rr.exit_code, 0) << rr.out << rr.err;
  EXPECT_NE(rr.out.find("successfully rolled out"), std::string::npos)
      << rr.out;

  // The rollout's events, through kubectl get events / describe (which
  // lists events with involvedObject field selectors).
  auto kubectl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"kubectl", "--server", cluster.Url(),
                                     "--cache-dir", kdir + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    e2e::Process p(argv,
                   {"KUBECONFIG=" + kdir + "/kubeconfig", "HOME=" + kdir});
    p.Start();
    return p.Wait(std::chrono::milliseconds(30000));
  };
  const std::string some_pod = cluster.WebPods().front()->metadata().name();
  ASSERT_TRUE(cluster.WaitFor([&] {
    return cluster.HasEvent("Deployment", "web",
                            "ScalingReplicaSet Scaled down replica set") &&
           cluster.HasEvent("Pod", some_pod, "Scheduled Successfully assigned");
  }));
  rr = kubectl({"get", "events"});
  EXPECT_EQ(rr.exit_code, 0) << rr.err;
  for (const char* want :
       {"ScalingReplicaSet", "SuccessfulCreate", "SuccessfulDelete",
        "Scheduled", "deployment/web", "Scaled up replica set web-"}) {
    EXPECT_NE(rr.out.find(want), std::string::npos) << want << "\n" << rr.out;
  }
  rr = kubectl({"describe", "deployment", "web"});
  EXPECT_EQ(rr.exit_code, 0) << rr.err;
  EXPECT_NE(rr.out.find("deployment-controller  Scaled down replica set"),
            std::string::npos)
      << rr.out;
  rr = kubectl({"describe", "pod", some_pod});
  EXPECT_EQ(rr.exit_code, 0) << rr.err;
  EXPECT_NE(rr.out.find("default-scheduler  Successfully assigned default/" +
                        some_pod + " to node-"),
            std::string::npos)
      << rr.out;
  Cluster::Model m = cluster.model();
  cluster.Track(false);
  EXPECT_GT(m.steps, 20);
  EXPECT_LE(m.max_pods, 12) << "maxSurge exceeded";
  EXPECT_GE(m.min_available, 9) << "maxUnavailable exceeded";
  EXPECT_EQ(objects::Annotation(cluster.Deployment("web")->metadata(),
                            kRevisionAnnotation),
            "2");
  std::printf("rollout: %d pod events, max %d pods, min %d available\n",
              m.steps, m.max_pods, m.min_available);

  // 3. node-a stops renewing its lease: NotReady within grace + period,
  // tainted, its pods evicted after the (1 s) toleration and replaced.
  std::set<std::string> on_a;
  for (const PodPtr& p : cluster.WebPods()) {
    if (p->spec().nodename() == "node-a") on_a.insert(p->metadata().name());
  }
  ASSERT_FALSE(on_a.empty());
  auto t0 = std::chrono::steady_clock::now();
  cluster.SetAlive("node-a", false);
  ASSERT_TRUE(cluster.WaitFor([&] {
    auto n = cluster.Node("node-a");
    const corev1::NodeCondition* c = FindNodeCondition(n->status(), "Ready");
    return c != nullptr && c->status() == "Unknown";
  }));
  auto t1 = std::chrono::steady_clock::now();
  {
    auto n = cluster.Node("node-a");
    const corev1::NodeCondition* c = FindNodeCondition(n->status(), "Ready");
    EXPECT_EQ(c->reason(), "NodeStatusUnknown");
  }
  ASSERT_TRUE(cluster.WaitFor([&] {
    return cluster.HasEvent("Node", "node-a", "NodeNotReady");
  }));
  rr = kubectl({"describe", "node", "node-a"});
  EXPECT_EQ(rr.exit_code, 0) << rr.err;
  EXPECT_NE(rr.out.find("Node node-a status is now: NodeNotReady"),
            std::string::npos)
      << rr.out;
  EXPECT_NE(rr.out.find("Registered Node node-a in Controller"),
            std::string::npos)
      << rr.out;
  std::filesystem::remove_all(kdir);
  ASSERT_TRUE(cluster.WaitFor([&] {
    auto n = cluster.Node("node-a");
    for (const auto& t : n->spec().taints()) {
      if (t.key() == kUnreachableTaint && t.effect() == "NoExecute")
        return true;
    }
    return false;
  }));
  ASSERT_TRUE(cluster.WaitFor([&] {
    std::vector<PodPtr> live = cluster.WebPods();
    if (live.size() != 10) return false;
    for (const PodPtr& p : live) {
      if (p->spec().nodename().empty() || p->spec().nodename() == "node-a" ||
          !IsPodReady(*p)) {
        return false;
      }
    }
    return true;
  }));
  auto t2 = std::chrono::steady_clock::now();
  double to_not_ready = std::chrono::duration<double>(t1 - t0).count();
  double to_replaced = std::chrono::duration<double>(t2 - t1).count();
  std::printf(
      "node failure: lease stop -> NotReady %.2f s (grace %.1f s, period "
      "%.1f s); NotReady -> %zu replacements Ready %.2f s (toleration 1 s)\n",
      to_not_ready, std::chrono::duration<double>(kGrace).count(),
      std::chrono::duration<double>(kPeriod).count(), on_a.size(), to_replaced);
  // Renewals every 200 ms: the last one may be up to 0.2 s before t0.
  EXPECT_GE(to_not_ready, 1.7);
  EXPECT_LE(to_not_ready, 2.0 + 0.5 + 1.0);

  // 4. The lease resumes: Ready again, taint gone.
  cluster.SetAlive("node-a", true);
  ASSERT_TRUE(cluster.WaitFor([&] {
    auto n = cluster.Node("node-a");
    return IsNodeReady(*n) && n->spec().taints_size() == 0;
  }));

  // 5. Deleting the deployment takes its ReplicaSets and pods with it.
  ASSERT_TRUE(
      cluster.client()->Delete<appsv1::Deployment>("default", "web").ok());
  EXPECT_TRUE(cluster.WaitFor([&] {
    return cluster.ReplicaSetCount() == 0 && cluster.WebPods().empty();
  }));

  // /healthz and /metrics.
  net::HttpClient http("127.0.0.1", (*cm)->port());
  auto h = http.Request("GET", "/healthz", {}, "");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(h->body, "ok");
  auto metrics_page = http.Request("GET", "/metrics", {}, "");
  ASSERT_TRUE(metrics_page.ok());
  EXPECT_NE(
      metrics_page->body.find(
          "controller_sync_total{controller=\"deployment\",result=\"ok\"}"),
      std::string::npos);
  EXPECT_NE(metrics_page->body.find("workqueue_depth{name=\"replicaset\"}"),
            std::string::npos);
  EXPECT_NE(metrics_page->body.find("leader_election_master_status"),
            std::string::npos);
  (*cm)->Stop();
}

}  // namespace
}  // namespace kplane::controllers

namespace kplane::controllers {
namespace {

TEST(ControllerManagerTest, BadOptionsFailToStart) {
  ControllerManagerOptions o;
  o.server = "http://127.0.0.1:1";
  o.port = 0;
  o.controllers = {"bogus"};
  auto cm = ControllerManager::Start(o);
  EXPECT_EQ(cm.status().message(), "unknown controller \"bogus\"");
  o.controllers = {"*"};
  o.workers = 0;
  EXPECT_FALSE(ControllerManager::Start(o).ok());
  o.workers = 2;
  o.percentage_of_nodes_to_score = 101;
  EXPECT_EQ(ControllerManager::Start(o).status().message(),
            "--percentage-of-nodes-to-score must be in 0..100 (0: adaptive), "
            "got 101");
  o.percentage_of_nodes_to_score = 0;
  o.content_type = "application/yaml";
  EXPECT_EQ(ControllerManager::Start(o).status().message(),
            "--kube-api-content-type must be "
            "application/vnd.kubernetes.protobuf or application/json, not "
            "\"application/yaml\"");
}

TEST(ControllerManagerIntegrationTest, LeaderElectionFailover) {
  apiserver::testing::TestServer server;
  std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  metrics::Registry r1, r2;
  auto options = [&](const std::string& id, metrics::Registry* reg) {
    ControllerManagerOptions o;
    o.server = url;
    o.identity = id;
    o.port = 0;
    o.metrics = reg;
    o.leader_elect_lease_duration = seconds(2);
    o.leader_elect_renew_deadline = milliseconds(1500);
    o.leader_elect_retry_period = milliseconds(200);
    return o;
  };
  auto first = ControllerManager::Start(options("cm-1", &r1));
  ASSERT_TRUE(first.ok()) << first.status();
  auto client = informer::RestClient::New({.server = url});
  ASSERT_TRUE(client.ok());
  auto holder = [&]() -> std::string {
    auto l = (*client)->Get<coordinationv1::Lease>("kube-system",
                                                   "kube-controller-manager");
    return l.ok() ? (*l)->spec().holderidentity() : "";
  };
  auto wait_leading = [](ControllerManager* cm) {
    return cm->WaitLeading(kWait);
  };
  ASSERT_TRUE(wait_leading(first->get()));
  EXPECT_EQ(holder(), "cm-1");
  ControllerManagerOptions o2 = options("cm-2", &r2);
  o2.release_lease_on_stop = false;
  auto second = ControllerManager::Start(o2);
  ASSERT_TRUE(second.ok()) << second.status();
  // The follower waits out the lease; it must not lead while cm-1 renews.
  EXPECT_FALSE((*second)->WaitLost(seconds(3)));
  EXPECT_FALSE((*second)->IsLeading());
  EXPECT_EQ(holder(), "cm-1");
  auto t0 = std::chrono::steady_clock::now();
  (*first)->Stop();  // releases the lease
  EXPECT_TRUE((*first)->Lost());
  // Released: nobody holds it, or cm-2 already took it.
  const std::string after_stop = holder();
  EXPECT_TRUE(after_stop.empty() || after_stop == "cm-2") << after_stop;
  ASSERT_TRUE(wait_leading(second->get()));
  double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::printf("leader failover after release: %.2f s\n", took);
  EXPECT_EQ(holder(), "cm-2");
  // cm-2 dies without releasing (a crash): cm-3 takes over only after the
  // lease duration as it observed it.
  ControllerManagerOptions o3 = options("cm-3", &r1);
  auto third = ControllerManager::Start(o3);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE((*third)->WaitLeading(seconds(1)));
  auto t1 = std::chrono::steady_clock::now();
  (*second)->Stop();
  ASSERT_TRUE(wait_leading(third->get()));
  double crash =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1)
          .count();
  std::printf("leader failover after a crash: %.2f s (lease 2 s)\n", crash);
  // Not before the lease ran out: cm-2 renewed at most a retry period
  // (200 ms) before it stopped, and cm-3 counts from when it saw that.
  EXPECT_GE(crash, 2.0 - 0.2 - 0.1);
  EXPECT_EQ(holder(), "cm-3");
  (*third)->Stop();
}

}  // namespace
}  // namespace kplane::controllers
