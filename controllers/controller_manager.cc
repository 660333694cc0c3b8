#include "controllers/controller_manager.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/prometheus_text.h"
#include "controllers/api_writer.h"
#include "controllers/clusterrole_aggregation_controller.h"
#include "controllers/cronjob_controller.h"
#include "controllers/daemonset_controller.h"
#include "controllers/deployment_controller.h"
#include "controllers/disruption_controller.h"
#include "controllers/endpoints_controller.h"
#include "controllers/endpointslice_controller.h"
#include "controllers/garbage_collector.h"
#include "controllers/gc_resource_monitor.h"
#include "controllers/job_controller.h"
#include "controllers/namespace_controller.h"
#include "controllers/node_ipam_controller.h"
#include "controllers/node_lifecycle_controller.h"
#include "controllers/pod_gc_controller.h"
#include "controllers/replicaset_controller.h"
#include "controllers/root_ca_publisher.h"
#include "controllers/scheduler.h"
#include "controllers/serviceaccounts_controller.h"
#include "controllers/statefulset_controller.h"
#include "informer/informer_factory.h"
#include "informer/leader_election.h"
#include "informer/rest_client.h"
#include "net/http_server.h"
#include "objects/serializer.h"
#include "schemas/k8s/rbac.pb.h"

namespace kplane::controllers {

namespace {

// The source.component of a controller's events, as kube names it.
std::string EventComponent(const std::string& controller) {
  if (controller == "scheduler") return "default-scheduler";
  if (controller == "nodelifecycle") return "node-controller";
  if (controller == "nodeipam") return "cidrAllocator";
  if (controller == "garbagecollector") return "garbage-collector-controller";
  return controller + "-controller";
}

std::string DefaultIdentity() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::random_device rd;
  return std::string(host) + "_" + std::to_string(getpid()) + "_" +
         std::to_string(rd() % 100000);
}

}  // namespace

// The running controllers and the informers they share: made when this
// manager starts leading, torn down when it stops.
struct Running {
  std::unique_ptr<informer::SharedInformerFactory> factory;
  std::vector<std::unique_ptr<Controller>> controllers;
  // The garbage collector's informers over every other resource
  // (destroyed before the collector it feeds).
  std::unique_ptr<GcResourceMonitor> gc_monitor;
};

class ControllerManager::Impl {
 public:
  explicit Impl(ControllerManagerOptions o)
      : options_(std::move(o)),
        clock_(options_.clock != nullptr ? options_.clock : Clock::Real()),
        metrics_(options_.metrics != nullptr ? options_.metrics
                                             : metrics::Registry::Default()) {
    if (options_.identity.empty()) options_.identity = DefaultIdentity();
  }

  Status Init() {
    if (options_.workers < 1)
      return InvalidArgumentError("workers must be >= 1");
    if (options_.node_monitor_grace_period <= Duration(0) ||
        options_.node_monitor_period <= Duration(0)) {
      return InvalidArgumentError(
          "node monitor grace period and period must be positive");
    }
    if (options_.percentage_of_nodes_to_score < 0 ||
        options_.percentage_of_nodes_to_score > 100) {
      return InvalidArgumentError(
          "--percentage-of-nodes-to-score must be in 0..100 (0: adaptive), "
          "got " +
          std::to_string(options_.percentage_of_nodes_to_score));
    }
    for (const std::string& c : options_.controllers) {
      static const std::vector<std::string> kKnown = {
          "*",           "replicaset",    "deployment",
          "scheduler",   "nodelifecycle", "garbagecollector",
          "namespace",   "podgc",         "serviceaccount",
          "statefulset", "daemonset",     "job",
          "ttlafterfinished", "cronjob",  "endpoint",
          "root-ca-cert-publisher", "clusterrole-aggregation",
          "endpointslice", "disruption", "nodeipam"};
      if (std::find(kKnown.begin(), kKnown.end(), c) == kKnown.end()) {
        return InvalidArgumentError("unknown controller \"" + c + "\"");
      }
    }
    if (options_.allocate_node_cidrs) {
      if (options_.cluster_cidr.empty()) {
        return InvalidArgumentError(
            "--cluster-cidr must be set with --allocate-node-cidrs");
      }
      RETURN_IF_ERROR(
          CidrSet::New(options_.cluster_cidr, options_.node_cidr_mask_size)
              .status()
              .Annotate("--cluster-cidr/--node-cidr-mask-size"));
    }
    if (options_.content_type != objects::kProtobufMediaType &&
        options_.content_type != objects::kJsonMediaType) {
      return InvalidArgumentError("--kube-api-content-type must be " +
                                  std::string(objects::kProtobufMediaType) +
                                  " or " +
                                  std::string(objects::kJsonMediaType) +
                                  ", not \"" + options_.content_type + "\"");
    }
    ASSIGN_OR_RETURN(client_, informer::RestClient::New(ClientOptions()));
    writer_ = std::make_unique<RestApiWriter>(client_.get());
    event_sink_ = std::make_unique<informer::RestEventSink>(client_.get());
    events_ = std::make_unique<informer::EventBroadcaster>(
        informer::EventBroadcasterOptions{
            .sink = event_sink_.get(), .clock = clock_, .metrics = metrics_});
    leader_gauge_ = metrics_
                        ->NewGauge("leader_election_master_status",
                                   "1 while this manager leads.", {"name"})
                        ->With({options_.leader_elect_name});
    if (options_.port > 0 || options_.ephemeral_port) {
      net::HttpServerOptions ho;
      ho.host = options_.bind_address;
      ho.port =
          options_.ephemeral_port ? 0 : static_cast<uint16_t>(options_.port);
      ho.worker_threads = 1;
      ho.metrics = metrics_;
      ho.name = "controller-manager";
      ho.tls = options_.serving_tls;
      http_ = std::make_unique<net::HttpServer>(ho);
      http_->Handle(
          "GET", "/healthz",
          [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
            bool ok = !Lost();
            r->Respond(ok ? 200 : 500, {{"Content-Type", "text/plain"}},
                       ok ? "ok" : "leader election lost");
          },
          {.run_on_io_thread = true});
      http_->Handle(
          "GET", "/metrics",
          [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
            r->Respond(200, {{"Content-Type", metrics::kTextFormatContentType}},
                       metrics_->Render());
          });
      RETURN_IF_ERROR(http_->Start());
    }
    if (!options_.leader_elect) {
      StartControllers();
      return Status::Ok();
    }
    // The lock has a client of its own, as kube-controller-manager's
    // "leader-election" client: its renewals never wait for a connection
    // that the controllers hold. Each call also ends by the elector's
    // renew deadline (informer/leader_election.h).
    informer::RestClientOptions lock_options = ClientOptions();
    lock_options.timeout = options_.leader_elect_renew_deadline;
    lock_options.max_connections = 1;
    lock_options.user_agent += " leader-election";
    ASSIGN_OR_RETURN(lock_client_, informer::RestClient::New(lock_options));
    lock_ = std::make_unique<informer::LeaseLock>(
        lock_client_.get(), options_.leader_elect_namespace,
        options_.leader_elect_name, options_.identity);
    informer::LeaderElectionConfig cfg;
    cfg.lock = lock_.get();
    cfg.lease_duration = options_.leader_elect_lease_duration;
    cfg.renew_deadline = options_.leader_elect_renew_deadline;
    cfg.retry_period = options_.leader_elect_retry_period;
    cfg.release_on_cancel = options_.release_lease_on_stop;
    cfg.name = "controller-manager";
    cfg.clock = clock_;
    cfg.on_started_leading = [this](const informer::Leadership&) {
      LOG(INFO) << "controller-manager " << options_.identity
                << " leads; starting controllers";
      StartControllers();
    };
    cfg.on_stopped_leading = [this] {
      LOG(INFO) << "controller-manager " << options_.identity
                << " lost leadership; stopping controllers";
      StopControllers();
      MutexLock l(&mu_);
      lost_ = true;
      cv_.notify_all();
    };
    ASSIGN_OR_RETURN(elector_, informer::LeaderElector::New(std::move(cfg)));
    elector_->Start();
    return Status::Ok();
  }

  // The API server, credentials, wire format and seams every client of
  // this manager shares.
  informer::RestClientOptions ClientOptions() const {
    return {.server = options_.server,
            .tls = options_.tls,
            .bearer_token = options_.bearer_token,
            .protobuf = options_.content_type == objects::kProtobufMediaType,
            .user_agent = "kplane-controller-manager/1",
            .clock = clock_,
            .metrics = metrics_};
  }

  void Stop() {
    if (elector_ != nullptr) elector_->Stop();
    StopControllers();
    if (http_ != nullptr) http_->Stop();
    MutexLock l(&mu_);
    stopped_ = true;
    cv_.notify_all();
  }

  bool Wanted(const std::string& name) const {
    for (const std::string& c : options_.controllers) {
      if (c == "*" || c == name) return true;
    }
    return false;
  }

  void StartControllers() {
    MutexLock l(&run_mu_);
    if (running_ != nullptr || stopping_) return;
    auto run = std::make_unique<Running>();
    run->factory = std::make_unique<informer::SharedInformerFactory>(
        client_.get(),
        informer::InformerFactoryOptions{
            .resync_period = options_.informer_resync, .clock = clock_});
    informer::SharedInformerFactory& f = *run->factory;
    informer::SharedIndexInformer* pods = f.InformerFor<corev1::Pod>();
    informer::SharedIndexInformer* nodes = f.InformerFor<corev1::Node>();
    informer::SharedIndexInformer* rss = f.InformerFor<appsv1::ReplicaSet>();
    informer::SharedIndexInformer* deps = f.InformerFor<appsv1::Deployment>();
    informer::SharedIndexInformer* leases =
        f.InformerFor(LeasesResource(), {.ns = kNodeLeaseNamespace});
    CHECK(pods->AddIndexers({{kPodNodeIndex, PodNodeIndexFunc},
                             {kOwnerUidIndex, OwnerUidIndexFunc}})
              .ok());
    CHECK(rss->AddIndexers({{kOwnerUidIndex, OwnerUidIndexFunc}}).ok());
    informer::SharedIndexInformer* jobs = f.InformerFor<batchv1::Job>();
    informer::SharedIndexInformer* cronjobs = f.InformerFor<batchv1::CronJob>();
    CHECK(jobs->AddIndexers({{kOwnerUidIndex, OwnerUidIndexFunc}}).ok());
    // Deployments and CronJobs may be owned too (by custom resources).
    CHECK(deps->AddIndexers({{kOwnerUidIndex, OwnerUidIndexFunc}}).ok());
    CHECK(cronjobs->AddIndexers({{kOwnerUidIndex, OwnerUidIndexFunc}}).ok());
    ApiWriter* api = writer_.get();
    if (Wanted("replicaset")) {
      auto c = std::make_unique<ReplicaSetController>(
          ReplicaSetControllerOptions{.api = api,
                                      .replicasets = &rss->GetIndexer(),
                                      .pods = &pods->GetIndexer(),
                                      .clock = clock_,
                                      .metrics = metrics_});
      c->RegisterHandlers(rss, pods);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("deployment")) {
      auto c = std::make_unique<DeploymentController>(
          DeploymentControllerOptions{.api = api,
                                      .deployments = &deps->GetIndexer(),
                                      .replicasets = &rss->GetIndexer(),
                                      .pods = &pods->GetIndexer(),
                                      .clock = clock_,
                                      .metrics = metrics_});
      c->RegisterHandlers(deps, rss, pods);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("job")) {
      auto c = std::make_unique<JobController>(
          JobControllerOptions{.api = api,
                               .jobs = &jobs->GetIndexer(),
                               .pods = &pods->GetIndexer(),
                               .clock = clock_,
                               .metrics = metrics_});
      c->RegisterHandlers(jobs, pods);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("ttlafterfinished")) {
      auto c = std::make_unique<TtlAfterFinishedController>(
          TtlAfterFinishedOptions{.api = api,
                                  .jobs = &jobs->GetIndexer(),
                                  .clock = clock_,
                                  .metrics = metrics_});
      c->RegisterHandlers(jobs);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("cronjob")) {
      auto c = std::make_unique<CronJobController>(
          CronJobControllerOptions{.api = api,
                                   .cronjobs = &cronjobs->GetIndexer(),
                                   .jobs = &jobs->GetIndexer(),
                                   .clock = clock_,
                                   .metrics = metrics_});
      c->RegisterHandlers(cronjobs, jobs);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("scheduler")) {
      auto c = std::make_unique<Scheduler>(
          SchedulerOptions{.api = api,
                           .pods = &pods->GetIndexer(),
                           .nodes = &nodes->GetIndexer(),
                           .percentage_of_nodes_to_score =
                               options_.percentage_of_nodes_to_score,
                           .clock = clock_,
                           .metrics = metrics_});
      c->RegisterHandlers(pods, nodes);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("nodelifecycle")) {
      auto c = std::make_unique<NodeLifecycleController>(NodeLifecycleOptions{
          .api = api,
          .nodes = &nodes->GetIndexer(),
          .leases = &leases->GetIndexer(),
          .pods = &pods->GetIndexer(),
          .grace_period = options_.node_monitor_grace_period,
          .monitor_period = options_.node_monitor_period,
          .default_toleration_seconds =
              std::chrono::duration_cast<seconds>(
                  options_.pod_eviction_timeout_default)
                  .count(),
          .eviction_qps = options_.node_eviction_rate,
          .clock = clock_,
          .metrics = metrics_});
      c->RegisterHandlers(nodes, leases, pods);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("nodeipam") && options_.allocate_node_cidrs) {
      auto c = NodeIpamController::New(NodeIpamControllerOptions{
          .api = api,
          .nodes = &nodes->GetIndexer(),
          .cluster_cidr = options_.cluster_cidr,
          .node_cidr_mask_size = options_.node_cidr_mask_size,
          .clock = clock_,
          .metrics = metrics_});
      CHECK(c.ok()) << c.status().ToString();  // validated by Init()
      (*c)->RegisterHandlers(nodes);
      run->controllers.push_back(std::move(*c));
    }
    if (Wanted("garbagecollector")) {
      auto c = std::make_unique<GarbageCollector>(
          GarbageCollectorOptions{.api = api,
                                  .pods = &pods->GetIndexer(),
                                  .replicasets = &rss->GetIndexer(),
                                  .deployments = &deps->GetIndexer(),
                                  .jobs = &jobs->GetIndexer(),
                                  .cronjobs = &cronjobs->GetIndexer(),
                                  .clock = clock_,
                                  .metrics = metrics_});
      c->RegisterHandlers(pods, rss, deps);
      c->RegisterJobHandlers(jobs, cronjobs);
      run->gc_monitor = std::make_unique<GcResourceMonitor>(
          GcResourceMonitorOptions{
              .client = client_.get(), .gc = c.get(), .clock = clock_});
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("namespace")) {
      informer::SharedIndexInformer* namespaces =
          f.InformerFor<corev1::Namespace>();
      auto c = std::make_unique<NamespaceController>(NamespaceControllerOptions{
          .api = api,
          .namespaces = &namespaces->GetIndexer(),
          .client = client_.get(),
          .retry_interval = options_.namespace_retry_interval,
          .clock = clock_,
          .metrics = metrics_});
      c->RegisterHandlers(namespaces);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("serviceaccount")) {
      informer::SharedIndexInformer* namespaces =
          f.InformerFor<corev1::Namespace>();
      informer::SharedIndexInformer* service_accounts =
          f.InformerFor<corev1::ServiceAccount>();
      auto c = std::make_unique<ServiceAccountsController>(
          ServiceAccountsControllerOptions{
              .api = api,
              .namespaces = &namespaces->GetIndexer(),
              .service_accounts_cache = &service_accounts->GetIndexer(),
              .clock = clock_,
              .metrics = metrics_});
      c->RegisterHandlers(namespaces, service_accounts);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("clusterrole-aggregation")) {
      informer::SharedIndexInformer* cluster_roles =
          f.InformerFor<::k8s::io::api::rbac::v1::ClusterRole>();
      auto c = std::make_unique<ClusterRoleAggregationController>(
          ClusterRoleAggregationControllerOptions{
              .api = api,
              .cluster_roles = &cluster_roles->GetIndexer(),
              .clock = clock_,
              .metrics = metrics_});
      c->RegisterHandlers(cluster_roles);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("statefulset")) {
      informer::SharedIndexInformer* sets =
          f.InformerFor<appsv1::StatefulSet>();
      informer::SharedIndexInformer* revisions =
          f.InformerFor<appsv1::ControllerRevision>();
      auto c = std::make_unique<StatefulSetController>(
          StatefulSetControllerOptions{.api = api,
                                       .statefulsets = &sets->GetIndexer(),
                                       .pods = &pods->GetIndexer(),
                                       .revisions = &revisions->GetIndexer(),
                                       .clock = clock_,
                                       .metrics = metrics_});
      c->RegisterHandlers(sets, pods, revisions);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("daemonset")) {
      informer::SharedIndexInformer* sets = f.InformerFor<appsv1::DaemonSet>();
      informer::SharedIndexInformer* revisions =
          f.InformerFor<appsv1::ControllerRevision>();
      auto c = std::make_unique<DaemonSetController>(
          DaemonSetControllerOptions{.api = api,
                                     .daemonsets = &sets->GetIndexer(),
                                     .pods = &pods->GetIndexer(),
                                     .nodes = &nodes->GetIndexer(),
                                     .revisions = &revisions->GetIndexer(),
                                     .clock = clock_,
                                     .metrics = metrics_});
      c->RegisterHandlers(sets, pods, nodes, revisions);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("endpoint")) {
      informer::SharedIndexInformer* services =
          f.InformerFor<corev1::Service>();
      informer::SharedIndexInformer* endpoints =
          f.InformerFor<corev1::Endpoints>();
      auto c = std::make_unique<EndpointsController>(
          EndpointsControllerOptions{.api = api,
                                     .services = &services->GetIndexer(),
                                     .pods = &pods->GetIndexer(),
                                     .endpoints = &endpoints->GetIndexer(),
                                     .clock = clock_,
                                     .metrics = metrics_});
      c->RegisterHandlers(services, pods, endpoints);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("endpointslice")) {
      informer::SharedIndexInformer* services =
          f.InformerFor<corev1::Service>();
      informer::SharedIndexInformer* slices =
          f.InformerFor<discoveryv1::EndpointSlice>();
      auto c = std::make_unique<EndpointSliceController>(
          EndpointSliceControllerOptions{.api = api,
                                         .services = &services->GetIndexer(),
                                         .pods = &pods->GetIndexer(),
                                         .slices = &slices->GetIndexer(),
                                         .clock = clock_,
                                         .metrics = metrics_});
      c->RegisterHandlers(services, pods, slices);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("disruption")) {
      informer::SharedIndexInformer* pdbs =
          f.InformerFor<policyv1::PodDisruptionBudget>();
      informer::SharedIndexInformer* sets =
          f.InformerFor<appsv1::StatefulSet>();
      auto c = std::make_unique<DisruptionController>(
          DisruptionControllerOptions{.api = api,
                                      .pdbs = &pdbs->GetIndexer(),
                                      .pods = &pods->GetIndexer(),
                                      .replicasets = &rss->GetIndexer(),
                                      .deployments = &deps->GetIndexer(),
                                      .statefulsets = &sets->GetIndexer(),
                                      .clock = clock_,
                                      .metrics = metrics_});
      c->RegisterHandlers(pdbs, pods);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("root-ca-cert-publisher") && !options_.root_ca_pem.empty()) {
      informer::SharedIndexInformer* namespaces =
          f.InformerFor<corev1::Namespace>();
      static const objects::ResourceInfo* config_maps_resource =
          informer::RestClient::ResourceFor<corev1::ConfigMap>();
      informer::SharedIndexInformer* config_maps =
          f.InformerFor(*config_maps_resource,
                        {.field_selector = std::string("metadata.name=") +
                                           kRootCAConfigMapName});
      auto c = std::make_unique<RootCAPublisher>(
          RootCAPublisherOptions{.api = api,
                                 .namespaces = &namespaces->GetIndexer(),
                                 .config_maps = &config_maps->GetIndexer(),
                                 .root_ca_pem = options_.root_ca_pem,
                                 .clock = clock_,
                                 .metrics = metrics_});
      c->RegisterHandlers(namespaces, config_maps);
      run->controllers.push_back(std::move(c));
    }
    if (Wanted("podgc")) {
      auto c = std::make_unique<PodGCController>(
          PodGCControllerOptions{.api = api,
                                 .pods = &pods->GetIndexer(),
                                 .clock = clock_,
                                 .metrics = metrics_});
      c->RegisterHandlers(pods);
      run->controllers.push_back(std::move(c));
    }
    for (auto& c : run->controllers) {
      c->set_event_recorder(events_->NewRecorder(EventComponent(c->name())));
    }
    f.Start();
    // Workers start once the caches hold the world, so no controller acts
    // on a partial view (a Sync on an empty pods cache would create pods).
    // The wait runs on a thread of its own: Stop() may come first.
    running_ = std::move(run);
    Running* r = running_.get();
    starter_ = std::thread([this, r] {
      while (!r->factory->WaitForCacheSync(seconds(1))) {
        MutexLock l(&run_mu_);
        if (stopping_ || running_.get() != r) return;
        LOG(INFO) << "controller-manager: waiting for caches to sync";
      }
      MutexLock l(&run_mu_);
      if (stopping_ || running_.get() != r) return;
      for (auto& c : r->controllers) c->Run(options_.workers);
      if (r->gc_monitor != nullptr) r->gc_monitor->Start();
      leading_ = true;
      leader_gauge_->Set(1);
      {
        MutexLock g(&mu_);
        cv_.notify_all();
      }
      LOG(INFO) << "controller-manager: " << r->controllers.size()
                << " controllers running";
    });
  }

  void StopControllers() {
    std::unique_ptr<Running> run;
    {
      MutexLock l(&run_mu_);
      stopping_ = true;
      run = std::move(running_);
      leading_ = false;
      if (leader_gauge_ != nullptr) leader_gauge_->Set(0);
    }
    if (starter_.joinable()) starter_.join();
    if (run == nullptr) return;
    // Informers first: then no handler calls into a controller.
    run->factory->Shutdown();
    if (run->gc_monitor != nullptr) run->gc_monitor->Stop();
    for (auto& c : run->controllers) c->Stop();
  }

  bool IsLeading() const { return leading_.load(); }
  bool Lost() const {
    MutexLock l(&mu_);
    return lost_;
  }
  bool WaitLost(Duration timeout) {
    MutexLock l(&mu_);
    auto done = [this]() REQUIRES(mu_) { return lost_ || stopped_; };
    if (timeout < Duration(0)) {
      cv_.wait(l.native(), done);
    } else {
      clock_->WaitFor(l.native(), cv_, timeout, done);
    }
    return lost_;
  }
  bool WaitLeading(Duration timeout) {
    MutexLock l(&mu_);
    clock_->WaitFor(l.native(), cv_, timeout, [this]() REQUIRES(mu_) {
      return IsLeading() || lost_ || stopped_;
    });
    return IsLeading();
  }
  uint16_t port() const { return http_ != nullptr ? http_->port() : 0; }
  const std::string& identity() const { return options_.identity; }

 private:
  ControllerManagerOptions options_;
  Clock* const clock_;
  metrics::Registry* const metrics_;
  std::unique_ptr<informer::RestClient> client_;
  std::unique_ptr<ApiWriter> writer_;
  // Outlive the controllers (running_), whose recorders write through them.
  std::unique_ptr<informer::RestEventSink> event_sink_;
  std::unique_ptr<informer::EventBroadcaster> events_;
  std::unique_ptr<net::HttpServer> http_;
  std::unique_ptr<informer::RestClient> lock_client_;
  std::unique_ptr<informer::LeaseLock> lock_;
  std::unique_ptr<informer::LeaderElector> elector_;
  metrics::Gauge* leader_gauge_ = nullptr;

  mutable Mutex run_mu_;
  std::unique_ptr<Running> running_ GUARDED_BY(run_mu_);
  std::thread starter_;
  // Written under run_mu_; read lock-free (WaitLeading holds mu_, and the
  // starter takes mu_ under run_mu_).
  std::atomic<bool> leading_{false};
  bool stopping_ GUARDED_BY(run_mu_) = false;

  // Lock order: run_mu_ -> mu_ (the starter notifies under both).
  mutable Mutex mu_ ACQUIRED_AFTER(run_mu_);
  std::condition_variable cv_;
  bool lost_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
};

StatusOr<std::unique_ptr<ControllerManager>> ControllerManager::Start(
    ControllerManagerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  Status s = impl->Init();
  if (!s.ok()) {
    impl->Stop();
    return s;
  }
  return std::unique_ptr<ControllerManager>(
      new ControllerManager(std::move(impl)));
}

ControllerManager::ControllerManager(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
ControllerManager::~ControllerManager() { Stop(); }
void ControllerManager::Stop() {
  if (impl_ != nullptr) impl_->Stop();
}
bool ControllerManager::IsLeading() const { return impl_->IsLeading(); }
bool ControllerManager::Lost() const { return impl_->Lost(); }
bool ControllerManager::WaitLost(Duration timeout) {
  return impl_->WaitLost(timeout);
}
bool ControllerManager::WaitLeading(Duration timeout) {
  return impl_->WaitLeading(timeout);
}
uint16_t ControllerManager::port() const { return impl_->port(); }
const std::string& ControllerManager::identity() const {
  return impl_->identity();
}

}  // namespace kplane::controllers
