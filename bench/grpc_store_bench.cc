// First: base/thread_annotations.h must come before absl's (included by
// grpcpp), which defines the same macros only if unset (grpc_front.cc).
// clang-format off
#include "bench/grpc_store_bench.h"
#include "base/thread_annotations.h"
// clang-format on

#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <unordered_map>
#include <utility>

#include "base/mutex.h"
#include "base/strings.h"
#include "schemas/grpc/rpc_services.grpc.pb.h"

namespace kplane::bench {
namespace {

namespace pb = etcdserverpb;

std::chrono::system_clock::time_point DeadlineIn(Duration d) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
}

std::string Target(const Endpoint& e) {
  return e.host + ":" + std::to_string(e.port);
}

std::string GrpcError(const grpc::Status& s) {
  return "gRPC code " + std::to_string(static_cast<int>(s.error_code())) +
         ": " + s.error_message();
}

// TLS (etcdctl's --cacert/--cert/--key) for an https:// endpoint.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
    const Endpoint& e) {
  if (!e.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = e.tls->ca_pem;
  o.pem_private_key = e.tls->key_pem;
  o.pem_cert_chain = e.tls->cert_pem;
  return grpc::SslCredentials(o);
}

// `n` channels, channel j to endpoint j % E, each its own TCP connection
// (a local subchannel pool: gRPC would otherwise share one connection
// between channels with the same target and arguments), connected before
// the run so that connecting is not measured.
StatusOr<std::vector<std::shared_ptr<grpc::Channel>>> OpenChannels(
    const std::vector<Endpoint>& endpoints, int n, Duration connect_timeout) {
  if (endpoints.empty()) return InvalidArgumentError("no endpoints");
  std::vector<std::shared_ptr<grpc::Channel>> out;
  for (int j = 0; j < n; ++j) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    // Several channels to one endpoint must not be merged.
    args.SetInt("kplane.bench.channel", j);
    const Endpoint& e = endpoints[static_cast<size_t>(j) % endpoints.size()];
    auto ch = grpc::CreateCustomChannel(Target(e), ChannelCredentials(e), args);
    if (!ch->WaitForConnected(DeadlineIn(connect_timeout))) {
      return UnavailableError("gRPC channel to " + Target(e) +
                              " did not connect");
    }
    out.push_back(std::move(ch));
  }
  return out;
}

std::string RandomValue(std::mt19937_64& rng, int size) {
  static const char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string v(static_cast<size_t>(size), 'x');
  for (char& c : v) c = kChars[rng() % (sizeof(kChars) - 1)];
  return v;
}

enum class Kind { kPut, kRange, kCas, kFill };

// One closed-loop client: at most one call in flight, its state here.
struct Client {
  pb::KV::Stub* stub = nullptr;
  std::mt19937_64 rng;
  std::string value;
  bool idle = false;
  bool took_budget = false;  // this operation holds a unit of the budget
  int64_t op_start = 0;
  // The call in flight (gRPC writes the answer and status here).
  enum class Phase { kPut, kRange, kTxn } phase = Phase::kPut;
  std::unique_ptr<grpc::ClientContext> ctx;
  grpc::Status status;
  pb::PutRequest put;
  pb::RangeRequest range;
  pb::TxnRequest txn;
  pb::PutResponse put_resp;
  pb::RangeResponse range_resp;
  pb::TxnResponse txn_resp;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::PutResponse>> put_call;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::RangeResponse>>
      range_call;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::TxnResponse>> txn_call;
  // cas: the key and the mod_revision the next txn compares with.
  std::string cas_key;
  int64_t cas_rev = 0;
  // fill: keys next, next + step, ... below fill_end.
  int64_t next = 0, step = 1, fill_end = 0;
};

struct LoopSettings {
  Kind kind = Kind::kPut;
  StoreWorkload w;
  int64_t count_from = 0, stop_at = 0;
  int64_t max_operations = 0;
  Duration request_timeout = seconds(10);
  std::atomic<int64_t>* budget = nullptr;
};

// One completion queue and the clients it drives, run by one thread.
class CqLoop {
 public:
  explicit CqLoop(const LoopSettings& s) : s_(s) {}

  void Add(std::unique_ptr<Client> c) { clients_.push_back(std::move(c)); }

  void Run() {
    for (auto& c : clients_) StartOp(c.get());
    while (in_flight_ > 0) {
      void* tag = nullptr;
      bool ok = false;
      if (!cq_.Next(&tag, &ok)) break;
      --in_flight_;
      OnAnswer(static_cast<Client*>(tag));
    }
    cq_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) {
    }
  }

  LatencyHistogram latency;
  int64_t ops = 0;
  int64_t errors = 0;
  std::vector<std::string> sample_errors;

 private:
  void StartOp(Client* c) {
    int64_t now = NowNs();
    if (now >= s_.stop_at ||
        (s_.kind == Kind::kFill && c->next >= c->fill_end)) {
      c->idle = true;
      return;
    }
    c->took_budget = false;
    if (s_.max_operations > 0 && now >= s_.count_from) {
      // Take one unit now so that the run makes exactly max_operations
      // successful operations; a failure gives it back.
      if (s_.budget->fetch_sub(1) <= 0) {
        s_.budget->fetch_add(1);
        c->idle = true;
        return;
      }
      c->took_budget = true;
    }
    c->op_start = now;
    switch (s_.kind) {
      case Kind::kPut:
        c->put.set_key(StoreKey(
            s_.w.prefix, static_cast<int64_t>(c->rng() % static_cast<uint64_t>(
                                                             s_.w.key_space))));
        c->put.set_value(c->value);
        Issue(c, Client::Phase::kPut);
        break;
      case Kind::kFill:
        c->put.set_key(StoreKey(s_.w.prefix, c->next));
        c->put.set_value(c->value);
        c->next += c->step;
        Issue(c, Client::Phase::kPut);
        break;
      case Kind::kRange:
        // Set once in RunGrpcLoad: the same request every time.
        Issue(c, Client::Phase::kRange);
        break;
      case Kind::kCas:
        c->cas_key = StoreKey(
            s_.w.prefix, static_cast<int64_t>(
                             c->rng() % static_cast<uint64_t>(s_.w.key_space)));
        c->range.Clear();
        c->range.set_key(c->cas_key);
        Issue(c, Client::Phase::kRange);
        break;
    }
  }

  void Issue(Client* c, Client::Phase phase) {
    c->phase = phase;
    c->ctx = std::make_unique<grpc::ClientContext>();
    c->ctx->set_deadline(DeadlineIn(s_.request_timeout));
    ++in_flight_;
    switch (phase) {
      case Client::Phase::kPut:
        c->put_call = c->stub->AsyncPut(c->ctx.get(), c->put, &cq_);
        c->put_call->Finish(&c->put_resp, &c->status, c);
        break;
      case Client::Phase::kRange:
        c->range_call = c->stub->AsyncRange(c->ctx.get(), c->range, &cq_);
        c->range_call->Finish(&c->range_resp, &c->status, c);
        break;
      case Client::Phase::kTxn:
        c->txn_call = c->stub->AsyncTxn(c->ctx.get(), c->txn, &cq_);
        c->txn_call->Finish(&c->txn_resp, &c->status, c);
        break;
    }
  }

  // The cas transaction: put a new value if the key's mod_revision is still
  // `cas_rev` (0: the key does not exist), else read it back.
  void IssueCasTxn(Client* c) {
    c->txn.Clear();
    pb::Compare* cmp = c->txn.add_compare();
    cmp->set_target(pb::Compare::MOD);
    cmp->set_result(pb::Compare::EQUAL);
    cmp->set_key(c->cas_key);
    cmp->set_mod_revision(c->cas_rev);
    pb::PutRequest* p = c->txn.add_success()->mutable_request_put();
    p->set_key(c->cas_key);
    p->set_value(RandomValue(c->rng, s_.w.value_size));
    c->txn.add_failure()->mutable_request_range()->set_key(c->cas_key);
    Issue(c, Client::Phase::kTxn);
  }

  void OnAnswer(Client* c) {
    int64_t now = NowNs();
    bool counted = c->op_start >= s_.count_from && now <= s_.stop_at;
    if (!c->status.ok()) {
      if (c->took_budget) s_.budget->fetch_add(1);
      if (counted || s_.kind == Kind::kFill) {
        ++errors;
        if (sample_errors.size() < 5) {
          sample_errors.push_back(GrpcError(c->status));
        }
      }
      StartOp(c);
      return;
    }
    if (s_.kind == Kind::kCas) {
      if (c->phase == Client::Phase::kRange) {
        c->cas_rev = c->range_resp.kvs_size() > 0
                         ? c->range_resp.kvs(0).mod_revision()
                         : 0;
        IssueCasTxn(c);
        return;
      }
      if (!c->txn_resp.succeeded()) {
        // Lost the race: the failure branch read the current revision.
        const auto& rr = c->txn_resp.responses_size() > 0
                             ? c->txn_resp.responses(0).response_range()
                             : pb::RangeResponse::default_instance();
        c->cas_rev = rr.kvs_size() > 0 ? rr.kvs(0).mod_revision() : 0;
        IssueCasTxn(c);
        return;
      }
    }
    if (counted) {
      latency.Record(now - c->op_start);
      ++ops;
    } else if (c->took_budget) {
      s_.budget->fetch_add(1);
    }
    StartOp(c);
  }

  const LoopSettings s_;
  grpc::CompletionQueue cq_;
  std::vector<std::unique_ptr<Client>> clients_;
  int in_flight_ = 0;
};

struct LoopRun {
  Kind kind;
  const std::vector<std::shared_ptr<grpc::Channel>>* channels;
  int clients, threads;
  LoopSettings settings;
  uint64_t seed;
  int64_t fill_count = 0;
};

// Runs the clients to the end; `cpu_from`: when the CPU window starts.
LoadResult RunLoops(const LoopRun& run, int64_t cpu_from) {
  std::vector<std::unique_ptr<pb::KV::Stub>> stubs;
  for (const auto& ch : *run.channels) stubs.push_back(pb::KV::NewStub(ch));
  int threads = std::min(run.threads, run.clients);
  std::vector<std::unique_ptr<CqLoop>> loops;
  for (int t = 0; t < threads; ++t) {
    loops.push_back(std::make_unique<CqLoop>(run.settings));
  }
  const StoreWorkload& w = run.settings.w;
  for (int i = 0; i < run.clients; ++i) {
    auto c = std::make_unique<Client>();
    c->stub = stubs[static_cast<size_t>(i) % stubs.size()].get();
    c->rng.seed(run.seed * 1000003 + static_cast<uint64_t>(i));
    c->value = RandomValue(c->rng, w.value_size);
    if (run.kind == Kind::kRange) {
      c->range.set_key(w.range_prefix ? w.prefix : StoreKey(w.prefix, 1));
      if (w.range_prefix) c->range.set_range_end(PrefixRangeEnd(w.prefix));
      c->range.set_serializable(w.serializable);
    }
    c->next = i;
    c->step = run.clients;
    c->fill_end = run.fill_count;
    loops[static_cast<size_t>(i) % loops.size()]->Add(std::move(c));
  }
  double cpu_before = 0;
  std::thread cpu_sampler([&] {
    int64_t wait = cpu_from - NowNs();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
    cpu_before = SelfCpuSeconds();
  });
  std::vector<std::thread> ts;
  for (auto& l : loops) ts.emplace_back([&l] { l->Run(); });
  for (auto& t : ts) t.join();
  cpu_sampler.join();
  LoadResult r;
  int64_t end = std::min(NowNs(), run.settings.stop_at);
  r.seconds = (end - run.settings.count_from) / 1e9;
  r.client_cpu_seconds = SelfCpuSeconds() - cpu_before;
  for (auto& l : loops) {
    r.latency.Merge(l->latency);
    r.operations += l->ops;
    r.errors += l->errors;
    for (auto& e : l->sample_errors) {
      if (r.sample_errors.size() < 5) r.sample_errors.push_back(e);
    }
  }
  return r;
}

}  // namespace

int DefaultGrpcConns(int clients) { return std::max(1, (clients + 9) / 10); }

StatusOr<LoadResult> RunGrpcLoad(const GrpcLoadOptions& o) {
  if (o.clients < 1 || o.threads < 1 || o.conns < 1) {
    return InvalidArgumentError("clients, conns and threads must be >= 1");
  }
  Kind kind;
  if (o.workload.kind == "put") {
    kind = Kind::kPut;
  } else if (o.workload.kind == "range") {
    kind = Kind::kRange;
  } else if (o.workload.kind == "cas") {
    kind = Kind::kCas;
  } else {
    return InvalidArgumentError("gRPC workload must be put, range or cas");
  }
  if (o.workload.key_space < 1) {
    return InvalidArgumentError("key space must be >= 1");
  }
  ASSIGN_OR_RETURN(auto channels,
                   OpenChannels(o.endpoints, std::min(o.conns, o.clients),
                                o.connect_timeout));
  std::atomic<int64_t> budget{o.max_operations};
  LoopRun run{kind, &channels, o.clients, o.threads, {}, o.workload.seed};
  run.settings.kind = kind;
  run.settings.w = o.workload;
  run.settings.max_operations = o.max_operations;
  run.settings.request_timeout = o.request_timeout;
  run.settings.budget = &budget;
  int64_t start = NowNs();
  run.settings.count_from = start + o.warmup.count();
  run.settings.stop_at = run.settings.count_from + o.duration.count();
  if (o.max_operations > 0) {
    run.settings.stop_at =
        start +
        (o.time_limit > Duration(0) ? o.time_limit : Duration(hours(24)))
            .count();
  }
  return RunLoops(run, run.settings.count_from);
}

Status GrpcFillStore(const std::vector<Endpoint>& endpoints,
                     const std::string& prefix, int64_t count, int value_size,
                     int clients, int conns) {
  if (clients < 1 || conns < 1) {
    return InvalidArgumentError("clients and conns must be >= 1");
  }
  ASSIGN_OR_RETURN(
      auto channels,
      OpenChannels(endpoints, std::min(conns, clients), seconds(10)));
  std::atomic<int64_t> budget{0};
  LoopRun run{Kind::kFill, &channels, clients, 2, {}, 7, count};
  run.settings.kind = Kind::kFill;
  run.settings.w.prefix = prefix;
  run.settings.w.value_size = value_size;
  run.settings.budget = &budget;
  run.settings.count_from = NowNs();
  run.settings.stop_at = run.settings.count_from + Duration(hours(1)).count();
  LoadResult r = RunLoops(run, run.settings.count_from);
  if (r.errors > 0) {
    return UnavailableError(
        "fill: " + std::to_string(r.errors) + " of " + std::to_string(count) +
        " puts failed" +
        (r.sample_errors.empty() ? "" : ", e.g. " + r.sample_errors[0]));
  }
  return Status::Ok();
}

StatusOr<WatchBenchResult> RunGrpcWatchBench(const WatchBenchOptions& o,
                                             int conns) {
  if (o.endpoints.empty()) return InvalidArgumentError("no endpoints");
  if (o.watchers < 1 || o.streams < 1 || o.streams > o.watchers) {
    return InvalidArgumentError("need 1 <= streams <= watchers");
  }
  if (o.writers < 1 || o.writers > o.puts) {
    return InvalidArgumentError("need 1 <= writers <= puts");
  }
  if (conns < 1) return InvalidArgumentError("conns must be >= 1");
  struct rlimit fds;
  if (getrlimit(RLIMIT_NOFILE, &fds) == 0 &&
      fds.rlim_cur < static_cast<rlim_t>(conns) + 64) {
    fds.rlim_cur = fds.rlim_max;
    setrlimit(RLIMIT_NOFILE, &fds);
  }
  WatchBenchResult res;
  res.expected_events = static_cast<int64_t>(o.watchers) * o.puts;
  double cpu0 = SelfCpuSeconds();
  auto server_rss = [&o] {
    int64_t sum = 0;
    for (int pid : o.server_pids) sum += ProcessRssBytes(pid).value_or(0);
    return sum;
  };
  const int64_t rss_before = server_rss();
  ASSIGN_OR_RETURN(
      auto channels,
      OpenChannels(o.endpoints, std::min(conns, o.streams), seconds(10)));

  // One reader thread per stream; each keeps its own arrivals, merged once
  // the streams are closed.
  struct Stream {
    std::unique_ptr<pb::Watch::Stub> stub;
    grpc::ClientContext ctx;
    std::unique_ptr<
        grpc::ClientReaderWriter<pb::WatchRequest, pb::WatchResponse>>
        rw;
    std::vector<std::pair<int64_t, int64_t>> arrivals;  // (revision, ns)
    std::string error;          // why the stream ended early, if it did
    int canceled = 0;           // watchers the server canceled
    std::string cancel_reason;  // the first one's
  };
  std::vector<std::unique_ptr<Stream>> streams;
  std::atomic<int> total_created{0};
  std::atomic<int64_t> delivered{0};
  std::atomic<int64_t> last_event{0};
  std::atomic<bool> closing{false};
  std::atomic<int> broken{0};  // streams that ended before close_streams()
  std::vector<std::thread> readers;
  auto close_streams = [&] {
    closing = true;
    for (auto& st : streams) st->ctx.TryCancel();
    for (auto& t : readers) t.join();
    readers.clear();
  };
  for (int s = 0; s < o.streams; ++s) {
    auto st = std::make_unique<Stream>();
    st->stub =
        pb::Watch::NewStub(channels[static_cast<size_t>(s) % channels.size()]);
    st->rw = st->stub->Watch(&st->ctx);
    int n = o.watchers / o.streams + (s < o.watchers % o.streams ? 1 : 0);
    pb::WatchRequest req;
    req.mutable_create_request()->set_key(o.prefix);
    req.mutable_create_request()->set_range_end(PrefixRangeEnd(o.prefix));
    for (int w = 0; w < n; ++w) {
      if (!st->rw->Write(req)) {
        streams.push_back(std::move(st));
        close_streams();
        return UnavailableError("watch stream " + std::to_string(s) +
                                " closed while creating watchers");
      }
    }
    Stream* raw = st.get();
    streams.push_back(std::move(st));
    readers.emplace_back(
        [raw, &total_created, &delivered, &last_event, &closing, &broken] {
          pb::WatchResponse resp;
          while (raw->rw->Read(&resp)) {
            // A refused create is answered created and canceled at once
            // (as etcd does): no watcher.
            if (resp.canceled()) {
              if (raw->canceled++ == 0) {
                raw->cancel_reason = resp.cancel_reason();
              }
              ++broken;
            } else if (resp.created()) {
              ++total_created;
            }
            if (resp.events_size() == 0) continue;
            int64_t now = NowNs();
            for (const auto& ev : resp.events()) {
              raw->arrivals.emplace_back(ev.kv().mod_revision(), now);
            }
            delivered += resp.events_size();
            last_event = now;
          }
          grpc::Status st = raw->rw->Finish();
          if (!closing.load()) {
            raw->error = GrpcError(st);
            ++broken;
          }
        });
  }

  // Every watcher created before writing (as RunWatchBench).
  int64_t deadline = NowNs() + o.create_timeout.count();
  auto stream_failed = [&]() -> std::string {
    for (const auto& st : streams) {
      if (!st->error.empty()) return st->error;
      if (st->canceled > 0) {
        return "a watcher was canceled: " + st->cancel_reason;
      }
    }
    return "";
  };
  while (total_created < o.watchers && broken.load() == 0 &&
         NowNs() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  if (total_created < o.watchers || broken.load() > 0) {
    int created = total_created.load();
    close_streams();
    std::string why = stream_failed();
    return UnavailableError("only " + std::to_string(created) + " of " +
                            std::to_string(o.watchers) + " watchers created" +
                            (why.empty() ? "" : " (" + why + ")"));
  }
  res.server_rss_growth_bytes = server_rss() - rss_before;

  // The writers: writer k makes puts k, k+K, ...; put i is due at
  // first_put + i / rate. Their own channel to endpoints[0].
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> by_rev;
  int64_t first_put = 0, writer_end = 0;
  {
    ASSIGN_OR_RETURN(auto wch, OpenChannels({o.endpoints[0]}, 1, seconds(10)));
    auto kv = pb::KV::NewStub(wch[0]);
    const std::string value(static_cast<size_t>(o.value_size), 'v');
    Mutex mu;
    std::string failure;
    int put_errors = 0;
    first_put = NowNs();
    auto write = [&](int k) {
      std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> mine;
      LatencyHistogram lat;
      int errors = 0;
      std::string last_error;
      for (int i = k; i < o.puts; i += o.writers) {
        if (o.puts_per_second > 0) {
          int64_t due =
              first_put + static_cast<int64_t>(i * 1e9 / o.puts_per_second);
          int64_t wait = due - NowNs();
          if (wait > 0) {
            std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
          }
        }
        pb::PutRequest req;
        req.set_key(o.prefix + "k" + std::to_string(i % 100));
        req.set_value(value);
        pb::PutResponse resp;
        grpc::ClientContext ctx;
        ctx.set_deadline(DeadlineIn(seconds(10)));
        int64_t sent = NowNs();
        grpc::Status st = kv->Put(&ctx, req, &resp);
        int64_t acked = NowNs();
        if (!st.ok()) {
          ++errors;
          last_error = GrpcError(st);
          continue;
        }
        lat.Record(acked - sent);
        mine.push_back({resp.header().revision(), {sent, acked}});
      }
      MutexLock l(&mu);
      for (const auto& [rev, t] : mine) by_rev[rev] = t;
      res.put_latency.Merge(lat);
      put_errors += errors;
      if (!last_error.empty()) failure = last_error;
    };
    std::vector<std::thread> writers;
    for (int k = 1; k < o.writers; ++k) writers.emplace_back(write, k);
    write(0);
    for (auto& t : writers) t.join();
    writer_end = NowNs();
    MutexLock l(&mu);
    res.put_errors = put_errors;
    res.last_put_error = failure;
  }
  if (res.put_errors == o.puts) {
    close_streams();
    return UnavailableError("every put failed: " + res.last_put_error);
  }
  // Drain as RunWatchBench does: every event of the acknowledged puts, or
  // the timeout; with failed puts (which may have committed) until 2 s
  // pass quietly.
  res.expected_events =
      static_cast<int64_t>(o.watchers) * (o.puts - res.put_errors);
  int64_t drain_until = NowNs() + o.drain_timeout.count();
  while (delivered.load() < res.expected_events && NowNs() < drain_until) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  while (res.put_errors > 0 &&
         delivered.load() < static_cast<int64_t>(o.watchers) * o.puts &&
         NowNs() < drain_until && NowNs() - last_event.load() < 2'000'000'000) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  close_streams();
  std::vector<std::pair<int64_t, int64_t>> arrivals;
  for (const auto& st : streams) {
    arrivals.insert(arrivals.end(), st->arrivals.begin(), st->arrivals.end());
  }
  RecordDeliveries(arrivals, by_rev, &res);
  res.writer_seconds = (writer_end - first_put) / 1e9;
  int64_t last = last_event.load();
  double span = ((last ? last : writer_end) - first_put) / 1e9;
  res.events_per_second = span > 0 ? res.delivered_events / span : 0;
  res.client_cpu_seconds = SelfCpuSeconds() - cpu0;
  return res;
}

}  // namespace kplane::bench
