#include "kubeletsim/fleet.h"

#include <algorithm>
#include <atomic>
#include <bitset>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <unordered_map>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/saturating.h"
#include "base/strings.h"
#include "informer/api_errors.h"
#include "informer/event_recorder.h"
#include "informer/list_watch.h"
#include "informer/rest_client.h"
#include "informer/shared_informer.h"
#include "kubeletsim/control_server.h"
#include "kubeletsim/pod_exec.h"
#include "kubeletsim/pod_logs.h"
#include "kubeletsim/timer_queue.h"
#include "net/ipv4_cidr.h"
#include "net/websocket.h"
#include "net/worker_pool.h"
#include "objects/meta.h"
#include "objects/time.h"

namespace kplane::kubeletsim {

using informer::ObjectPtr;

namespace {

constexpr char kNodeIndex[] = "node";
// Jitter of each lease renewal period, as the kubelet's node lease
// controller (wait.JitterUntil(..., 0.04, ...)).
constexpr double kLeaseJitter = 0.04;

std::vector<std::string> PodNodeIndex(const google::protobuf::Message& m) {
  const auto& pod = static_cast<const corev1::Pod&>(m);
  if (pod.spec().nodename().empty()) return {};
  return {pod.spec().nodename()};
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

// ---------------------------------------------------------------------------
// Impl

class Fleet::Impl {
 public:
  // What the fleet remembers of one pod bound to one of its nodes.
  struct PodSim {
    std::string uid;
    bool seen = false;  // a status was written (or adopted)
    PodStage stage = PodStage::kCreating;
    bool terminating = false;
    bool finished = false;  // terminated and DELETE sent
    PodRuntime rt;
    uint32_t ip_host = 0;  // last octet of the pod IP, 0 = none
    TimerId timer = 0;     // the pending next step, if any
    uint64_t gen = 0;      // bumps invalidate stale timers
    int crash_loop_level = 0;  // NextCrashLoopBackOff's count of exits
    // The status manager's state: the resourceVersion our last status
    // write produced (a cached pod no newer is our own write, or older,
    // and is not reconciled: that would echo every write back); `dirty`
    // while the status we mean to report has not been written (a write
    // failed), retried after a back-off on `status_retry`.
    std::string written_rv;
    bool status_dirty = false;
    int status_failures = 0;
    TimerId status_retry = 0;
  };

  // Lock order: a node's mu first. Under it the fleet sets and cancels
  // timers (the timer queue's lock), posts work (work_mu_, then an
  // executor's lock) and draws jitter (rng_mu_); register_mu_ is taken with
  // no other lock held; gauges_mu_ before any node's mu.
  struct Node {
    NodeIdentity id;
    // This node's own client (FleetOptions::node_tls); null: the shared one.
    std::unique_ptr<informer::RestClient> api;
    // This node's events (source.host = its name), written with its client.
    std::unique_ptr<informer::EventRecorder> events;
    std::unique_ptr<informer::RestEventSink> event_sink;
    std::shared_ptr<net::SerialExecutor> heart;  // lease + status
    std::shared_ptr<net::SerialExecutor> podq;   // pods
    mutable Mutex mu;
    bool stopped GUARDED_BY(mu) = false;
    bool registered GUARDED_BY(mu) = false;
    std::string uid GUARDED_BY(mu);
    // As last written
    std::unique_ptr<coordinationv1::Lease> lease GUARDED_BY(mu);
    TimerId lease_timer GUARDED_BY(mu) = 0;
    TimerId status_timer GUARDED_BY(mu) = 0;
    TimerId register_timer GUARDED_BY(mu) = 0;
    bool status_queued GUARDED_BY(mu) = false;
    bool holds_register_slot GUARDED_BY(mu) = false;  // see StartRegistrations
    int lease_failures GUARDED_BY(mu) = 0;
    int register_failures GUARDED_BY(mu) = 0;
    int64_t lease_renewals GUARDED_BY(mu) = 0;
    int64_t status_updates GUARDED_BY(mu) = 0;
    double last_lag GUARDED_BY(mu) = 0;
    std::map<std::string, PodSim> pods GUARDED_BY(mu);  // "ns/name" ->
    std::bitset<256> ips GUARDED_BY(mu);                // host parts in use
    // The pod CIDR (FleetOptions::register_pod_cidr, else spec.podCIDR as
    // the node IPAM set it): pod IPs are pod_net | 2 .. pod_net | max_host.
    // max_host 0: no CIDR yet, pods wait.
    uint32_t pod_net GUARDED_BY(mu) = 0;
    uint32_t max_host GUARDED_BY(mu) = 0;
    int pod_prefix GUARDED_BY(mu) = 0;
  };

  explicit Impl(FleetOptions o)
      : options_(std::move(o)),
        node_(options_.node),
        clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
        metrics_(options_.metrics != nullptr ? options_.metrics
                                             : metrics::Registry::Default()),
        rng_(options_.seed != 0 ? options_.seed : std::random_device{}()),
        timers_(clock_) {
    nodes_gauge_ = metrics_->NewGauge("kubeletsim_nodes",
                                      "Simulated nodes by state.", {"state"});
    pods_gauge_ = metrics_->NewGauge("kubeletsim_pods",
                                     "Pods bound to simulated nodes, by stage.",
                                     {"stage"});
    lag_ = metrics_
               ->NewHistogram(
                   "kubeletsim_heartbeat_lag_seconds",
                   "Lease renewal completion time minus its due time.", {},
                   {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2,
                    3, 5, 10, 20, 40})
               ->With({});
    api_errors_ =
        metrics_->NewCounter("kubeletsim_api_errors_total",
                             "Failed API calls by operation.", {"operation"});
    writes_ = metrics_->NewCounter("kubeletsim_api_writes_total",
                                   "Successful API writes by operation.",
                                   {"operation"});
  }

  ~Impl() { Stop(); }

  Status Init() {
    if (options_.nodes < 0) return InvalidArgumentError("--nodes must be >= 0");
    if (options_.lease_renew_interval <= Duration(0)) {
      return InvalidArgumentError("--lease-renew-interval must be > 0");
    }
    if (options_.workers < 1) return InvalidArgumentError("--workers < 1");
    if (options_.heartbeat_workers < 0) {
      return InvalidArgumentError("--heartbeat-workers < 0");
    }
    const int heartbeat_workers =
        options_.heartbeat_workers > 0
            ? options_.heartbeat_workers
            : AutoHeartbeatWorkers(options_.nodes,
                                   options_.lease_renew_interval);
    if (options_.register_pod_cidr &&
        (options_.first_index < 0 ||
         options_.first_index + options_.nodes > 16384)) {
      return InvalidArgumentError(
          "with --register-pod-cidr node indexes must lie in [0, 16384) (one "
          "/24 each in 10.64.0.0/10); without it the controller manager "
          "assigns pod CIDRs");
    }
    if (options_.first_index < 0 ||
        int64_t{options_.first_index} + options_.nodes > (1 << 20) - 2) {
      return InvalidArgumentError(
          "node indexes must lie in [0, 1048574) (InternalIPs in "
          "172.16.0.0/12)");
    }
    informer::RestClientOptions co;
    co.server = options_.server;
    co.protobuf = options_.protobuf;
    co.max_connections = std::max(1, options_.api_connections);
    co.clock = clock_;
    co.metrics = metrics_;
    co.user_agent = "kplane-kubeletsim/1";
    co.seed = options_.seed;
    co.tls = options_.tls;
    co.bearer_token = options_.bearer_token;
    ASSIGN_OR_RETURN(client_, informer::RestClient::New(co));
    if (!options_.node_tls) {
      // The heartbeats' own client, as the kubelet's: its connections are
      // never all taken by pod calls. (With node_tls each node has one.)
      informer::RestClientOptions heartbeat_options = co;
      heartbeat_options.max_connections = heartbeat_workers;
      ASSIGN_OR_RETURN(heartbeat_client_,
                       informer::RestClient::New(heartbeat_options));
    }

    // One probe, not retried, so that a wrong --server fails Start()
    // instead of logging forever.
    informer::RestClientOptions probe_options = co;
    probe_options.max_retries = 0;
    ASSIGN_OR_RETURN(auto probe, informer::RestClient::New(probe_options));
    auto ns = probe->Get<corev1::Namespace>("", kNodeLeaseNamespace);
    if (!ns.ok() && !informer::IsNotFound(ns.status())) {
      return Status(ns.status().code(), "cannot reach the API server at " +
                                            options_.server + ": " +
                                            ns.status().ToString());
    }

    pool_ = std::make_shared<net::WorkerPool>(options_.workers, "kubeletsim");
    heartbeat_pool_ =
        std::make_shared<net::WorkerPool>(heartbeat_workers, "kubeletsim-hb");
    registration_window_ = options_.max_registering > 0
                               ? options_.max_registering
                               : std::max(1, heartbeat_workers / 2);
    for (int i = 0; i < options_.nodes; ++i) {
      int index = options_.first_index + i;
      auto n = std::make_unique<Node>();
      n->id =
          MakeNodeIdentity(options_.name_prefix + std::to_string(index), index);
      if (options_.register_pod_cidr) {
        MutexLock l(&n->mu);
        n->pod_net = n->id.pod_net;
        n->max_host = 254;
        n->pod_prefix = 24;
      } else {
        n->id.pod_cidr.clear();
        n->id.pod_net = 0;
      }
      n->heart = std::make_shared<net::SerialExecutor>(heartbeat_pool_);
      n->podq = std::make_shared<net::SerialExecutor>(pool_);
      if (options_.node_tls) {
        informer::RestClientOptions node_options = co;
        ASSIGN_OR_RETURN(node_options.tls, options_.node_tls(n->id.name));
        node_options.max_connections =
            std::max(1, options_.node_api_connections);
        ASSIGN_OR_RETURN(n->api, informer::RestClient::New(node_options));
      }
      by_name_[n->id.name] = n.get();
      nodes_.push_back(std::move(n));
    }
    if (options_.record_events) {
      events_ = std::make_unique<informer::EventBroadcaster>(
          informer::EventBroadcasterOptions{.sink = &event_router_,
                                            .clock = clock_,
                                            .metrics = metrics_,
                                            .max_queued = 4096});
      for (auto& n : nodes_) {
        n->event_sink =
            std::make_unique<informer::RestEventSink>(ApiFor(n.get()));
        n->events = events_->NewRecorder("kubelet", n->id.name);
      }
    }
    UpdateNodeGauges();

    // One watch for all bound pods, one for all nodes.
    const objects::ResourceInfo* pods =
        informer::RestClient::ResourceFor<corev1::Pod>();
    const objects::ResourceInfo* nodes =
        informer::RestClient::ResourceFor<corev1::Node>();
    CHECK(pods != nullptr && nodes != nullptr);
    informer::SharedInformerOptions po;
    po.name = "kubeletsim-pods";
    po.clock = clock_;
    po.indexers = informer::DefaultIndexers();
    po.indexers[kNodeIndex] = PodNodeIndex;
    pod_informer_ = std::make_unique<informer::SharedIndexInformer>(
        std::make_shared<informer::RestListerWatcher>(
            client_.get(), pods,
            informer::ListWatchScope{.field_selector = "spec.nodeName!="}),
        po);
    pod_informer_->AddEventHandler(informer::EventHandlerFuncs{
        .on_add = [this](const ObjectPtr& o, bool) { OnPod(o); },
        .on_update = [this](const ObjectPtr&, const ObjectPtr& o) { OnPod(o); },
        .on_delete =
            [this](const informer::DeletedObject& d) { OnPodDeleted(d); },
    });
    informer::SharedInformerOptions no;
    no.name = "kubeletsim-nodes";
    no.clock = clock_;
    node_informer_ = std::make_unique<informer::SharedIndexInformer>(
        std::make_shared<informer::RestListerWatcher>(client_.get(), nodes),
        no);
    node_informer_->AddEventHandler(informer::EventHandlerFuncs{
        .on_add = [this](const ObjectPtr& o, bool) { OnNode(o); },
        .on_update = [this](const ObjectPtr&,
                            const ObjectPtr& o) { OnNode(o); },
    });

    if (options_.port != 0) {
      ControlServer::Handlers h;
      h.stop_node = [this](const std::string& n) { return StopNode(n); };
      h.resume_node = [this](const std::string& n) { return ResumeNode(n); };
      h.stop_all = [this] { StopAll(); };
      h.resume_all = [this] { ResumeAll(); };
      h.list = [this] { return List(); };
      h.metrics = metrics_;
      h.container_logs = [this](const net::HttpRequest& req,
                                std::shared_ptr<net::Responder> r) {
        ServeContainerLogs(req, std::move(r));
      };
      h.exec = [this](const net::HttpRequest& req,
                      std::shared_ptr<net::Responder> r) {
        ServeExec(req, std::move(r));
      };
      control_ = std::make_unique<ControlServer>(std::move(h));
      RETURN_IF_ERROR(
          control_->Start(options_.bind_address,
                          static_cast<uint16_t>(std::max(0, options_.port)),
                          options_.serving_tls));
      // The nodes advertise this endpoint (daemonEndpoints + ExternalIP),
      // where kube-apiserver's pods/log finds it.
      node_.kubelet_port = control_->port();
      if (node_.kubelet_address.empty()) {
        const std::string& b = options_.bind_address;
        node_.kubelet_address =
            b.empty() || b == "0.0.0.0" || b == "::" ? "127.0.0.1" : b;
      }
    }

    node_informer_->Start();
    pod_informer_->Start();
    StartRegistrations();
    return Status::Ok();
  }

  // Registration is paced through a window of `max_registering` slots: a
  // node takes a slot when its registration is posted and gives it back
  // once registered (or stopped), which posts the next waiting node. Posting
  // all 10,000 registrations at once put every lease renewal of the first
  // registered nodes behind the whole backlog in the workers' FIFO; when
  // that took longer than the grace period, node lifecycle marked running
  // nodes NotReady. Example, window 2, nodes a..e: post a, b; a done -> post
  // c; b done -> post d; ... while a's and b's renewals run in between.
  void StartRegistrations() {
    const int window = registration_window_;
    std::vector<Node*> first;
    {
      MutexLock l(&register_mu_);
      for (auto& n : nodes_) register_waiting_.push_back(n.get());
      while (static_cast<int>(first.size()) < window &&
             !register_waiting_.empty()) {
        first.push_back(register_waiting_.front());
        register_waiting_.pop_front();
      }
    }
    for (Node* n : first) PostRegistration(n);
  }

  void PostRegistration(Node* n) {
    {
      MutexLock l(&n->mu);
      n->holds_register_slot = true;
    }
    Post(n->heart, [this, n] { Register(n); });
  }

  // Gives n's slot (if it holds one) to the next waiting node.
  void ReleaseRegisterSlot(Node* n) {
    {
      MutexLock l(&n->mu);
      if (!n->holds_register_slot) return;
      n->holds_register_slot = false;
    }
    Node* next = nullptr;
    {
      MutexLock l(&register_mu_);
      if (register_waiting_.empty()) return;
      next = register_waiting_.front();
      register_waiting_.pop_front();
    }
    PostRegistration(next);
  }

  // ---- fault injection

  Status StopNode(const std::string& name) {
    Node* n = Find(name);
    if (n == nullptr) return NotFoundError("no simulated node " + name);
    {
      MutexLock l(&n->mu);
      if (n->stopped) return Status::Ok();
      n->stopped = true;
      timers_.Cancel(n->lease_timer);
      timers_.Cancel(n->status_timer);
      timers_.Cancel(n->register_timer);
      n->lease_timer = n->status_timer = n->register_timer = 0;
    }
    // A registration waiting on its retry timer will not run again.
    ReleaseRegisterSlot(n);
    LOG(INFO) << "kubeletsim: node " << name << " stopped (heartbeats off)";
    UpdateNodeGauges();
    return Status::Ok();
  }

  Status ResumeNode(const std::string& name) {
    Node* n = Find(name);
    if (n == nullptr) return NotFoundError("no simulated node " + name);
    bool registered;
    {
      MutexLock l(&n->mu);
      if (!n->stopped) return Status::Ok();
      n->stopped = false;
      registered = n->registered;
    }
    LOG(INFO) << "kubeletsim: node " << name << " resumed";
    UpdateNodeGauges();
    if (!registered) {
      Post(n->heart, [this, n] { Register(n); });
      return Status::Ok();
    }
    TimePoint now = clock_->Now();
    RecordKubeletStart(n);
    Post(n->heart, [this, n, now] { RenewLease(n, now); });
    QueueStatusReport(n);
    ResyncPods(n);
    return Status::Ok();
  }

  void StopAll() {
    for (auto& n : nodes_) (void)StopNode(n->id.name);
  }
  void ResumeAll() {
    for (auto& n : nodes_) (void)ResumeNode(n->id.name);
  }

  std::vector<NodeInfo> List() const {
    std::vector<NodeInfo> out;
    out.reserve(nodes_.size());
    for (const auto& n : nodes_) {
      MutexLock l(&n->mu);
      NodeInfo i;
      i.name = n->id.name;
      i.stopped = n->stopped;
      i.registered = n->registered;
      i.pods = static_cast<int>(n->pods.size());
      i.lease_renewals = n->lease_renewals;
      i.status_updates = n->status_updates;
      i.last_lag_seconds = n->last_lag;
      if (n->max_host != 0) {
        i.pod_cidr =
            FormatIPv4(n->pod_net) + "/" + std::to_string(n->pod_prefix);
      }
      out.push_back(std::move(i));
    }
    return out;
  }

  uint16_t port() const { return control_ ? control_->port() : 0; }

  void WaitIdle() const {
    while (true) {
      timers_.WaitIdle();
      {
        MutexLock l(&work_mu_);
        work_cv_.wait(l.native(), [&]() REQUIRES(work_mu_) {
          return outstanding_ == 0 || stopping_;
        });
      }
      if (stopping_) return;
      // Work that just finished may have scheduled a due timer.
      if (timers_.NextDue() > clock_->Now()) {
        MutexLock l(&work_mu_);
        if (outstanding_ == 0) return;
      }
    }
  }

  void Stop() {
    if (stopping_.exchange(true)) return;
    if (control_) control_->Stop();
    // Queued events are dropped (the router refuses them once stopping_):
    // a stopped fleet goes silent, as a killed process would.
    if (events_) events_->Shutdown();
    timers_.Stop();
    if (pod_informer_) pod_informer_->Stop();
    if (node_informer_) node_informer_->Stop();
    if (pool_) pool_->Shutdown();
    if (heartbeat_pool_) heartbeat_pool_->Shutdown();
    {
      MutexLock l(&work_mu_);
      work_cv_.notify_all();
    }
    for (auto& n : nodes_) {
      MutexLock l(&n->mu);
      n->stopped = true;
    }
    UpdateNodeGauges();
    LOG(INFO) << "kubeletsim: fleet of " << nodes_.size() << " nodes stopped";
  }

 private:
  Node* Find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

  // Runs `fn` on `ex` unless the fleet is stopping; counted for WaitIdle.
  void Post(const std::shared_ptr<net::SerialExecutor>& ex,
            std::function<void()> fn) {
    {
      MutexLock l(&work_mu_);
      ++outstanding_;
    }
    ex->Post([this, fn = std::move(fn)] {
      if (!stopping_) fn();
      MutexLock l(&work_mu_);
      if (--outstanding_ == 0) work_cv_.notify_all();
    });
  }

  // A timer that posts `fn(due)` to `ex` when due.
  TimerId After(Duration d, std::shared_ptr<net::SerialExecutor> ex,
                std::function<void(TimePoint)> fn) {
    return timers_.ScheduleAfter(
        d, [this, ex = std::move(ex), fn = std::move(fn)](TimePoint due) {
          Post(ex, [fn, due] { fn(due); });
        });
  }

  Duration Jittered(Duration d, double factor) {
    MutexLock l(&rng_mu_);
    std::uniform_real_distribution<double> u(0.0, factor);
    return d + std::chrono::duration_cast<Duration>(d * u(rng_));
  }

  bool Stopped(Node* n) const {
    MutexLock l(&n->mu);
    return n->stopped;
  }

  void ApiError(const char* op, const std::string& node, const Status& s) {
    api_errors_->With({op})->Inc();
    if (!stopping_) {
      LOG(WARNING) << "kubeletsim: " << op << " " << node << ": " << s;
    }
  }

  // Recounts every node (start, stop and resume). A registration moves
  // one node instead (MarkRegistered): a recount per registration was
  // O(N^2) lock round trips over a fleet's start (4*10^8 at 20,000 nodes).
  void UpdateNodeGauges() EXCLUDES(gauges_mu_) {
    MutexLock g(&gauges_mu_);
    int registered = 0, stopped = 0, pending = 0;
    for (const auto& n : nodes_) {
      MutexLock l(&n->mu);
      if (n->stopped) {
        ++stopped;
      } else if (n->registered) {
        ++registered;
      } else {
        ++pending;
      }
    }
    nodes_gauge_->With({"ready"})->Set(registered);
    nodes_gauge_->With({"stopped"})->Set(stopped);
    nodes_gauge_->With({"registering"})->Set(pending);
  }

  void MarkRegistered(Node* n, const std::string& uid) EXCLUDES(gauges_mu_) {
    MutexLock g(&gauges_mu_);
    bool was_registering;
    {
      MutexLock l(&n->mu);
      was_registering = !n->stopped && !n->registered;
      n->registered = true;
      n->uid = uid;
      n->register_failures = 0;
    }
    if (was_registering) {
      nodes_gauge_->With({"ready"})->Inc();
      nodes_gauge_->With({"registering"})->Inc(-1);
    }
  }

  // ---- registration, lease, status (on the node's heart executor)

  void Register(Node* n) {
    if (Stopped(n)) {
      ReleaseRegisterSlot(n);
      return;
    }
    corev1::Node want = BuildNode(node_, n->id, clock_->WallNow());
    auto created = HeartbeatApiFor(n)->Create(want);
    std::string uid;
    if (created.ok()) {
      uid = (*created)->metadata().uid();
      writes_->With({"register"})->Inc();
    } else if (informer::IsAlreadyExists(created.status())) {
      // Re-registration (a restarted fleet): adopt the Node and report our
      // status over whatever it says.
      auto got = HeartbeatApiFor(n)->Get<corev1::Node>("", n->id.name);
      if (got.ok()) {
        uid = (*got)->metadata().uid();
        LearnPodCidr(n, **got);
        Status s = WriteStatus(n, **got);
        if (!s.ok()) ApiError("node_status", n->id.name, s);
      } else {
        created = got.status();
      }
    }
    if (uid.empty()) {
      ApiError("register", n->id.name, created.status());
      MutexLock l(&n->mu);
      if (n->stopped) {
        l.Unlock();
        ReleaseRegisterSlot(n);
        return;
      }
      int f = std::min(++n->register_failures, 6);
      n->register_timer = After(milliseconds(100 << f), n->heart,
                                [this, n](TimePoint) { Register(n); });
      return;
    }
    MarkRegistered(n, uid);
    ReleaseRegisterSlot(n);
    RecordKubeletStart(n);
    ScheduleStatusReport(n);
    RenewLease(n, clock_->Now());
    ResyncPods(n);
  }

  // A kubelet (re)starting on its node: "Starting", then the Ready
  // condition it reports. Only on these transitions: never per heartbeat.
  void RecordKubeletStart(Node* n) {
    if (!n->events) return;
    corev1::Node ref;  // kubelet's node reference: uid = the node's name
    ref.mutable_metadata()->set_name(n->id.name);
    ref.mutable_metadata()->set_uid(n->id.name);
    n->events->Event(ref, informer::kEventNormal, "Starting",
                     "Starting kubelet.");
    n->events->Event(ref, informer::kEventNormal, "NodeReady",
                     "Node " + n->id.name + " status is now: NodeReady");
  }

  // kubelet's container events for every container of `pod`.
  void RecordContainerEvents(Node* n, const corev1::Pod& pod,
                             std::initializer_list<std::string_view> which) {
    if (!n->events) return;
    for (const corev1::Container& c : pod.spec().containers()) {
      for (std::string_view reason : which) {
        std::string message;
        if (reason == "Pulled") {
          message = "Container image \"" + c.image() +
                    "\" already present on machine";
        } else if (reason == "Created") {
          message = "Created container " + c.name();
        } else if (reason == "Started") {
          message = "Started container " + c.name();
        } else {
          message = "Stopping container " + c.name();
        }
        n->events->Event(pod, informer::kEventNormal, reason, message);
      }
    }
  }

  void ScheduleLease(Node* n, Duration after) {
    MutexLock l(&n->mu);
    if (n->stopped) return;
    timers_.Cancel(n->lease_timer);
    n->lease_timer = After(after, n->heart,
                           [this, n](TimePoint due) { RenewLease(n, due); });
  }

  // The kubelet's node lease controller: update the cached lease (an
  // optimistic-locking PUT with its resourceVersion); on a conflict or no
  // cached lease, read it back first; create it if missing.
  void RenewLease(Node* n, TimePoint due) {
    std::unique_ptr<coordinationv1::Lease> cached;
    std::string uid;
    {
      MutexLock l(&n->mu);
      if (n->stopped) return;
      n->lease_timer = 0;
      // Taken, not copied: only this node's heart executor renews, and a
      // renewal that fails puts it back below.
      cached = std::move(n->lease);
      uid = n->uid;
    }
    StatusOr<std::unique_ptr<coordinationv1::Lease>> done =
        InternalError("not attempted");
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!cached) {
        auto got = HeartbeatApiFor(n)->Get<coordinationv1::Lease>(
            kNodeLeaseNamespace, n->id.name);
        if (informer::IsNotFound(got.status())) {
          done = HeartbeatApiFor(n)->Create(
              BuildLease(n->id.name, uid, options_.lease_duration_seconds,
                         clock_->WallNow()));
          break;
        }
        if (!got.ok()) {
          done = got.status();
          break;
        }
        cached = std::move(*got);
      }
      coordinationv1::Lease want = BuildLease(
          n->id.name, uid, options_.lease_duration_seconds, clock_->WallNow());
      want.mutable_metadata()->set_resourceversion(
          cached->metadata().resourceversion());
      want.mutable_metadata()->set_uid(cached->metadata().uid());
      if (uid.empty()) {
        *want.mutable_metadata()->mutable_ownerreferences() =
            cached->metadata().ownerreferences();
      }
      done = HeartbeatApiFor(n)->Update(want);
      if (!informer::IsConflict(done.status()) &&
          !informer::IsNotFound(done.status())) {
        break;
      }
      cached.reset();  // re-read (or re-create) and try once more
    }
    Duration next = Jittered(options_.lease_renew_interval, kLeaseJitter);
    if (done.ok()) {
      double lag = Seconds(clock_->Now() - due);
      lag_->Observe(std::max(0.0, lag));
      writes_->With({"lease"})->Inc();
      MutexLock l(&n->mu);
      n->lease = std::move(*done);
      n->lease_failures = 0;
      n->last_lag = lag;
      ++n->lease_renewals;
    } else {
      ApiError("lease", n->id.name, done.status());
      MutexLock l(&n->mu);
      if (cached) n->lease = std::move(cached);
      // The kubelet retries a failed renewal sooner: 200 ms doubling, at
      // most the renew interval.
      int f = std::min(++n->lease_failures, 10);
      next = std::min(options_.lease_renew_interval,
                      Duration(milliseconds(200 << (f - 1))));
    }
    ScheduleLease(n, next);
  }

  void ScheduleStatusReport(Node* n) {
    MutexLock l(&n->mu);
    if (n->stopped) return;
    timers_.Cancel(n->status_timer);
    n->status_timer = After(options_.node_status_report_frequency, n->heart,
                            [this, n](TimePoint) { ReportStatus(n); });
  }

  void QueueStatusReport(Node* n) {
    {
      MutexLock l(&n->mu);
      if (n->stopped || !n->registered || n->status_queued) return;
      n->status_queued = true;
    }
    Post(n->heart, [this, n] { ReportStatus(n); });
  }

  // PUT nodes/<n>/status from `current` with our conditions and heartbeat.
  Status WriteStatus(Node* n, const corev1::Node& current) {
    corev1::Node want = current;
    RefreshNodeStatus(node_, n->id, clock_->WallNow(), want.mutable_status());
    auto r = HeartbeatApiFor(n)->UpdateStatus(want);
    if (!r.ok()) return r.status();
    writes_->With({"node_status"})->Inc();
    MutexLock l(&n->mu);
    ++n->status_updates;
    return Status::Ok();
  }

  void ReportStatus(Node* n) {
    {
      MutexLock l(&n->mu);
      n->status_queued = false;
      if (n->stopped || !n->registered) return;
    }
    Status s = InternalError("not attempted");
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::shared_ptr<const corev1::Node> current;
      if (attempt == 0) {
        current = std::static_pointer_cast<const corev1::Node>(
            node_informer_->GetIndexer().Get(n->id.name));
      }
      if (!current) {
        auto got = HeartbeatApiFor(n)->Get<corev1::Node>("", n->id.name);
        if (!got.ok()) {
          s = got.status();
          break;
        }
        current = std::move(*got);
      }
      s = WriteStatus(n, *current);
      if (!informer::IsConflict(s)) break;
    }
    if (!s.ok()) ApiError("node_status", n->id.name, s);
    ScheduleStatusReport(n);
  }

  // A Node changed in the API. If it is ours and no longer says what we
  // would report (the node lifecycle controller marked it Unknown, someone
  // edited its status), report now rather than at the next period.
  void OnNode(const ObjectPtr& o) {
    const auto& node = static_cast<const corev1::Node&>(*o);
    Node* n = Find(node.metadata().name());
    if (n == nullptr) return;
    LearnPodCidr(n, node);
    if (!NodeStatusDiffers(node_, node.status())) return;
    QueueStatusReport(n);
  }

  // Takes the pod CIDR the node IPAM assigned to `node` (once: the API
  // server lets it change only from "" to a value); pods that waited for
  // it start.
  void LearnPodCidr(Node* n, const corev1::Node& node) {
    if (options_.register_pod_cidr || node.spec().podcidr().empty()) return;
    {
      MutexLock l(&n->mu);
      if (n->max_host != 0) return;
      uint32_t network = 0;
      int prefix = 0;
      Status s = net::ParseIPv4Cidr(node.spec().podcidr(), &network, &prefix);
      if (!s.ok() || prefix > 30) {
        LOG(WARNING) << "kubeletsim: " << n->id.name << ": unusable pod CIDR "
                     << node.spec().podcidr();
        return;
      }
      n->pod_net = network;
      n->pod_prefix = prefix;
      n->max_host = prefix >= 24 ? (1u << (32 - prefix)) - 2 : 254;
      if (n->max_host > 254) n->max_host = 254;
    }
    ResyncPods(n);
  }

  // ---- pods (on the node's pod executor)

  void OnPod(const ObjectPtr& o) {
    const auto& pod = static_cast<const corev1::Pod&>(*o);
    Node* n = Find(pod.spec().nodename());
    if (n == nullptr) return;
    std::string key = informer::ObjectKey(pod);
    Post(n->podq, [this, n, key] { SyncPod(n, key); });
  }

  void OnPodDeleted(const informer::DeletedObject& d) {
    const auto& pod = static_cast<const corev1::Pod&>(*d.object);
    Node* n = Find(pod.spec().nodename());
    if (n == nullptr) return;
    std::string key = d.key;
    Post(n->podq, [this, n, key] { ForgetPod(n, key); });
  }

  void ResyncPods(Node* n) {
    auto keys = pod_informer_->GetIndexer().IndexKeys(kNodeIndex, n->id.name);
    if (!keys.ok()) return;
    for (const std::string& key : *keys) {
      Post(n->podq, [this, n, key] { SyncPod(n, key); });
    }
  }

  void ForgetPod(Node* n, const std::string& key) {
    MutexLock l(&n->mu);
    auto it = n->pods.find(key);
    if (it == n->pods.end()) return;
    timers_.Cancel(it->second.timer);
    timers_.Cancel(it->second.status_retry);
    if (it->second.ip_host != 0) n->ips.reset(it->second.ip_host);
    CountStage(it->second, -1);
    n->pods.erase(it);
  }

  void CountStage(const PodSim& p, int delta) {
    if (!p.seen) return;
    pods_gauge_->With({PodStageName(p.stage)})->Inc(delta);
  }

  // ---- the kubelet's log endpoint

  // GET /containerLogs/<ns>/<pod>/<container>?follow=&tailLines=...
  void ServeContainerLogs(const net::HttpRequest& req,
                          std::shared_ptr<net::Responder> r) {
    const net::HttpHeaders text = {{"Content-Type", "text/plain"}};
    std::vector<std::string> parts = StrSplit(req.path, '/');
    // "", "containerLogs", ns, pod, container
    if (parts.size() != 5 || parts[2].empty() || parts[3].empty() ||
        parts[4].empty()) {
      r->Respond(404, text,
                 "want /containerLogs/<namespace>/<pod>/<container>");
      return;
    }
    StatusOr<LogQuery> q = ParseLogQuery(req);
    if (!q.ok()) {
      r->Respond(400, text, q.status().message());
      return;
    }
    std::string key = parts[2] + "/" + parts[3];
    std::string container = parts[4];
    const bool previous = q->previous;
    ServeContainerLog(
        *q,
        [this, key, container, previous] {
          return ContainerLogSource(key, container, previous);
        },
        clock_, &timers_, std::move(r));
  }

  // Where the log of `container` of pod `key` stands, from what this fleet
  // simulates; the kubelet's errors otherwise.
  StatusOr<LogSource> ContainerLogSource(const std::string& key,
                                         const std::string& container,
                                         bool previous) {
    std::shared_ptr<const corev1::Pod> pod = CachedPod(key);
    Node* n = pod ? Find(pod->spec().nodename()) : nullptr;
    if (n == nullptr) {
      return NotFoundError("pod " + key + " is not on a node of this kubelet");
    }
    const std::string& name = pod->metadata().name();
    bool known = false;
    for (const auto& c : pod->spec().containers())
      known |= c.name() == container;
    for (const auto& c : pod->spec().initcontainers()) {
      known |= c.name() == container;
    }
    if (!known) {
      return InvalidArgumentError("container " + container +
                                  " is not valid for pod " + name);
    }
    LogSource s{.ns = pod->metadata().namespace_(),
                .pod = name,
                .container = container};
    s.interval = LogIntervalFromAnnotation(
        objects::Annotation(pod->metadata(), kLogIntervalAnnotation));
    MutexLock l(&n->mu);
    auto it = n->pods.find(key);
    if (it == n->pods.end() || !it->second.seen ||
        it->second.uid != pod->metadata().uid() ||
        it->second.stage == PodStage::kCreating) {
      return InvalidArgumentError("container " + GoQuote(container) +
                                  " in pod " + GoQuote(name) +
                                  " is waiting to start: ContainerCreating");
    }
    const PodSim& p = it->second;
    if (previous) {
      if (p.rt.restart_count == 0) {
        return InvalidArgumentError("previous terminated container " +
                                    GoQuote(container) + " in pod " +
                                    GoQuote(name) + " not found");
      }
      s.started_at = p.rt.last_started_at;
      s.finished_at = p.rt.last_finished_at;
      return s;
    }
    s.started_at = p.rt.started_at;
    if (p.stage == PodStage::kTerminated || p.stage == PodStage::kCompleted) {
      s.finished_at = p.rt.finished_at;
    } else if (p.stage == PodStage::kBackOff) {
      s.finished_at = p.rt.last_finished_at;  // the run that exited
    }
    return s;
  }

  // ---- the kubelet's exec endpoint

  // POST /exec/<ns>/<pod>/<container>?command=..&stdin=&tty=: stdin is the
  // request body; the answer streams channel records (net/websocket.h's
  // EncodeChannelRecord): stdout 1, stderr 2, and last the exit Status on
  // 3. kube-apiserver's pods/exec speaks WebSocket to the client.
  void ServeExec(const net::HttpRequest& req,
                 std::shared_ptr<net::Responder> r) {
    const net::HttpHeaders text = {{"Content-Type", "text/plain"}};
    std::vector<std::string> parts = StrSplit(req.path, '/');
    // "", "exec", ns, pod, container
    if (parts.size() != 5 || parts[2].empty() || parts[3].empty() ||
        parts[4].empty()) {
      r->Respond(404, text, "want /exec/<namespace>/<pod>/<container>");
      return;
    }
    ExecCommand cmd;
    for (auto [it, end] = req.query.equal_range("command"); it != end; ++it) {
      cmd.argv.push_back(it->second);
    }
    if (cmd.argv.empty()) {
      r->Respond(400, text, "you must specify at least one command");
      return;
    }
    cmd.stdin =
        req.QueryParam("stdin") == "1" || req.QueryParam("stdin") == "true";
    cmd.tty = req.QueryParam("tty") == "1" || req.QueryParam("tty") == "true";
    const std::string key = parts[2] + "/" + parts[3];
    const std::string& container = parts[4];
    StatusOr<LogSource> running = ContainerLogSource(key, container, false);
    if (!running.ok()) {
      r->Respond(running.status().code() == StatusCode::kNotFound ? 404 : 400,
                 text, std::string(running.status().message()));
      return;
    }
    if (running->finished_at.has_value()) {
      // What containerd answers for a stopped container.
      r->Respond(400, text,
                 "container " + GoQuote(container) + " in pod " +
                     GoQuote(parts[3]) + " is not running");
      return;
    }
    std::shared_ptr<const corev1::Pod> pod = CachedPod(key);
    ShellEnv env{.hostname = parts[3],
                 .now = [this] { return clock_->WallNow(); }};
    if (pod != nullptr) {
      for (const auto& c : pod->spec().containers()) {
        if (c.name() != container) continue;
        for (const auto& e : c.env()) env.env.emplace_back(e.name(), e.value());
      }
    }
    std::vector<std::string> argv = cmd.argv;
    r->StartStream(200, {{"Content-Type", "application/octet-stream"}});
    auto session = std::make_shared<ExecSession>(
        std::move(env), std::move(cmd), &timers_,
        [r](uint8_t channel, std::string bytes) {
          r->Write(net::EncodeChannelRecord(channel, bytes));
        },
        [r, argv](int code) {
          r->Write(net::EncodeChannelRecord(3, ExecStatusJson(argv, code)));
          r->Finish();
        });
    // The session lives as long as the exchange: the body callback holds
    // it, OnClose cancels it (the client left, or the answer finished).
    r->OnClose([session] { session->Cancel(); });
    r->OnBodyData([session](std::string_view data, bool eof) {
      session->OnStdin(data, eof);
    });
    session->Start();
  }

  std::shared_ptr<const corev1::Pod> CachedPod(const std::string& key) {
    return std::static_pointer_cast<const corev1::Pod>(
        pod_informer_->GetIndexer().Get(key));
  }

  Duration ReadyDelay(const corev1::Pod& pod) {
    std::string_view v =
        objects::Annotation(pod.metadata(), kReadyAfterAnnotation);
    if (!v.empty()) {
      auto ns = objects::ParseGoDurationNanos(v);
      if (ns.ok() && *ns >= 0) return nanoseconds(*ns);
    }
    return options_.pod_ready_delay;
  }

  // How long the pod's containers run before they exit; nullopt: until
  // deleted (restartPolicy Always and no run-for annotation).
  std::optional<Duration> RunFor(const corev1::Pod& pod) {
    std::string_view v = objects::Annotation(pod.metadata(), kRunForAnnotation);
    if (!v.empty()) {
      auto ns = objects::ParseGoDurationNanos(v);
      if (ns.ok() && *ns >= 0) return nanoseconds(*ns);
    }
    const std::string& policy = pod.spec().restartpolicy();
    if (policy == "Never" || policy == "OnFailure") {
      return options_.pod_run_duration;
    }
    return std::nullopt;
  }

  static int ExitCode(const corev1::Pod& pod) {
    std::string_view v =
        objects::Annotation(pod.metadata(), kExitCodeAnnotation);
    std::optional<int64_t> code = ParseInt64(v);
    if (!code || *code < 0 || *code > 255) return 0;
    return static_cast<int>(*code);
  }

  // Moves a pod one step towards where its spec and metadata say it
  // should be. Idempotent: our own status writes come back through the
  // watch and land here as no-ops.
  void SyncPod(Node* n, const std::string& key) {
    std::shared_ptr<const corev1::Pod> pod = CachedPod(key);
    if (!pod || pod->spec().nodename() != n->id.name) {
      ForgetPod(n, key);
      return;
    }
    const std::string& phase = pod->status().phase();
    MutexLock l(&n->mu);
    if (n->stopped || !n->registered) return;
    PodSim& p = n->pods[key];
    if (p.uid != pod->metadata().uid()) {
      // New pod, or a new pod under a reused name.
      timers_.Cancel(p.timer);
      timers_.Cancel(p.status_retry);
      if (p.ip_host != 0) n->ips.reset(p.ip_host);
      CountStage(p, -1);
      p = PodSim{};
      p.uid = pod->metadata().uid();
    }
    if (p.finished) return;
    if (objects::IsBeingDeleted(pod->metadata())) {
      if (p.terminating) {
        if (p.timer == 0) RunPodStep(n, key, p, Duration(0), &Impl::Terminate);
        return;
      }
      p.terminating = true;
      if (p.stage == PodStage::kStarted || p.stage == PodStage::kReady) {
        RecordContainerEvents(n, *pod, {"Killing"});
      }
      timers_.Cancel(p.timer);
      p.timer = 0;
      Duration delay = options_.pod_termination_delay;
      if (pod->metadata().has_deletiongraceperiodseconds()) {
        delay = std::min<Duration>(
            delay,
            SaturatingSeconds(pod->metadata().deletiongraceperiodseconds()));
      }
      RunPodStep(n, key, p, delay, &Impl::Terminate);
      return;
    }
    if (!p.seen) {
      if ((phase == "Succeeded" || phase == "Failed")) {
        return;  // finished before we knew it: nothing to run
      }
      if (phase == "Running" && pod->status().hostip() == n->id.internal_ip) {
        Adopt(n, *pod, &p);
      } else {
        p.rt.host_ip = n->id.internal_ip;
        p.rt.start_time = clock_->WallNow();
        p.seen = true;
        p.stage = PodStage::kCreating;
        CountStage(p, +1);
        l.Unlock();
        WritePodStatus(n, key, PodStage::kCreating);
        l.Lock();
      }
    }
    auto it = n->pods.find(key);
    if (it == n->pods.end() || it->second.finished) return;
    PodSim& q = it->second;
    const bool repost = NeedsStatusRepost(n, *pod, &q);
    const PodStage stage = q.stage;
    if (q.timer == 0) ScheduleNextStep(n, key, *pod, q);
    if (!repost) return;
    l.Unlock();
    WritePodStatus(n, key, stage);
  }

  // needsReconcile: whether the API's status of `pod` lacks what this
  // kubelet reports for it -- someone else changed it (the node lifecycle
  // controller's Ready=False, a readiness gate's condition that changes
  // Ready), or our last write failed. Our own writes, as they come back
  // through the watch, never are: were the server to normalise a field,
  // reconciling them would write forever.
  bool NeedsStatusRepost(Node* n, const corev1::Pod& pod, PodSim* p)
      REQUIRES(n->mu) {
    if (!p->seen || p->terminating || p->finished) return false;
    const std::string& phase = pod.status().phase();
    // A terminal phase is final (the API server refuses to leave it).
    if (phase == "Succeeded" || phase == "Failed") return false;
    // After a failure, only the retry writes: it keeps the back-off.
    if (p->status_retry != 0) return false;
    if (!p->status_dirty &&
        NotNewer(pod.metadata().resourceversion(), p->written_rv)) {
      return false;
    }
    if (PodStatusByKubeletEqual(pod.status(),
                                BuildPodStatus(pod, p->stage, p->rt))) {
      p->status_dirty = false;
      return false;
    }
    return true;
  }

  // Whether resourceVersion `rv` is `written` or older. Resource versions
  // are opaque to clients, but ours (as etcd's) are increasing integers;
  // anything else is only recognised when equal.
  static bool NotNewer(const std::string& rv, const std::string& written) {
    if (written.empty()) return false;
    std::optional<uint64_t> a = ParseUint64(rv), b = ParseUint64(written);
    if (a && b) return *a <= *b;
    return rv == written;
  }

  // Puts the pod's next step on the clock, if it has one.
  void ScheduleNextStep(Node* n, const std::string& key, const corev1::Pod& pod,
                        PodSim& q) REQUIRES(n->mu) {
    if (q.stage == PodStage::kCreating) {
      // Without a pod CIDR the sandbox cannot start (LearnPodCidr resyncs).
      if (n->max_host == 0) return;
      RunPodStep(n, key, q, options_.pod_start_delay, &Impl::StartPod);
    } else if (q.stage == PodStage::kStarted || q.stage == PodStage::kReady) {
      // Whichever comes first of readiness and the containers' exit.
      const Duration ran = clock_->WallNow() - q.rt.started_at;
      std::optional<Duration> run = RunFor(pod);
      Duration exit_left =
          run ? std::max(*run - ran, Duration(0)) : Duration::max();
      Duration ready_left = std::max(ReadyDelay(pod) - ran, Duration(0));
      if (q.stage == PodStage::kStarted && (!run || ready_left < exit_left)) {
        RunPodStep(n, key, q, ready_left, &Impl::ReadyPod);
      } else if (run) {
        RunPodStep(n, key, q, exit_left, &Impl::ExitPod);
      }
    }
  }

  // A pod already Running on this node (the fleet restarted): keep its IP
  // and times.
  void Adopt(Node* n, const corev1::Pod& pod, PodSim* p) REQUIRES(n->mu) {
    p->seen = true;
    p->rt.host_ip = n->id.internal_ip;
    p->rt.pod_ip = pod.status().podip();
    p->rt.start_time = objects::ToWallTime(pod.status().starttime());
    p->rt.started_at = p->rt.start_time;
    p->rt.ready_at = p->rt.start_time;
    uint32_t ip = 0;
    int bits = 0;
    if (net::ParseIPv4Cidr(p->rt.pod_ip + "/32", &ip, &bits).ok()) {
      // Before the node's CIDR is known, the last octet (a CIDR of /24 or
      // more is the common case).
      uint32_t h = n->max_host != 0 ? ip - n->pod_net : ip & 255u;
      if (h >= 2 && h <= 254) {
        p->ip_host = h;
        n->ips.set(h);
      }
    }
    // ContainersReady: Ready also waits on readiness gates.
    bool ready = false;
    for (const auto& c : pod.status().conditions()) {
      if (c.type() == "ContainersReady") ready = c.status() == "True";
    }
    p->stage = ready ? PodStage::kReady : PodStage::kStarted;
    CountStage(*p, +1);
  }

  using PodStep = void (Impl::*)(Node*, const std::string&, uint64_t gen);

  // Schedules `step` after `d`.
  void RunPodStep(Node* n, const std::string& key, PodSim& p, Duration d,
                  PodStep step) REQUIRES(n->mu) {
    uint64_t gen = ++p.gen;
    p.timer = After(d, n->podq, [this, n, key, gen, step](TimePoint) {
      (this->*step)(n, key, gen);
    });
    if (options_.on_pod_step) {
      const char* name = step == &Impl::StartPod     ? "start"
                         : step == &Impl::ReadyPod   ? "ready"
                         : step == &Impl::ExitPod    ? "exit"
                         : step == &Impl::RestartPod ? "restart"
                                                     : "terminate";
      // Reported after n->mu is released, from the pod executor.
      Post(n->podq, [this, key, name] { options_.on_pod_step(key, name); });
    }
  }

  // The PodSim for a timer's step if it is still current; clears its timer.
  PodSim* Current(Node* n, const std::string& key, uint64_t gen)
      REQUIRES(n->mu) {
    auto it = n->pods.find(key);
    if (it == n->pods.end() || it->second.gen != gen) return nullptr;
    it->second.timer = 0;
    return n->stopped ? nullptr : &it->second;
  }

  void StartPod(Node* n, const std::string& key, uint64_t gen) {
    {
      MutexLock l(&n->mu);
      PodSim* p = Current(n, key, gen);
      if (p == nullptr || p->terminating) return;
      if (n->max_host == 0) {
        // No pod CIDR yet (the node IPAM has not got to this node):
        // ContainerCreating until LearnPodCidr resyncs the node's pods.
        LOG(DEBUG) << "kubeletsim: " << n->id.name << " has no pod CIDR for "
                   << key;
        return;
      }
      if (p->ip_host == 0) {
        for (uint32_t h = 2; h <= n->max_host; ++h) {
          if (!n->ips.test(h)) {
            p->ip_host = h;
            n->ips.set(h);
            break;
          }
        }
      }
      if (p->ip_host == 0) {
        LOG(WARNING) << "kubeletsim: " << n->id.name
                     << " has no free pod IP for " << key;
        return;  // stays ContainerCreating until an IP is freed
      }
      p->rt.pod_ip = FormatIPv4(n->pod_net | p->ip_host);
      p->rt.started_at = clock_->WallNow();
      CountStage(*p, -1);
      p->stage = PodStage::kStarted;
      CountStage(*p, +1);
    }
    WritePodStatus(n, key, PodStage::kStarted);
    if (std::shared_ptr<const corev1::Pod> pod = CachedPod(key)) {
      RecordContainerEvents(n, *pod, {"Pulled", "Created", "Started"});
    }
    SyncPod(n, key);  // schedules readiness
  }

  void ReadyPod(Node* n, const std::string& key, uint64_t gen) {
    {
      MutexLock l(&n->mu);
      PodSim* p = Current(n, key, gen);
      if (p == nullptr || p->terminating) return;
      p->rt.ready_at = clock_->WallNow();
      CountStage(*p, -1);
      p->stage = PodStage::kReady;
      CountStage(*p, +1);
    }
    WritePodStatus(n, key, PodStage::kReady);
    SyncPod(n, key);  // schedules the exit, if the pod has one
  }

  // The containers exit with the pod's exit code. restartPolicy Always, or
  // OnFailure with a non-zero code, restarts them as the kubelet does: at
  // once the first time, later after a CrashLoopBackOff wait (kBackOff,
  // then RestartPod); restartCount + 1 at each restart, the run shown as
  // lastState. Otherwise the pod is terminal: Succeeded (0) or Failed, its
  // IP freed.
  void ExitPod(Node* n, const std::string& key, uint64_t gen) {
    std::shared_ptr<const corev1::Pod> pod = CachedPod(key);
    if (!pod) return;
    const int code = ExitCode(*pod);
    const std::string& policy = pod->spec().restartpolicy();
    const bool restart = policy == "Always" || policy.empty() ||
                         (policy == "OnFailure" && code != 0);
    PodStage stage;
    {
      MutexLock l(&n->mu);
      PodSim* p = Current(n, key, gen);
      if (p == nullptr || p->terminating || p->uid != pod->metadata().uid()) {
        return;
      }
      const WallTime now = clock_->WallNow();
      CountStage(*p, -1);
      if (restart) {
        const Duration wait =
            NextCrashLoopBackOff(&p->crash_loop_level, now - p->rt.started_at);
        p->rt.last_exit_code = code;
        p->rt.last_started_at = p->rt.started_at;
        p->rt.last_finished_at = now;
        if (wait > Duration(0)) {
          p->rt.back_off = wait;
          stage = PodStage::kBackOff;
          RunPodStep(n, key, *p, wait, &Impl::RestartPod);
        } else {
          ++p->rt.restart_count;
          p->rt.started_at = now;
          stage = PodStage::kStarted;
        }
      } else {
        p->rt.exit_code = code;
        p->rt.finished_at = now;
        // The sandbox is gone; status keeps showing the IP, as the kubelet's.
        if (p->ip_host != 0) n->ips.reset(p->ip_host);
        p->ip_host = 0;
        stage = PodStage::kCompleted;
      }
      p->stage = stage;
      CountStage(*p, +1);
    }
    WritePodStatus(n, key, stage);
    if (stage == PodStage::kStarted) {
      RecordContainerEvents(n, *pod, {"Pulled", "Created", "Started"});
      SyncPod(n, key);  // the next run's readiness and exit
    }
  }

  // The end of a CrashLoopBackOff wait: the containers' next run.
  void RestartPod(Node* n, const std::string& key, uint64_t gen) {
    {
      MutexLock l(&n->mu);
      PodSim* p = Current(n, key, gen);
      if (p == nullptr || p->terminating) return;
      CountStage(*p, -1);
      ++p->rt.restart_count;
      p->rt.started_at = clock_->WallNow();
      p->stage = PodStage::kStarted;
      CountStage(*p, +1);
    }
    WritePodStatus(n, key, PodStage::kStarted);
    if (std::shared_ptr<const corev1::Pod> pod = CachedPod(key)) {
      RecordContainerEvents(n, *pod, {"Pulled", "Created", "Started"});
    }
    SyncPod(n, key);
  }

  // Graceful deletion's end: containers terminated, then the kubelet's
  // final DELETE with gracePeriodSeconds=0 (and the pod's uid as a
  // precondition, so a new pod of the same name is not hit).
  void Terminate(Node* n, const std::string& key, uint64_t gen) {
    std::string uid;
    bool had_started;
    // A pod that already ended keeps its final status (a Failed pod must
    // not turn Succeeded on its way out).
    std::shared_ptr<const corev1::Pod> cached = CachedPod(key);
    bool write_status = !cached || (cached->status().phase() != "Succeeded" &&
                                    cached->status().phase() != "Failed");
    {
      MutexLock l(&n->mu);
      PodSim* p = Current(n, key, gen);
      if (p == nullptr) return;
      uid = p->uid;
      if (p->stage == PodStage::kCompleted) write_status = false;
      had_started = p->seen;
      if (!p->seen) {
        p->rt.host_ip = n->id.internal_ip;
        p->rt.start_time = clock_->WallNow();
        p->seen = true;
      } else {
        CountStage(*p, -1);
      }
      if (p->stage == PodStage::kCreating) p->rt.started_at = clock_->WallNow();
      // The containers die of the kubelet's SIGTERM; ones that had exited
      // on their own keep their code.
      if (p->stage != PodStage::kCompleted) p->rt.exit_code = kKilledExitCode;
      p->rt.finished_at = clock_->WallNow();
      p->stage = PodStage::kTerminated;
      CountStage(*p, +1);
    }
    (void)had_started;
    if (write_status) WritePodStatus(n, key, PodStage::kTerminated);
    auto [ns, name] = informer::SplitObjectKey(key);
    objects::metav1::DeleteOptions del;
    del.set_graceperiodseconds(0);
    del.mutable_preconditions()->set_uid(uid);
    Status s = ApiFor(n)->Delete<corev1::Pod>(ns, name, del);
    if (s.ok() || informer::IsNotFound(s) || informer::IsConflict(s)) {
      if (s.ok()) writes_->With({"pod_delete"})->Inc();
      MutexLock l(&n->mu);
      auto it = n->pods.find(key);
      if (it != n->pods.end() && it->second.uid == uid) {
        it->second.finished = true;
        if (it->second.ip_host != 0) {
          n->ips.reset(it->second.ip_host);
          it->second.ip_host = 0;
        }
      }
      return;
    }
    ApiError("pod_delete", n->id.name, s);
    MutexLock l(&n->mu);
    auto it = n->pods.find(key);
    if (it != n->pods.end() && it->second.uid == uid) {
      RunPodStep(n, key, it->second, seconds(1), &Impl::Terminate);
    }
  }

  // PUT pods/<p>/status with the status of `stage` over the cached pod;
  // on a conflict read the pod again (twice at most). A failed write marks
  // the pod's status dirty and retries it (the reconcile of SyncPod) after
  // a back-off of 1 s doubling to 30 s, as the status manager's periodic
  // sync would.
  void WritePodStatus(Node* n, const std::string& key, PodStage stage) {
    PodRuntime rt;
    std::string uid;
    {
      MutexLock l(&n->mu);
      auto it = n->pods.find(key);
      if (it == n->pods.end()) return;
      rt = it->second.rt;
      uid = it->second.uid;
    }
    std::shared_ptr<const corev1::Pod> pod = CachedPod(key);
    Status s = InternalError("not attempted");
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (!pod || attempt > 0) {
        auto [ns, name] = informer::SplitObjectKey(key);
        auto got = ApiFor(n)->Get<corev1::Pod>(ns, name);
        if (!got.ok()) {
          s = got.status();
          break;
        }
        pod = std::move(*got);
      }
      if (pod->metadata().uid() != uid) return;  // replaced meanwhile
      corev1::Pod want = *pod;
      *want.mutable_status() = BuildPodStatus(*pod, stage, rt);
      auto r = ApiFor(n)->UpdateStatus(want);
      s = r.status();
      if (s.ok()) {
        MutexLock l(&n->mu);
        auto it = n->pods.find(key);
        if (it != n->pods.end() && it->second.uid == uid) {
          PodSim& p = it->second;
          p.written_rv = (*r)->metadata().resourceversion();
          p.status_dirty = false;
          p.status_failures = 0;
          timers_.Cancel(p.status_retry);
          p.status_retry = 0;
        }
      }
      if (!informer::IsConflict(s)) break;
    }
    if (s.ok()) {
      writes_->With({"pod_status"})->Inc();
      return;
    }
    if (informer::IsNotFound(s)) return;  // gone: nothing to report
    ApiError("pod_status", n->id.name, s);
    MutexLock l(&n->mu);
    auto it = n->pods.find(key);
    if (it == n->pods.end() || it->second.uid != uid) return;
    PodSim& p = it->second;
    p.status_dirty = true;
    if (p.status_retry != 0) return;  // one retry pending is enough
    constexpr Duration kFirst = seconds(1);
    constexpr Duration kMax = seconds(30);
    const Duration wait = std::min<Duration>(
        kFirst * (int64_t{1} << std::min(p.status_failures, 5)), kMax);
    ++p.status_failures;
    p.status_retry = After(wait, n->podq, [this, n, key](TimePoint) {
      {
        MutexLock l(&n->mu);
        auto it = n->pods.find(key);
        if (it == n->pods.end()) return;
        it->second.status_retry = 0;
      }
      SyncPod(n, key);
    });
  }

  const FleetOptions options_;
  // options_.node with the serving endpoint's port and address filled in
  // by Init(), before any node registers; read-only after.
  NodeTemplate node_;
  Clock* const clock_;
  metrics::Registry* const metrics_;
  Mutex rng_mu_;
  std::mt19937_64 rng_ GUARDED_BY(rng_mu_);

  metrics::Family<metrics::Gauge>* nodes_gauge_;
  metrics::Family<metrics::Gauge>* pods_gauge_;
  metrics::Histogram* lag_;
  metrics::Family<metrics::Counter>* api_errors_;
  metrics::Family<metrics::Counter>* writes_;

  std::unique_ptr<informer::RestClient> client_;

  // The client node n writes with: its own identity, else the fleet's.
  informer::RestClient* ApiFor(const Node* n) const {
    return n->api != nullptr ? n->api.get() : client_.get();
  }
  // The client node n heartbeats (registers, renews, reports status) with.
  informer::RestClient* HeartbeatApiFor(const Node* n) const {
    return n->api != nullptr ? n->api.get() : heartbeat_client_.get();
  }
  std::unique_ptr<informer::RestClient> heartbeat_client_;
  mutable TimerQueue timers_;
  std::shared_ptr<net::WorkerPool> pool_;            // pods
  std::shared_ptr<net::WorkerPool> heartbeat_pool_;  // register, lease, status
  int registration_window_ = 1;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, Node*> by_name_;
  std::unique_ptr<informer::SharedIndexInformer> pod_informer_;
  std::unique_ptr<informer::SharedIndexInformer> node_informer_;
  std::unique_ptr<ControlServer> control_;

  std::atomic<bool> stopping_{false};

  // Writes each event with the client of the node it came from
  // (source.host), as that node's kubelet would.
  class EventRouter : public informer::EventSink {
   public:
    explicit EventRouter(Impl* fleet) : fleet_(fleet) {}
    StatusOr<corev1::Event> CreateWithDeadline(
        const corev1::Event& ev, informer::CallDeadline deadline) override {
      ASSIGN_OR_RETURN(informer::EventSink * sink, SinkFor(ev));
      return sink->CreateWithDeadline(ev, deadline);
    }
    StatusOr<corev1::Event> PatchWithDeadline(
        const corev1::Event& ev, informer::CallDeadline deadline) override {
      ASSIGN_OR_RETURN(informer::EventSink * sink, SinkFor(ev));
      return sink->PatchWithDeadline(ev, deadline);
    }

   private:
    // A stopped node's (or fleet's) event is lost, as a dead kubelet's
    // would be: FailedPrecondition, which the broadcaster does not retry
    // (Unavailable would hold its one writer, shared by every node, for
    // up to 12 tries 10 s apart).
    StatusOr<informer::EventSink*> SinkFor(const corev1::Event& ev) {
      if (fleet_->stopping_) return FailedPreconditionError("fleet stopped");
      Node* n = fleet_->Find(ev.source().host());
      if (n == nullptr || !n->event_sink) {
        return NotFoundError("no simulated node " + ev.source().host());
      }
      MutexLock l(&n->mu);
      if (n->stopped) return FailedPreconditionError("node stopped");
      return n->event_sink.get();
    }
    Impl* const fleet_;
  };
  EventRouter event_router_{this};
  // Declared after nodes_: destroyed (its writer joined) before them.
  std::unique_ptr<informer::EventBroadcaster> events_;

  Mutex register_mu_;
  Mutex gauges_mu_;  // serialises the node gauges' recounts and moves
  std::deque<Node*> register_waiting_ GUARDED_BY(register_mu_);
  mutable Mutex work_mu_;
  mutable std::condition_variable work_cv_;
  int64_t outstanding_ GUARDED_BY(work_mu_) = 0;
};

// ---------------------------------------------------------------------------
// Fleet

int AutoHeartbeatWorkers(int nodes, Duration interval) {
  const double seconds = std::chrono::duration<double>(interval).count();
  const double due_per_second = seconds > 0 ? nodes / seconds : nodes;
  const double workers = std::ceil(due_per_second * 0.25);
  return static_cast<int>(std::clamp(workers, 2.0, 256.0));
}

StatusOr<std::unique_ptr<Fleet>> Fleet::Start(FleetOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Fleet>(new Fleet(std::move(impl)));
}

Fleet::Fleet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Fleet::~Fleet() { Stop(); }

Status Fleet::StopNode(const std::string& name) {
  return impl_->StopNode(name);
}
Status Fleet::ResumeNode(const std::string& name) {
  return impl_->ResumeNode(name);
}
void Fleet::StopAll() { impl_->StopAll(); }
void Fleet::ResumeAll() { impl_->ResumeAll(); }
std::vector<NodeInfo> Fleet::List() const { return impl_->List(); }
uint16_t Fleet::port() const { return impl_->port(); }
void Fleet::WaitIdle() const { impl_->WaitIdle(); }
void Fleet::Stop() { impl_->Stop(); }

}  // namespace kplane::kubeletsim
