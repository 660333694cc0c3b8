// HttpPeerTransport: raft messages between store members over HTTP/1.1.
//
// Messages: each member keeps one long-lived POST /raft/stream to each peer
// whose chunked request body carries frames `uint32 length (big-endian) +
// raftpb.Message`. Send() writes a Ready's messages for a peer as one chunk
// from the calling thread (the raft loop) when that peer's stream is open
// (plaintext or TLS) and to its current URLs, its sender thread is idle with
// nothing queued and no unfinished chunk, the chunk is at most 64 KiB, and
// the connection takes at least the start of it without waiting (over TLS:
// always; a record OpenSSL began is finished by the sender): no thread
// hand-off per message, which is most of a message's cost at a few hundred
// writes per second. Otherwise (a full plaintext socket, the sender busy,
// new URLs, a larger chunk) it queues them under one lock with at most one
// wake-up, and the sender thread takes everything queued since its last
// write and sends it as one chunk, so a busy leader batches many MsgApps
// per write. A direct write the connection took only part of leaves the
// rest in the stream, and the sender pushes it out before anything queued
// after it: the order on the stream is the order of Send() calls. The
// receiver parses frames on its HTTP I/O thread and steps all that one
// read brought into the node loop at once (RaftNode::StepMany), without a
// hop through a worker thread.
// A peer that is down or partitioned costs only its own thread: its queue
// is bounded, overflow is dropped (raft retransmits) and the peer is
// reported unreachable to the core so it probes instead of streaming.
//
// Snapshots: a MsgSnap is not queued. A snapshot thread makes a consistent
// copy of the store (PeerHandler::SnapshotTo) and streams it with POST
// /raft/snapshot (framing in schemas/storage.proto SnapshotFile); the
// receiver keeps it durable in member/snap/ before stepping the message in.
// The outcome is reported to the core (ReportSnapshot). Both ends read and
// write the snapshot's files through the member's FileSystem
// (options.file_system, base/file_system.h): the receiver creates them
// 0600 in 0700 directories, checks every write (a full disk fails the
// transfer, which the sender reports as failed), and syncs each file and
// each directory before the handler takes the directory over.
//
// Every request carries X-Kplane-Cluster-Id and X-Kplane-From; the receiver
// rejects other clusters and removed members (412) and senders that are not
// members (404 "error sender not found", as etcd's rafthttp), and on a
// stream drops each message whose `from` is not the stream's sender; all
// are counted in kplane_network_peer_refused_total{reason}. These headers
// are not proof of identity: with peer TLS (etcd's --peer-* flags, see
// member_tls.h) only members whose certificate the peer CA signed get this
// far -- the peer listener requires one and this transport presents
// `client_tls`'s to https:// peers and verifies theirs; the member re-checks
// every message it steps (StoreServer::Process).
//
// The transport knows its member only through PeerHandler (peer.h): what
// arrives goes to the handler, and so do the reports of what failed.
//
// Ownership: the handler must outlive the transport (Stop() joins every
// thread that may call it).
// Thread-safety: all methods may be called from any thread. Locks: mu_
// (the peer table) is taken before a Peer's own mutex, never after; the
// handler is never called with either held.
#ifndef KPLANE_STORAGE_SERVER_PEER_TRANSPORT_H_
#define KPLANE_STORAGE_SERVER_PEER_TRANSPORT_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/file_system.h"
#include "base/metrics.h"
#include "base/mutex.h"
#include "net/http_server.h"
#include "storage/server/peer.h"

namespace kplane::storage {

// The largest frame on a peer stream (/raft/stream messages; the message
// and file headers of /raft/snapshot, whose file contents are streamed
// outside frames). A longer length prefix is refused before any of its
// bytes are buffered and the stream is dropped; a shorter one buffers only
// what actually arrives. A legitimate frame is one raft message: at most
// max_size_per_msg (1 MiB) of entries plus one entry of up to the leader's
// --max-request-bytes. etcd's rafthttp caps a message at 512 MB.
inline constexpr uint32_t kMaxPeerFrameBytes = 256u << 20;

struct PeerTransportOptions {
  Duration dial_timeout = seconds(1);
  Duration write_timeout = seconds(2);
  // Messages queued per peer before new ones are dropped.
  size_t max_queued_messages = 8192;
  // Where snapshot files are read and written (the member's disk); null =
  // FileSystem::Default(). Not owned; must outlive the transport.
  FileSystem* file_system = nullptr;
  // Dialing https:// peer URLs (NewMemberPeerClientTls: this member's peer
  // certificate, the peer CA). http:// URLs are dialed in plain text, as
  // etcd's rafthttp does. Null: https:// peers cannot be reached.
  std::shared_ptr<const net::TlsContext> client_tls;
  Clock* clock = Clock::Real();
  metrics::Registry* metrics = metrics::Registry::Default();
};

class HttpPeerTransport : public PeerTransport {
 public:
  HttpPeerTransport(PeerHandler* handler, PeerTransportOptions options);
  ~HttpPeerTransport() override;

  // Serves /raft/stream, /raft/snapshot, /raft/hashkv, /raft/leasettl,
  // /raft/promote and /raft/members on the member's peer listener. Call before
  // the server starts.
  void RegisterHandlers(net::HttpServer* peer_server);
  void Stop() EXCLUDES(mu_);

  void Send(std::vector<raftpb::Message> msgs) override;
  void AddPeer(uint64_t id, const std::vector<std::string>& urls) override
      EXCLUDES(mu_);
  void RemovePeer(uint64_t id) override EXCLUDES(mu_);
  StatusOr<etcdserverpb::HashKVResponse> PeerHashKV(uint64_t id,
                                                    int64_t revision) override;
  StatusOr<storagepb::ClusterRecord> PeerMembership(uint64_t id) override;
  StatusOr<etcdserverpb::LeaseTimeToLiveResponse> PeerLeaseTimeToLive(
      uint64_t id, const etcdserverpb::LeaseTimeToLiveRequest& req,
      Duration timeout) override;
  StatusOr<etcdserverpb::MemberPromoteResponse> PeerMemberPromote(
      uint64_t id, const etcdserverpb::MemberPromoteRequest& req,
      Duration timeout) override;

  // Threads sending or having sent snapshots not joined yet (tests).
  size_t SnapshotThreads() EXCLUDES(mu_);

  // Fetches the membership from a running member's peer URL (for a member
  // joining with --initial-cluster-state=existing).
  // `tls` dials an https:// URL (as PeerTransportOptions::client_tls).
  static StatusOr<storagepb::ClusterRecord> FetchMembership(
      const std::string& peer_url, Duration timeout = seconds(60),
      std::shared_ptr<const net::TlsContext> tls = nullptr);

 private:
  class Peer;
  void SendSnapshot(raftpb::Message msg) EXCLUDES(mu_);
  void HandleStream(const net::HttpRequest& req,
                    std::shared_ptr<net::Responder> r);
  void HandleSnapshot(const net::HttpRequest& req,
                      std::shared_ptr<net::Responder> r);
  // Checks the cluster and sender headers; answers and returns 0 when the
  // request is refused, else returns the sender's id.
  uint64_t CheckPeerHeaders(const net::HttpRequest& req, net::Responder* r);
  // The headers CheckPeerHeaders reads, naming this member, and
  // `content_type` when not empty.
  net::HttpHeaders PeerHeaders(std::string content_type) const;
  std::shared_ptr<Peer> FindPeer(uint64_t id) EXCLUDES(mu_);
  // The first URL of a known peer (NotFound if unknown or without URL).
  StatusOr<std::string> PeerUrl(uint64_t id);
  // POSTs `req` (protobuf) to `path` of peer `id` and parses its protobuf
  // answer into `resp`; an etcd error the peer answers comes back as its
  // Status, anything else (unreachable, the peer port's own refusal) as
  // Unavailable.
  Status PostToPeer(uint64_t id, const std::string& path,
                    const google::protobuf::Message& req, Duration timeout,
                    google::protobuf::Message* resp);
  // Serves a POST of `path` on the peer port: members only, a protobuf
  // request answered by `answer` (protobuf, or the etcd error as JSON).
  template <typename Req, typename Resp>
  void HandleProtoPost(net::HttpServer* peer_server, const std::string& path,
                       std::function<StatusOr<Resp>(const Req&)> answer);

  PeerHandler* const handler_;
  PeerTransportOptions options_;
  FileSystem* const fs_;
  Mutex mu_;
  std::map<uint64_t, std::shared_ptr<Peer>> peers_ GUARDED_BY(mu_);
  // The threads sending snapshots, each with a flag it sets as it ends.
  struct SnapshotSend {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<SnapshotSend> snapshot_threads_ GUARDED_BY(mu_);
  std::atomic<bool> stopped_{false};
  metrics::Counter* sent_bytes_;
  metrics::Counter* received_bytes_;
  metrics::Counter* sent_direct_;
  metrics::Counter* sent_direct_partial_;
  metrics::Counter* dropped_;
  metrics::Counter* snapshots_sent_;
  metrics::Counter* snapshots_received_;
  metrics::Family<metrics::Counter>* refused_;
};

}  // namespace kplane::storage

#endif  // KPLANE_STORAGE_SERVER_PEER_TRANSPORT_H_
