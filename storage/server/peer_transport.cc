#include "storage/server/peer_transport.h"

#include <pthread.h>

#include <algorithm>
#include <set>

#include "base/crc32c.h"
#include "base/logging.h"
#include "base/strings.h"
#include "net/http_client.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/raft/util.h"
#include "storage/server/cluster.h"
#include "storage/server/entry_check.h"

namespace kplane::storage {

namespace {

// An etcd error as the peer port answers it (PostToPeer and PeerHashKV
// turn it back into the Status).
void RespondEtcdError(net::Responder* r, const Status& st) {
  etcdjson::HttpError e = etcdjson::StatusToError(st);
  r->Respond(e.http_status, {{"Content-Type", "application/json"}}, e.Body());
}

// The TLS context to dial `url` with: only https:// and unixs:// (TLS over
// a unix socket) URLs speak TLS.
std::shared_ptr<const net::TlsContext> TlsFor(
    const std::string& url, const std::shared_ptr<const net::TlsContext>& tls) {
  return url.starts_with("https://") || url.starts_with("unixs://") ? tls
                                                                    : nullptr;
}

constexpr uint32_t kMaxFrameBytes = kMaxPeerFrameBytes;

void AppendLength(uint32_t n, std::string* out) {
  char len[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                 static_cast<char>(n >> 8), static_cast<char>(n)};
  out->append(len, 4);
}

void AppendFrame(const std::string& payload, std::string* out) {
  AppendLength(static_cast<uint32_t>(payload.size()), out);
  out->append(payload);
}

// Same frame, serialized in place (no intermediate string per message).
// `size_known`: m.ByteSizeLong() was just called (its size is cached).
void AppendMessageFrame(const raftpb::Message& m, std::string* out,
                        bool size_known = false) {
  const size_t n =
      size_known ? static_cast<size_t>(m.GetCachedSize()) : m.ByteSizeLong();
  AppendLength(static_cast<uint32_t>(n), out);
  const size_t off = out->size();
  out->resize(off + n);
  m.SerializeWithCachedSizesToArray(
      reinterpret_cast<uint8_t*>(out->data() + off));
}

// Pulls one frame off the front of `buf` (starting at *pos).
// Returns false when more bytes are needed; sets *bad on a corrupt length.
bool NextFrame(const std::string& buf, size_t* pos, std::string_view* frame,
               bool* bad) {
  if (buf.size() - *pos < 4) return false;
  const unsigned char* p =
      reinterpret_cast<const unsigned char*>(buf.data() + *pos);
  uint32_t n = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
               (uint32_t{p[2]} << 8) | uint32_t{p[3]};
  if (n > kMaxFrameBytes) {
    *bad = true;
    return false;
  }
  if (buf.size() - *pos - 4 < n) return false;
  *frame = std::string_view(buf.data() + *pos + 4, n);
  *pos += 4 + n;
  return true;
}

// The regular files under `dir`, recursively, as paths relative to it
// (a name that does not list as a directory is a file).
Status ListFiles(FileSystem* fs, const std::string& dir,
                 const std::string& prefix, std::vector<std::string>* out) {
  ASSIGN_OR_RETURN(std::vector<std::string> names,
                   fs->ListDir(prefix.empty() ? dir : dir + "/" + prefix));
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string rel = prefix.empty() ? n : prefix + "/" + n;
    if (fs->ListDir(dir + "/" + rel).ok()) {
      RETURN_IF_ERROR(ListFiles(fs, dir, rel, out));
    } else {
      out->push_back(rel);
    }
  }
  return Status::Ok();
}

std::string HexId(uint64_t id) { return IdToHex(id); }

}  // namespace

// ---------------------------------------------------------------------------
// One peer: a queue and the thread that streams it.

class HttpPeerTransport::Peer {
 public:
  Peer(HttpPeerTransport* t, uint64_t id, std::vector<std::string> urls)
      : t_(t), id_(id), urls_(std::move(urls)) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Peer() { Stop(); }

  // New URLs (MemberUpdate): the sender leaves a stream to an old one
  // before its next batch, as the member may no longer be there.
  void SetUrls(std::vector<std::string> urls) {
    MutexLock l(&mu_);
    if (urls == urls_) return;
    urls_ = std::move(urls);
    urls_changed_ = true;
  }
  std::vector<std::string> urls() {
    MutexLock l(&mu_);
    return urls_;
  }

  // Sends the messages of one Ready for this peer: written at once from
  // the caller's thread when the sender is idle and the socket takes them
  // (no hand-off), else queued under one lock for the sender, which is
  // woken at most once. Returns how many were dropped (queue full,
  // stopped, or backing off after a failed write).
  size_t EnqueueMany(std::vector<raftpb::Message>& msgs) {
    size_t queued = 0;
    bool wake = false;
    {
      MutexLock l(&mu_);
      if (stop_ || TimePointNow() < backoff_until_) return msgs.size();
      const net::HttpStream::TrySendResult direct = TrySendDirect(msgs);
      if (direct == net::HttpStream::TrySendResult::kSent) return 0;
      if (direct == net::HttpStream::TrySendResult::kPartial) {
        // The stream holds the rest of the chunk: the sender pushes it out
        // (before anything queued after it).
        flush_ = true;
        unsent_messages_ = msgs.size();
        wake = sender_waiting_ && !wake_sent_;
        if (wake) wake_sent_ = true;
        msgs.clear();  // all of them are in the chunk
      }
      for (raftpb::Message& m : msgs) {
        if (queue_.size() >= t_->options_.max_queued_messages) break;
        queue_.push_back(std::move(m));
        ++queued;
      }
      if (queued > 0 && sender_waiting_ && !wake_sent_) {
        wake = wake_sent_ = true;
      }
    }
    if (wake) cv_.notify_one();
    return msgs.size() - queued;
  }

  void Stop() {
    {
      MutexLock l(&mu_);
      stop_ = true;
      if (stream_) stream_->Cancel();
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  TimePoint TimePointNow() const { return t_->options_.clock->Now(); }

  void Run() {
    pthread_setname_np(pthread_self(), "peer-tx");
    std::unique_ptr<net::HttpClient> client;
    std::unique_ptr<net::HttpStream> stream;
    size_t next_url = 0;
    while (true) {
      std::deque<raftpb::Message> batch;
      bool reconnect = false;
      // Messages of a direct send's chunk still partly in `stream`.
      size_t unsent = 0;
      {
        MutexLock l(&mu_);
        sender_waiting_ = true;
        wake_sent_ = false;
        cv_.wait(l.native(), [&]() REQUIRES(mu_) {
          return stop_ || !queue_.empty() || flush_;
        });
        sender_waiting_ = false;
        if (flush_) unsent = unsent_messages_;
        flush_ = false;  // this turn's Send pushes out the rest first
        unsent_messages_ = 0;
        if (stop_) {
          // `stream` dies with this frame: a later Stop() (the destructor
          // calls it again) must not cancel it through a dangling pointer.
          stream_ = nullptr;
          return;
        }
        batch.swap(queue_);
        reconnect = urls_changed_;
        urls_changed_ = false;
        if (reconnect) stream_ = nullptr;
      }
      if (reconnect) {
        stream.reset();
        client.reset();
        next_url = 0;
        if (unsent > 0) {
          // The end of a direct send's chunk went with the old stream.
          t_->dropped_->Inc(static_cast<double>(unsent));
          t_->handler_->ReportUnreachable(id_);
          unsent = 0;
        }
      }
      // A wake-up only to finish a chunk that went with the old stream:
      // nothing to send, so nothing to dial for.
      if (batch.empty() && !stream) continue;
      std::string buf;
      for (const auto& m : batch) AppendMessageFrame(m, &buf);
      if (!stream) {
        std::vector<std::string> urls = this->urls();
        if (urls.empty()) {
          t_->dropped_->Inc(static_cast<double>(batch.size()));
          continue;
        }
        const std::string& url = urls[next_url++ % urls.size()];
        net::HttpClientOptions copts;
        copts.connect_timeout = t_->options_.dial_timeout;
        copts.write_timeout = t_->options_.write_timeout;
        copts.clock = t_->options_.clock;
        copts.tls = TlsFor(url, t_->options_.client_tls);
        auto c = net::HttpClient::ForUrl(url, copts);
        net::HttpHeaders headers = t_->PeerHeaders("application/octet-stream");
        headers.Add("X-Kplane-To", HexId(id_));
        StatusOr<std::unique_ptr<net::HttpStream>> s =
            c.ok() ? (*c)->OpenStream("POST", "/raft/stream", headers)
                   : StatusOr<std::unique_ptr<net::HttpStream>>(c.status());
        if (!s.ok()) {
          Fail(batch.size(), s.status());
          continue;
        }
        client = std::move(*c);
        stream = std::move(*s);
        MutexLock l(&mu_);
        stream_ = stream.get();
      }
      Status s = stream->Send(buf);
      if (!s.ok()) {
        {
          MutexLock l(&mu_);
          stream_ = nullptr;
        }
        stream.reset();
        client.reset();
        Fail(batch.size() + unsent, s);
        continue;
      }
      t_->sent_bytes_->Inc(static_cast<double>(buf.size()));
    }
  }

  // The direct path of EnqueueMany: the Ready's messages written as one
  // chunk from the caller's thread (the raft loop), without waiting. Only
  // when that keeps the order and costs the caller little: the sender is
  // asleep with nothing queued and no unfinished chunk, a stream (plaintext
  // or TLS) is open to the current URLs (the sender owns it and cannot drop
  // it while we hold mu_: it clears stream_ under mu_ first; new URLs wait
  // for the sender, which moves the stream), and the messages are small (a
  // catching-up follower's megabytes of entries go through the sender).
  net::HttpStream::TrySendResult TrySendDirect(
      const std::vector<raftpb::Message>& msgs) REQUIRES(mu_) {
    constexpr size_t kMaxDirectBytes = 64 << 10;
    if (!sender_waiting_ || wake_sent_ || flush_ || !queue_.empty() ||
        urls_changed_ || stream_ == nullptr || msgs.empty()) {
      return net::HttpStream::TrySendResult::kNotSent;
    }
    size_t bytes = 0;
    for (const raftpb::Message& m : msgs) {
      bytes += 4 + m.ByteSizeLong();
      if (bytes > kMaxDirectBytes) {
        return net::HttpStream::TrySendResult::kNotSent;
      }
    }
    std::string buf;
    buf.reserve(bytes);
    // ByteSizeLong above cached the sizes this serialization uses.
    for (const raftpb::Message& m : msgs) {
      AppendMessageFrame(m, &buf, /*size_known=*/true);
    }
    net::HttpStream::TrySendResult r = stream_->TrySend(buf);
    if (r != net::HttpStream::TrySendResult::kNotSent) {
      t_->sent_bytes_->Inc(static_cast<double>(buf.size()));
      t_->sent_direct_->Inc(static_cast<double>(msgs.size()));
    }
    if (r == net::HttpStream::TrySendResult::kPartial) {
      t_->sent_direct_partial_->Inc();
    }
    return r;
  }

  // The batch is lost: tell raft the peer is unreachable (it will probe)
  // and stop queueing for a moment rather than piling up stale messages.
  void Fail(size_t dropped, const Status& why) {
    t_->dropped_->Inc(static_cast<double>(dropped));
    bool warn = false;
    {
      MutexLock l(&mu_);
      const TimePoint now = TimePointNow();
      backoff_until_ = now + milliseconds(100);
      // What was queued while the failed write waited goes too.
      t_->dropped_->Inc(static_cast<double>(queue_.size()));
      queue_.clear();
      // A refused certificate is a configuration error an operator must
      // see (etcd logs its dial errors too); once per 10 s per peer.
      if (why.message().find("TLS ") != std::string::npos &&
          (!tls_warned_ || now - last_tls_warning_ >= seconds(10))) {
        warn = true;
        tls_warned_ = true;
        last_tls_warning_ = now;
      }
    }
    if (warn) {
      LOG(WARNING) << "peer " << HexId(id_) << ": " << why;
    } else {
      LOG(DEBUG) << "peer " << HexId(id_) << ": " << why;
    }
    t_->handler_->ReportUnreachable(id_);
  }

  HttpPeerTransport* t_;
  const uint64_t id_;
  // Taken after HttpPeerTransport::mu_ (AddPeer updates the URLs under it).
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> urls_ GUARDED_BY(mu_);
  // SetUrls changed urls_ since the sender last looked.
  bool urls_changed_ GUARDED_BY(mu_) = false;
  std::deque<raftpb::Message> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  // Run() sleeps on cv_.
  bool sender_waiting_ GUARDED_BY(mu_) = false;
  // A direct send left part of its chunk in the stream: the sender must
  // call Send to push it out. unsent_messages_: how many messages that
  // chunk holds (dropped if the stream goes first).
  bool flush_ GUARDED_BY(mu_) = false;
  size_t unsent_messages_ GUARDED_BY(mu_) = 0;
  // The sender was notified since it went to sleep.
  bool wake_sent_ GUARDED_BY(mu_) = false;
  TimePoint backoff_until_ GUARDED_BY(mu_);
  bool tls_warned_ GUARDED_BY(mu_) = false;
  TimePoint last_tls_warning_ GUARDED_BY(mu_);
  // The open stream, for Cancel from Stop().
  net::HttpStream* stream_ GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

// ---------------------------------------------------------------------------

HttpPeerTransport::HttpPeerTransport(PeerHandler* handler,
                                     PeerTransportOptions options)
    : handler_(handler),
      options_(std::move(options)),
      fs_(options_.file_system ? options_.file_system : FileSystem::Default()) {
  auto* reg = options_.metrics;
  sent_bytes_ = reg->NewCounter("etcd_network_peer_sent_bytes_total",
                                "Bytes of raft messages sent to peers.")
                    ->With({});
  received_bytes_ =
      reg->NewCounter("etcd_network_peer_received_bytes_total",
                      "Bytes of raft messages received from peers.")
          ->With({});
  sent_direct_ =
      reg->NewCounter("kplane_network_peer_sent_direct_messages_total",
                      "Raft messages written to a peer's stream by the "
                      "thread that sent them (the raft loop), without a "
                      "hand-off to the peer's sender thread.")
          ->With({});
  sent_direct_partial_ =
      reg->NewCounter("kplane_network_peer_sent_direct_partial_total",
                      "Direct sends (see kplane_network_peer_sent_direct_"
                      "messages_total) the connection took only part of "
                      "(over TLS: perhaps none, the record begun); the "
                      "peer's sender thread wrote the rest (or dropped it "
                      "with the stream, counted as dropped).")
          ->With({});
  dropped_ = reg->NewCounter("etcd_network_peer_dropped_messages_total",
                             "Raft messages dropped (peer down or slow).")
                 ->With({});
  // etcd's names (etcd labels them by peer).
  snapshots_sent_ =
      reg->NewCounter("etcd_network_snapshot_send_success",
                      "Snapshots sent to peers and accepted by them.")
          ->With({});
  snapshots_received_ =
      reg->NewCounter("etcd_network_snapshot_receive_success",
                      "Snapshots received from the leader and handed to raft.")
          ->With({});
  refused_ = reg->NewCounter(
      "kplane_network_peer_refused_total",
      "Peer requests and stream messages refused, by reason: "
      "cluster_mismatch, removed_member, not_member (requests); "
      "sender_mismatch (a message whose from is not the stream's sender); "
      "invalid_snapshot (a snapshot message CheckPeerSnapshot refuses); "
      "corrupt_frame (a stream dropped for a frame longer than "
      "kMaxPeerFrameBytes or not a message).",
      {"reason"});
}

HttpPeerTransport::~HttpPeerTransport() { Stop(); }

void HttpPeerTransport::Stop() {
  if (stopped_.exchange(true)) return;
  std::map<uint64_t, std::shared_ptr<Peer>> peers;
  std::vector<SnapshotSend> snaps;
  {
    MutexLock l(&mu_);
    peers.swap(peers_);
    snaps.swap(snapshot_threads_);
  }
  for (auto& [id, p] : peers) p->Stop();
  for (auto& send : snaps) send.thread.join();
}

std::shared_ptr<HttpPeerTransport::Peer> HttpPeerTransport::FindPeer(
    uint64_t id) {
  MutexLock l(&mu_);
  auto it = peers_.find(id);
  return it == peers_.end() ? nullptr : it->second;
}

void HttpPeerTransport::AddPeer(uint64_t id,
                                const std::vector<std::string>& urls) {
  if (stopped_.load()) return;
  MutexLock l(&mu_);
  auto it = peers_.find(id);
  if (it != peers_.end()) {
    it->second->SetUrls(urls);
    return;
  }
  peers_[id] = std::make_shared<Peer>(this, id, urls);
}

void HttpPeerTransport::RemovePeer(uint64_t id) {
  std::shared_ptr<Peer> p;
  {
    MutexLock l(&mu_);
    auto it = peers_.find(id);
    if (it == peers_.end()) return;
    p = it->second;
    peers_.erase(it);
  }
  p->Stop();
}

void HttpPeerTransport::Send(std::vector<raftpb::Message> msgs) {
  // Group by peer (a Ready holds a few messages for each), so each peer's
  // queue is locked and its sender woken once per Ready, not per message.
  std::vector<std::pair<uint64_t, std::vector<raftpb::Message>>> by_peer;
  for (raftpb::Message& m : msgs) {
    if (m.type() == raftpb::MsgSnap) {
      SendSnapshot(std::move(m));
      continue;
    }
    auto it = std::find_if(by_peer.begin(), by_peer.end(),
                           [&](const auto& g) { return g.first == m.to(); });
    if (it == by_peer.end()) {
      by_peer.emplace_back(m.to(), std::vector<raftpb::Message>());
      it = by_peer.end() - 1;
    }
    it->second.push_back(std::move(m));
  }
  for (auto& [id, group] : by_peer) {
    std::shared_ptr<Peer> p = FindPeer(id);
    size_t dropped = p ? p->EnqueueMany(group) : group.size();
    if (dropped > 0) dropped_->Inc(static_cast<double>(dropped));
  }
}

void HttpPeerTransport::SendSnapshot(raftpb::Message msg) {
  MutexLock l(&mu_);
  if (stopped_.load()) return;
  // Joins the sends that ended: a peer that keeps refusing gets a new
  // snapshot after each failure, and every thread kept its stack until
  // Stop() (one a heartbeat, without end).
  std::erase_if(snapshot_threads_, [](SnapshotSend& send) {
    if (!send.done->load()) return false;
    send.thread.join();
    return true;
  });
  auto done = std::make_shared<std::atomic<bool>>(false);
  snapshot_threads_.push_back({.done = done});
  snapshot_threads_.back().thread = std::thread([this, done,
                                                 msg =
                                                     std::move(msg)]() mutable {
    uint64_t to = msg.to();
    static std::atomic<uint64_t> seq{0};
    std::string dir = handler_->SnapshotStagingDir() + "/outgoing-" +
                      HexId(to) + "-" + std::to_string(++seq);
    auto report = [&](bool ok) {
      handler_->ReportSnapshot(to, ok ? raft::SnapshotStatus::kFinish
                                      : raft::SnapshotStatus::kFailure);
    };
    std::shared_ptr<Peer> peer = FindPeer(to);
    std::vector<std::string> urls =
        peer ? peer->urls() : std::vector<std::string>{};
    Status s = urls.empty() ? UnavailableError("unknown peer") : Status();
    if (s.ok()) {
      // Describe what we actually send: the state as of the checkpoint.
      auto meta = handler_->SnapshotTo(dir);
      if (meta.ok()) {
        *msg.mutable_snapshot()->mutable_metadata() = *meta;
      } else {
        s = meta.status();
      }
    }
    if (s.ok()) {
      LOG(INFO) << "sending snapshot at index "
                << msg.snapshot().metadata().index() << " to " << HexId(to);
      net::HttpClientOptions copts;
      copts.connect_timeout = options_.dial_timeout;
      copts.read_timeout = minutes(10);
      copts.write_timeout = minutes(1);
      copts.tls = TlsFor(urls.front(), options_.client_tls);
      auto c = net::HttpClient::ForUrl(urls.front(), copts);
      if (!c.ok()) s = c.status();
      std::unique_ptr<net::HttpStream> stream;
      if (s.ok()) {
        auto st = (*c)->OpenStream("POST", "/raft/snapshot",
                                   PeerHeaders("application/octet-stream"));
        if (st.ok()) {
          stream = std::move(*st);
        } else {
          s = st.status();
        }
      }
      std::string frame;
      if (s.ok()) {
        AppendFrame(msg.SerializeAsString(), &frame);
        s = stream->Send(frame);
      }
      std::vector<std::string> files;
      if (s.ok()) s = ListFiles(fs_, dir, "", &files);
      for (size_t i = 0; s.ok() && i < files.size(); ++i) {
        StatusOr<std::string> read = ReadFile(fs_, dir + "/" + files[i]);
        if (!read.ok()) {
          s = read.status();
          break;
        }
        const std::string& data = *read;
        storagepb::SnapshotFile h;
        h.set_name(files[i]);
        h.set_size(data.size());
        h.set_crc32c(crc32c::Value(data));
        frame.clear();
        AppendFrame(h.SerializeAsString(), &frame);
        s = stream->Send(frame);
        for (size_t off = 0; s.ok() && off < data.size(); off += 1 << 20) {
          s = stream->Send(std::string_view(data).substr(off, 1 << 20));
        }
      }
      if (s.ok()) {
        storagepb::SnapshotFile last;
        last.set_last(true);
        frame.clear();
        AppendFrame(last.SerializeAsString(), &frame);
        s = stream->Send(frame);
      }
      if (s.ok()) s = stream->CloseSend();
      if (s.ok()) {
        auto head = stream->ReadHead(minutes(10));
        if (!head.ok()) {
          s = head.status();
        } else if (head->status != 204) {
          s = UnavailableError("peer answered " + std::to_string(head->status));
        }
      }
    }
    if (Status rm = RemoveAll(fs_, dir); !rm.ok()) {
      LOG(WARNING) << "removing the sent snapshot's copy: " << rm;
    }
    if (!s.ok()) {
      LOG(WARNING) << "snapshot to " << HexId(to) << " failed: " << s;
    } else {
      snapshots_sent_->Inc();
    }
    report(s.ok());
    done->store(true);
  });
}

size_t HttpPeerTransport::SnapshotThreads() {
  MutexLock l(&mu_);
  return snapshot_threads_.size();
}

net::HttpHeaders HttpPeerTransport::PeerHeaders(
    std::string content_type) const {
  net::HttpHeaders h;
  if (!content_type.empty()) h.Add("Content-Type", std::move(content_type));
  h.Add("X-Kplane-Cluster-Id", HexId(handler_->cluster_id()));
  h.Add("X-Kplane-From", HexId(handler_->member_id()));
  return h;
}

uint64_t HttpPeerTransport::CheckPeerHeaders(const net::HttpRequest& req,
                                             net::Responder* r) {
  // A refusal closes the connection: a stream's body has no deadline, and
  // a refused sender must not keep its connection by never ending it.
  const net::HttpHeaders refused = {{"Content-Type", "text/plain"},
                                    {"Connection", "close"}};
  auto cluster = ParseHexId(req.headers.Get("X-Kplane-Cluster-Id"));
  auto from = ParseHexId(req.headers.Get("X-Kplane-From"));
  if (!cluster.ok() || !from.ok() || *cluster != handler_->cluster_id()) {
    refused_->With({"cluster_mismatch"})->Inc();
    r->Respond(412, refused, "cluster id mismatch\n");
    return 0;
  }
  if (handler_->IsRemovedMember(*from)) {
    refused_->With({"removed_member"})->Inc();
    r->Respond(412, refused,
               "the member has been permanently removed from the cluster\n");
    return 0;
  }
  if (*from == 0 || *from == handler_->member_id() ||
      !handler_->IsMember(*from)) {
    refused_->With({"not_member"})->Inc();
    LOG(WARNING) << "refusing a peer request from " << HexId(*from)
                 << ": not a member of this cluster";
    r->Respond(404, refused, "error sender not found\n");
    return 0;
  }
  return *from;
}

void HttpPeerTransport::HandleStream(const net::HttpRequest& req,
                                     std::shared_ptr<net::Responder> r) {
  const uint64_t sender = CheckPeerHeaders(req, r.get());
  if (sender == 0) return;
  struct State {
    std::string buf;
    size_t pos = 0;
  };
  auto st = std::make_shared<State>();
  r->OnBodyData([this, st, r, sender](std::string_view data, bool eof) {
    received_bytes_->Inc(static_cast<double>(data.size()));
    st->buf.append(data);
    std::string_view frame;
    bool bad = false;
    std::vector<raftpb::Message> msgs;
    while (NextFrame(st->buf, &st->pos, &frame, &bad)) {
      raftpb::Message& m = msgs.emplace_back();
      if (!m.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
        msgs.pop_back();
        bad = true;
        break;
      }
      if (m.from() != sender) {
        // A member speaks for itself only.
        refused_->With({"sender_mismatch"})->Inc();
        msgs.pop_back();
      }
    }
    // Everything this read brought, to the node loop with one wake-up.
    handler_->Process(std::move(msgs));
    if (bad) {
      refused_->With({"corrupt_frame"})->Inc();
      LOG(WARNING) << "dropping a peer stream with a corrupt frame";
      r->Close();
      return;
    }
    // Keep the unread tail only.
    if (st->pos > 0) {
      st->buf.erase(0, st->pos);
      st->pos = 0;
    }
    if (eof) r->Respond(204, {}, "");
  });
}

void HttpPeerTransport::HandleSnapshot(const net::HttpRequest& req,
                                       std::shared_ptr<net::Responder> r) {
  const uint64_t sender = CheckPeerHeaders(req, r.get());
  if (sender == 0) return;
  static std::atomic<uint64_t> seq{0};
  struct State {
    std::string dir;
    std::string buf;
    size_t pos = 0;
    bool have_msg = false;
    raftpb::Message msg;
    // The file being received (through fs_: checked writes, 0600).
    std::unique_ptr<WritableFile> out;
    std::string name;
    uint64_t remaining = 0;
    uint32_t crc = 0;
    uint32_t want_crc = 0;
    // The directories that got new names, to be synced at the end.
    std::set<std::string> dirs;
    bool done = false;
    Status error;
    // The body callbacks and the end of the exchange, one at a time.
    Mutex mu;
    // The directory went to the handler (ReceiveSnapshot): not ours to
    // remove any more.
    bool handed_over = false;
  };
  auto st = std::make_shared<State>();
  st->dir =
      handler_->SnapshotStagingDir() + "/incoming-" + std::to_string(++seq);
  st->dirs.insert(st->dir);
  st->error = RemoveAll(fs_, st->dir);
  if (st->error.ok()) st->error = CreateDirAll(fs_, st->dir, kPrivateDirMode);
  if (!st->error.ok()) {
    LOG(WARNING) << "receiving snapshot: " << st->error;
    r->Respond(500, {{"Content-Type", "text/plain"}},
               st->error.message() + "\n");
    return;
  }
  // However the exchange ends (the sender's stream cut, the connection
  // closed, a stream that ended early), a directory not handed over goes:
  // partial snapshots used to stay until the member restarted.
  r->OnClose([this, st] {
    MutexLock l(&st->mu);
    st->done = true;
    if (st->handed_over) return;
    st->out.reset();
    if (Status rm = RemoveAll(fs_, st->dir); !rm.ok()) {
      LOG(WARNING) << "removing the partly received snapshot: " << rm;
    }
  });
  r->OnBodyData([this, st, r, sender](std::string_view data, bool eof) {
    MutexLock l(&st->mu);
    if (st->done) return;
    st->buf.append(data);
    while (st->error.ok()) {
      if (st->out) {
        size_t avail = st->buf.size() - st->pos;
        size_t n = std::min<uint64_t>(avail, st->remaining);
        if (n == 0 && st->remaining > 0) break;
        std::string_view piece(st->buf.data() + st->pos, n);
        if (Status w = st->out->Append(piece); !w.ok()) {
          st->error = w.Annotate("snapshot file " + st->name);
          break;
        }
        st->crc = crc32c::Extend(st->crc, piece.data(), n);
        st->pos += n;
        st->remaining -= n;
        if (st->remaining > 0) break;
        if (st->crc != st->want_crc) {
          st->error = CorruptionError("snapshot file " + st->name +
                                      " failed its checksum");
          break;
        }
        // Durable before the WAL may refer to it.
        Status c = st->out->Sync();
        if (c.ok()) c = st->out->Close();
        if (!c.ok()) {
          st->error = c.Annotate("snapshot file " + st->name);
          break;
        }
        st->out.reset();
        continue;
      }
      std::string_view frame;
      bool bad = false;
      if (!NextFrame(st->buf, &st->pos, &frame, &bad)) {
        if (bad) st->error = CorruptionError("corrupt snapshot frame");
        break;
      }
      if (!st->have_msg) {
        if (!st->msg.ParseFromArray(frame.data(),
                                    static_cast<int>(frame.size()))) {
          st->error = CorruptionError("undecodable snapshot message");
          break;
        }
        if (st->msg.from() != sender || st->msg.type() != raftpb::MsgSnap) {
          refused_->With({"sender_mismatch"})->Inc();
          st->error =
              InvalidArgumentError("snapshot message not from its sender");
          break;
        }
        // As the stream's messages are checked (entry_check.h): refused
        // before its files arrive.
        if (Status why = CheckPeerSnapshot(st->msg, handler_->member_id());
            !why.ok()) {
          refused_->With({"invalid_snapshot"})->Inc();
          LOG(WARNING) << "refused a snapshot from " << HexId(sender) << ": "
                       << why.message();
          st->error = InvalidArgumentError(why.message());
          break;
        }
        st->have_msg = true;
        continue;
      }
      storagepb::SnapshotFile h;
      if (!h.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
        st->error = CorruptionError("undecodable snapshot file header");
        break;
      }
      if (h.last()) {
        st->done = true;
        break;
      }
      if (h.name().empty() || h.name().find("..") != std::string::npos ||
          h.name()[0] == '/') {
        st->error = InvalidArgumentError("bad snapshot file name");
        break;
      }
      const std::string path = st->dir + "/" + h.name();
      const std::string parent = DirName(path);
      Status made = CreateDirAll(fs_, parent, kPrivateDirMode);
      // A name sent twice is refused (kAlreadyExists), not overwritten.
      StatusOr<std::unique_ptr<WritableFile>> opened =
          made.ok() ? fs_->OpenWritable(path, OpenMode::kCreateNew)
                    : StatusOr<std::unique_ptr<WritableFile>>(made);
      if (!opened.ok()) {
        st->error = opened.status().Annotate("snapshot file " + h.name());
        break;
      }
      st->out = std::move(*opened);
      st->dirs.insert(parent);
      st->name = h.name();
      st->remaining = h.size();
      st->want_crc = h.crc32c();
      st->crc = 0;
    }
    if (st->pos > 0) {
      st->buf.erase(0, st->pos);
      st->pos = 0;
    }
    if (!st->error.ok()) {
      LOG(WARNING) << "receiving snapshot: " << st->error;
      st->out.reset();
      if (Status rm = RemoveAll(fs_, st->dir); !rm.ok()) {
        LOG(WARNING) << "removing the partly received snapshot: " << rm;
      }
      // The sender's fault (400), or ours: a full or failing disk (500).
      const bool ours = st->error.Is(StatusCode::kNoSpace) ||
                        st->error.Is(StatusCode::kIOError);
      r->Respond(ours ? 500 : 400, {{"Content-Type", "text/plain"}},
                 st->error.message() + "\n");
      st->done = true;
      return;
    }
    if (st->done) {
      // The files were synced as each ended; their names (deepest
      // directory first) must be durable too before the WAL may refer to
      // the snapshot.
      Status s;
      for (auto it = st->dirs.rbegin(); s.ok() && it != st->dirs.rend(); ++it) {
        s = fs_->SyncDir(*it);
      }
      if (s.ok()) {
        st->handed_over = true;
        s = handler_->ReceiveSnapshot(st->dir, std::move(st->msg));
      }
      if (!s.ok()) {
        LOG(WARNING) << "keeping received snapshot: " << s;
        r->Respond(500, {{"Content-Type", "text/plain"}}, s.message() + "\n");
        return;
      }
      LOG(INFO) << "received snapshot";
      snapshots_received_->Inc();
      r->Respond(204, {}, "");
      return;
    }
    if (eof) {
      r->Respond(400, {{"Content-Type", "text/plain"}},
                 "snapshot stream ended early\n");
    }
  });
}

void HttpPeerTransport::RegisterHandlers(net::HttpServer* peer_server) {
  peer_server->Handle(
      "POST", "/raft/stream",
      [this](const net::HttpRequest& req, std::shared_ptr<net::Responder> r) {
        HandleStream(req, std::move(r));
      },
      // Frames are parsed and queued for the node loop right on the I/O
      // thread (never blocks): no worker hop per read. The body is the
      // peer's open-ended message stream: no deadline.
      {.stream_request_body = true,
       .run_on_io_thread = true,
       .body_timeout = Duration::zero()});
  peer_server->Handle(
      "POST", "/raft/snapshot",
      [this](const net::HttpRequest& req, std::shared_ptr<net::Responder> r) {
        HandleSnapshot(req, std::move(r));
      },
      // A snapshot takes as long as its size (up to the store's quota)
      // needs on the peer link: no deadline.
      {.stream_request_body = true, .body_timeout = Duration::zero()});
  peer_server->Handle(
      "GET", "/raft/hashkv",
      [this](const net::HttpRequest& req, std::shared_ptr<net::Responder> r) {
        // Members only: a hash reads every key of the store.
        if (CheckPeerHeaders(req, r.get()) == 0) return;
        auto rev = ParseInt64(req.QueryParam("revision"));
        auto h = handler_->HashKV(rev.value_or(0));
        if (!h.ok()) return RespondEtcdError(r.get(), h.status());
        r->Respond(200, {{"Content-Type", "application/json"}},
                   etcdjson::ToJson(*h));
      });
  // A follower asks the leader for a lease's time to live (etcd's
  // /leases/internal): members only, as the answer may list keys.
  HandleProtoPost<etcdserverpb::LeaseTimeToLiveRequest,
                  etcdserverpb::LeaseTimeToLiveResponse>(
      peer_server, "/raft/leasettl",
      [this](const etcdserverpb::LeaseTimeToLiveRequest& q) {
        return handler_->LeaderLeaseTimeToLive(q);
      });
  // A follower forwards a learner's promotion to the leader (etcd's
  // /members/promote).
  HandleProtoPost<etcdserverpb::MemberPromoteRequest,
                  etcdserverpb::MemberPromoteResponse>(
      peer_server, "/raft/promote",
      [this](const etcdserverpb::MemberPromoteRequest& q) {
        return handler_->LeaderMemberPromote(q);
      });
  peer_server->Handle(
      "GET", "/raft/members",
      [this](const net::HttpRequest&, std::shared_ptr<net::Responder> r) {
        r->Respond(200, {{"Content-Type", "application/x-protobuf"}},
                   handler_->RecordForJoiners().SerializeAsString());
      });
}

StatusOr<std::string> HttpPeerTransport::PeerUrl(uint64_t id) {
  std::shared_ptr<Peer> p = FindPeer(id);
  if (!p) return NotFoundError("unknown peer");
  std::vector<std::string> urls = p->urls();
  if (urls.empty()) return NotFoundError("peer has no URL");
  return urls.front();
}

StatusOr<etcdserverpb::HashKVResponse> HttpPeerTransport::PeerHashKV(
    uint64_t id, int64_t revision) {
  ASSIGN_OR_RETURN(std::string url, PeerUrl(id));
  net::HttpClientOptions copts;
  copts.connect_timeout = options_.dial_timeout;
  copts.read_timeout = seconds(30);
  copts.tls = TlsFor(url, options_.client_tls);
  ASSIGN_OR_RETURN(auto client, net::HttpClient::ForUrl(url, copts));
  ASSIGN_OR_RETURN(
      net::HttpResponse resp,
      client->Request("GET",
                      "/raft/hashkv?revision=" + std::to_string(revision),
                      PeerHeaders(""), ""));
  if (resp.status != 200)
    return etcdjson::ErrorToStatus(resp.status, resp.body);
  etcdserverpb::HashKVResponse h;
  RETURN_IF_ERROR(etcdjson::ParseJson(resp.body, &h));
  return h;
}

template <typename Req, typename Resp>
void HttpPeerTransport::HandleProtoPost(
    net::HttpServer* peer_server, const std::string& path,
    std::function<StatusOr<Resp>(const Req&)> answer) {
  peer_server->Handle(
      "POST", path,
      [this, answer = std::move(answer)](const net::HttpRequest& req,
                                         std::shared_ptr<net::Responder> r) {
        if (CheckPeerHeaders(req, r.get()) == 0) return;
        Req q;
        if (!q.ParseFromString(req.body)) {
          r->Respond(400, {{"Content-Type", "text/plain"}},
                     "undecodable request\n");
          return;
        }
        StatusOr<Resp> a = answer(q);
        if (!a.ok()) return RespondEtcdError(r.get(), a.status());
        r->Respond(200, {{"Content-Type", "application/x-protobuf"}},
                   a->SerializeAsString());
      });
}

Status HttpPeerTransport::PostToPeer(uint64_t id, const std::string& path,
                                     const google::protobuf::Message& req,
                                     Duration timeout,
                                     google::protobuf::Message* resp) {
  ASSIGN_OR_RETURN(std::string url, PeerUrl(id));
  net::HttpClientOptions copts;
  copts.connect_timeout = std::min(options_.dial_timeout, timeout);
  copts.read_timeout = timeout;
  copts.write_timeout = timeout;
  copts.tls = TlsFor(url, options_.client_tls);
  ASSIGN_OR_RETURN(auto client, net::HttpClient::ForUrl(url, copts));
  StatusOr<net::HttpResponse> answer =
      client->Request("POST", path, PeerHeaders("application/x-protobuf"),
                      req.SerializeAsString());
  if (!answer.ok()) return UnavailableError(answer.status().message());
  if (answer->status != 200) {
    // A refusal of the peer port itself (412, 404) is text, not an etcd
    // error: the peer cannot answer for this member now.
    if (answer->headers.Get("Content-Type") != "application/json") {
      return UnavailableError("POST " + url + path + ": HTTP " +
                              std::to_string(answer->status));
    }
    return etcdjson::ErrorToStatus(answer->status, answer->body);
  }
  if (!resp->ParseFromString(answer->body)) {
    return UnavailableError("undecodable answer from " + url + path);
  }
  return Status::Ok();
}

StatusOr<etcdserverpb::LeaseTimeToLiveResponse>
HttpPeerTransport::PeerLeaseTimeToLive(
    uint64_t id, const etcdserverpb::LeaseTimeToLiveRequest& req,
    Duration timeout) {
  etcdserverpb::LeaseTimeToLiveResponse ttl;
  RETURN_IF_ERROR(PostToPeer(id, "/raft/leasettl", req, timeout, &ttl));
  return ttl;
}

StatusOr<etcdserverpb::MemberPromoteResponse>
HttpPeerTransport::PeerMemberPromote(
    uint64_t id, const etcdserverpb::MemberPromoteRequest& req,
    Duration timeout) {
  etcdserverpb::MemberPromoteResponse promoted;
  RETURN_IF_ERROR(PostToPeer(id, "/raft/promote", req, timeout, &promoted));
  return promoted;
}

StatusOr<storagepb::ClusterRecord> HttpPeerTransport::PeerMembership(
    uint64_t id) {
  ASSIGN_OR_RETURN(std::string url, PeerUrl(id));
  // Short: the caller is the housekeeping thread of a member without leader.
  return FetchMembership(url, seconds(2), options_.client_tls);
}

StatusOr<storagepb::ClusterRecord> HttpPeerTransport::FetchMembership(
    const std::string& peer_url, Duration timeout,
    std::shared_ptr<const net::TlsContext> tls) {
  net::HttpClientOptions copts;
  copts.tls = TlsFor(peer_url, tls);
  copts.connect_timeout = std::min<Duration>(timeout, seconds(5));
  copts.read_timeout = timeout;
  copts.write_timeout = timeout;
  ASSIGN_OR_RETURN(auto client, net::HttpClient::ForUrl(peer_url, copts));
  ASSIGN_OR_RETURN(net::HttpResponse resp,
                   client->Request("GET", "/raft/members"));
  if (resp.status != 200) {
    return UnavailableError("GET " + peer_url + "/raft/members: HTTP " +
                            std::to_string(resp.status));
  }
  storagepb::ClusterRecord rec;
  if (!rec.ParseFromString(resp.body)) {
    return CorruptionError("undecodable membership from " + peer_url);
  }
  return rec;
}

}  // namespace kplane::storage
