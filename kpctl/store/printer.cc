#include "kpctl/store/printer.h"

#include "base/base64.h"
#include "kpctl/store/go_format.h"

namespace kplane::kpctl {

namespace {

std::string Hexed(const std::string& s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  return out;
}

// The header's fields as Go prints an embedded *pb.ResponseHeader, with a
// trailing comma when there are any.
std::string InlineHeader(const etcdserverpb::ResponseHeader& h) {
  std::string f = MessageFieldsToGoJson(h);
  return f.empty() ? f : f + ",";
}

std::vector<std::string> MemberRow(const etcdserverpb::Member& m) {
  std::string peers, clients;
  for (int i = 0; i < m.peerurls_size(); ++i) {
    if (i > 0) peers += ",";
    peers += m.peerurls(i);
  }
  for (int i = 0; i < m.clienturls_size(); ++i) {
    if (i > 0) clients += ",";
    clients += m.clienturls(i);
  }
  return {GoHexU(m.id()), m.name().empty() ? "unstarted" : "started",
          m.name(),       peers,
          clients,        m.islearner() ? "true" : "false"};
}

const std::vector<std::string> kMemberHeader = {
    "ID", "Status", "Name", "Peer Addrs", "Client Addrs", "Is Learner"};
const std::vector<std::string> kHealthHeader = {"endpoint", "health", "took",
                                                "error"};
const std::vector<std::string> kStatusHeader = {
    "endpoint",           "ID",         "version",   "db size",
    "is leader",          "is learner", "raft term", "raft index",
    "raft applied index", "errors"};
const std::vector<std::string> kDBStatusHeader = {"hash", "revision",
                                                  "total keys", "total size"};

std::vector<std::string> StatusRow(const EndpointStatus& s) {
  const etcdserverpb::StatusResponse& r = s.status;
  std::string errors;
  for (int i = 0; i < r.errors_size(); ++i) {
    if (i > 0) errors += ", ";
    errors += r.errors(i);
  }
  return {s.endpoint,
          GoHexU(r.header().member_id()),
          r.version(),
          HumanizeBytes(static_cast<uint64_t>(r.dbsize())),
          r.leader() == r.header().member_id() ? "true" : "false",
          r.islearner() ? "true" : "false",
          std::to_string(r.raftterm()),
          std::to_string(r.raftindex()),
          std::to_string(r.raftappliedindex()),
          errors};
}

std::vector<std::string> DBStatusRow(const SnapshotStatus& s) {
  return {GoHexU(s.hash), std::to_string(s.revision),
          std::to_string(s.total_keys),
          HumanizeBytes(static_cast<uint64_t>(s.total_size))};
}

std::string JoinRow(const std::vector<std::string>& row) {
  std::string out;
  for (size_t i = 0; i < row.size(); ++i) {
    if (i > 0) out += ", ";
    out += row[i];
  }
  return out;
}

// Base class: every call unsupported (table) unless overridden.
class UnsupportedPrinter : public Printer {
 public:
  bool Get(const etcdserverpb::RangeResponse&) override { return false; }
  bool Put(const etcdserverpb::PutResponse&) override { return false; }
  bool Del(const etcdserverpb::DeleteRangeResponse&) override { return false; }
  bool Txn(const etcdserverpb::TxnResponse&) override { return false; }
  bool Watch(const etcdserverpb::WatchResponse&) override { return false; }
  bool Grant(const etcdserverpb::LeaseGrantResponse&) override { return false; }
  bool Revoke(int64_t, const etcdserverpb::LeaseRevokeResponse&) override {
    return false;
  }
  bool KeepAlive(const etcdserverpb::LeaseKeepAliveResponse&) override {
    return false;
  }
  bool TimeToLive(const etcdserverpb::LeaseTimeToLiveResponse&, bool) override {
    return false;
  }
  bool Leases(const etcdserverpb::LeaseLeasesResponse&) override {
    return false;
  }
  bool MemberAdd(const etcdserverpb::MemberAddResponse&) override {
    return false;
  }
  bool MemberRemove(uint64_t,
                    const etcdserverpb::MemberRemoveResponse&) override {
    return false;
  }
  bool MemberUpdate(uint64_t,
                    const etcdserverpb::MemberUpdateResponse&) override {
    return false;
  }
  bool MemberPromote(uint64_t,
                     const etcdserverpb::MemberPromoteResponse&) override {
    return false;
  }
  bool MemberList(const etcdserverpb::MemberListResponse&) override {
    return false;
  }
  bool EndpointHealthList(const std::vector<EndpointHealth>&) override {
    return false;
  }
  bool EndpointStatusList(const std::vector<EndpointStatus>&) override {
    return false;
  }
  bool MoveLeader(uint64_t, uint64_t,
                  const etcdserverpb::MoveLeaderResponse&) override {
    return false;
  }
  bool Alarm(const etcdserverpb::AlarmResponse&) override { return false; }
  bool DBStatus(const SnapshotStatus&) override { return false; }
};

class SimplePrinter : public Printer {
 public:
  SimplePrinter(bool hex, bool value_only, std::ostream* out, std::ostream* err)
      : hex_(hex), value_only_(value_only), out_(*out), err_(*err) {}
  const char* name() const override { return "simple"; }

  bool Get(const etcdserverpb::RangeResponse& r) override {
    for (const auto& kv : r.kvs()) out_ << SimpleKV(kv, hex_, value_only_);
    return true;
  }
  bool Put(const etcdserverpb::PutResponse& r) override {
    out_ << "OK\n";
    if (r.has_prev_kv()) out_ << SimpleKV(r.prev_kv(), hex_, value_only_);
    return true;
  }
  bool Del(const etcdserverpb::DeleteRangeResponse& r) override {
    out_ << r.deleted() << "\n";
    for (const auto& kv : r.prev_kvs()) {
      out_ << SimpleKV(kv, hex_, value_only_);
    }
    return true;
  }
  bool Txn(const etcdserverpb::TxnResponse& r) override {
    out_ << (r.succeeded() ? "SUCCESS\n" : "FAILURE\n");
    for (const auto& op : r.responses()) {
      out_ << "\n";
      switch (op.response_case()) {
        case etcdserverpb::ResponseOp::kResponseDeleteRange:
          Del(op.response_delete_range());
          break;
        case etcdserverpb::ResponseOp::kResponsePut:
          Put(op.response_put());
          break;
        case etcdserverpb::ResponseOp::kResponseRange:
          Get(op.response_range());
          break;
        default:
          out_ << "unexpected response " << op.ShortDebugString() << "\n";
      }
    }
    return true;
  }
  bool Watch(const etcdserverpb::WatchResponse& r) override {
    for (const auto& e : r.events()) {
      out_ << (e.type() == mvccpb::Event::DELETE ? "DELETE" : "PUT") << "\n";
      if (e.has_prev_kv()) out_ << SimpleKV(e.prev_kv(), hex_, value_only_);
      out_ << SimpleKV(e.kv(), hex_, value_only_);
    }
    return true;
  }
  bool Grant(const etcdserverpb::LeaseGrantResponse& r) override {
    out_ << "lease " << GoHex(r.id(), 16, '0') << " granted with TTL("
         << r.ttl() << "s)\n";
    return true;
  }
  bool Revoke(int64_t id, const etcdserverpb::LeaseRevokeResponse&) override {
    out_ << "lease " << GoHex(id, 16, '0') << " revoked\n";
    return true;
  }
  bool KeepAlive(const etcdserverpb::LeaseKeepAliveResponse& r) override {
    out_ << "lease " << GoHex(r.id(), 16, '0') << " keepalived with TTL("
         << r.ttl() << ")\n";
    return true;
  }
  bool TimeToLive(const etcdserverpb::LeaseTimeToLiveResponse& r,
                  bool keys) override {
    if (r.grantedttl() == 0 && r.ttl() == -1) {
      out_ << "lease " << GoHex(r.id(), 16, '0') << " already expired\n";
      return true;
    }
    out_ << "lease " << GoHex(r.id(), 16, '0') << " granted with TTL("
         << r.grantedttl() << "s), remaining(" << r.ttl() << "s)";
    if (keys) {
      out_ << ", attached keys([";
      for (int i = 0; i < r.keys_size(); ++i) {
        if (i > 0) out_ << " ";
        out_ << r.keys(i);
      }
      out_ << "])";
    }
    out_ << "\n";
    return true;
  }
  bool Leases(const etcdserverpb::LeaseLeasesResponse& r) override {
    out_ << "found " << r.leases_size() << " leases\n";
    for (const auto& l : r.leases()) out_ << GoHex(l.id(), 16, '0') << "\n";
    return true;
  }
  bool MemberAdd(const etcdserverpb::MemberAddResponse& r) override {
    out_ << "Member " << GoHexU(r.member().id(), 16) << " added to cluster "
         << GoHexU(r.header().cluster_id(), 16) << "\n";
    return true;
  }
  bool MemberRemove(uint64_t id,
                    const etcdserverpb::MemberRemoveResponse& r) override {
    out_ << "Member " << GoHexU(id, 16) << " removed from cluster "
         << GoHexU(r.header().cluster_id(), 16) << "\n";
    return true;
  }
  bool MemberUpdate(uint64_t id,
                    const etcdserverpb::MemberUpdateResponse& r) override {
    out_ << "Member " << GoHexU(id, 16) << " updated in cluster "
         << GoHexU(r.header().cluster_id(), 16) << "\n";
    return true;
  }
  bool MemberPromote(uint64_t id,
                     const etcdserverpb::MemberPromoteResponse& r) override {
    out_ << "Member " << GoHexU(id, 16) << " promoted in cluster "
         << GoHexU(r.header().cluster_id(), 16) << "\n";
    return true;
  }
  bool MemberList(const etcdserverpb::MemberListResponse& r) override {
    for (const auto& m : r.members()) out_ << JoinRow(MemberRow(m)) << "\n";
    return true;
  }
  bool EndpointHealthList(const std::vector<EndpointHealth>& hs) override {
    for (const auto& h : hs) {
      if (h.error.empty()) {
        err_ << h.endpoint
             << " is healthy: successfully committed proposal: took = "
             << h.took << "\n";
      } else {
        err_ << h.endpoint
             << " is unhealthy: failed to commit proposal: " << h.error << "\n";
      }
    }
    return true;
  }
  bool EndpointStatusList(const std::vector<EndpointStatus>& s) override {
    for (const auto& st : s) out_ << JoinRow(StatusRow(st)) << "\n";
    return true;
  }
  bool MoveLeader(uint64_t leader, uint64_t target,
                  const etcdserverpb::MoveLeaderResponse&) override {
    out_ << "Leadership transferred from " << GoHexU(leader) << " to "
         << GoHexU(target) << "\n";
    return true;
  }
  bool Alarm(const etcdserverpb::AlarmResponse& r) override {
    // fmt's %+v of *pb.AlarmMember: gogoproto's compact text form.
    for (const auto& a : r.alarms()) {
      std::string line;
      if (a.memberid() != 0) {
        line += "memberID:" + std::to_string(a.memberid()) + " ";
      }
      if (a.alarm() != etcdserverpb::NONE) {
        line += "alarm:" + etcdserverpb::AlarmType_Name(a.alarm()) + " ";
      }
      out_ << line << "\n";
    }
    return true;
  }
  bool DBStatus(const SnapshotStatus& s) override {
    out_ << JoinRow(DBStatusRow(s)) << "\n";
    return true;
  }

 private:
  bool hex_;
  bool value_only_;
  std::ostream& out_;
  std::ostream& err_;
};

class JsonPrinter : public Printer {
 public:
  explicit JsonPrinter(std::ostream* out) : out_(*out) {}
  const char* name() const override { return "json"; }

  bool Get(const etcdserverpb::RangeResponse& r) override { return Msg(r); }
  bool Put(const etcdserverpb::PutResponse& r) override { return Msg(r); }
  bool Del(const etcdserverpb::DeleteRangeResponse& r) override {
    return Msg(r);
  }
  bool Txn(const etcdserverpb::TxnResponse& r) override { return Msg(r); }
  bool Watch(const etcdserverpb::WatchResponse& r) override {
    // clientv3.WatchResponse: exported fields without json tags.
    std::string s =
        "{\"Header\":" + MessageToGoJson(r.header()) + ",\"Events\":";
    if (r.events_size() == 0) {
      s += "null";
    } else {
      s += "[";
      for (int i = 0; i < r.events_size(); ++i) {
        if (i > 0) s += ",";
        s += MessageToGoJson(r.events(i));
      }
      s += "]";
    }
    s += ",\"CompactRevision\":" + std::to_string(r.compact_revision());
    s += std::string(",\"Canceled\":") + (r.canceled() ? "true" : "false");
    s += std::string(",\"Created\":") + (r.created() ? "true" : "false");
    out_ << s << "}\n";
    return true;
  }
  bool Grant(const etcdserverpb::LeaseGrantResponse& r) override {
    out_ << "{" << InlineHeader(r.header()) << "\"ID\":" << r.id()
         << ",\"TTL\":" << r.ttl() << ",\"Error\":" << GoJsonString(r.error())
         << "}\n";
    return true;
  }
  bool Revoke(int64_t, const etcdserverpb::LeaseRevokeResponse& r) override {
    return Msg(r);
  }
  bool KeepAlive(const etcdserverpb::LeaseKeepAliveResponse& r) override {
    out_ << "{" << InlineHeader(r.header()) << "\"ID\":" << r.id()
         << ",\"TTL\":" << r.ttl() << "}\n";
    return true;
  }
  bool TimeToLive(const etcdserverpb::LeaseTimeToLiveResponse& r,
                  bool) override {
    out_ << "{" << InlineHeader(r.header()) << "\"id\":" << r.id()
         << ",\"ttl\":" << r.ttl() << ",\"granted-ttl\":" << r.grantedttl()
         << ",\"keys\":";
    if (r.keys_size() == 0) {
      out_ << "null";
    } else {
      out_ << "[";
      for (int i = 0; i < r.keys_size(); ++i) {
        if (i > 0) out_ << ",";
        out_ << "\"" << Base64Encode(r.keys(i)) << "\"";
      }
      out_ << "]";
    }
    out_ << "}\n";
    return true;
  }
  bool Leases(const etcdserverpb::LeaseLeasesResponse& r) override {
    out_ << "{" << InlineHeader(r.header()) << "\"leases\":[";
    for (int i = 0; i < r.leases_size(); ++i) {
      if (i > 0) out_ << ",";
      out_ << "{\"id\":" << r.leases(i).id() << "}";
    }
    out_ << "]}\n";
    return true;
  }
  bool MemberAdd(const etcdserverpb::MemberAddResponse& r) override {
    return Msg(r);
  }
  bool MemberRemove(uint64_t,
                    const etcdserverpb::MemberRemoveResponse& r) override {
    return Msg(r);
  }
  bool MemberUpdate(uint64_t,
                    const etcdserverpb::MemberUpdateResponse& r) override {
    return Msg(r);
  }
  bool MemberPromote(uint64_t,
                     const etcdserverpb::MemberPromoteResponse& r) override {
    return Msg(r);
  }
  bool MemberList(const etcdserverpb::MemberListResponse& r) override {
    return Msg(r);
  }
  bool EndpointHealthList(const std::vector<EndpointHealth>& hs) override {
    std::string s = "[";
    for (size_t i = 0; i < hs.size(); ++i) {
      if (i > 0) s += ",";
      s += "{\"endpoint\":" + GoJsonString(hs[i].endpoint) +
           ",\"health\":" + (hs[i].health ? "true" : "false") +
           ",\"took\":" + GoJsonString(hs[i].took);
      if (!hs[i].error.empty()) s += ",\"error\":" + GoJsonString(hs[i].error);
      s += "}";
    }
    out_ << s << "]\n";
    return true;
  }
  bool EndpointStatusList(const std::vector<EndpointStatus>& ss) override {
    std::string s = "[";
    for (size_t i = 0; i < ss.size(); ++i) {
      if (i > 0) s += ",";
      s += "{\"Endpoint\":" + GoJsonString(ss[i].endpoint) +
           ",\"Status\":" + MessageToGoJson(ss[i].status) + "}";
    }
    out_ << s << "]\n";
    return true;
  }
  bool MoveLeader(uint64_t, uint64_t,
                  const etcdserverpb::MoveLeaderResponse& r) override {
    return Msg(r);
  }
  bool Alarm(const etcdserverpb::AlarmResponse& r) override { return Msg(r); }
  bool DBStatus(const SnapshotStatus& s) override {
    out_ << "{\"hash\":" << s.hash << ",\"revision\":" << s.revision
         << ",\"totalKey\":" << s.total_keys
         << ",\"totalSize\":" << s.total_size << "}\n";
    return true;
  }

 private:
  bool Msg(const google::protobuf::Message& m) {
    out_ << MessageToGoJson(m) << "\n";
    return true;
  }
  std::ostream& out_;
};

class TablePrinter : public UnsupportedPrinter {
 public:
  explicit TablePrinter(std::ostream* out) : out_(*out) {}
  const char* name() const override { return "table"; }

  bool MemberList(const etcdserverpb::MemberListResponse& r) override {
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : r.members()) rows.push_back(MemberRow(m));
    out_ << RenderTable(kMemberHeader, rows);
    return true;
  }
  bool EndpointHealthList(const std::vector<EndpointHealth>& hs) override {
    std::vector<std::vector<std::string>> rows;
    for (const auto& h : hs) {
      rows.push_back(
          {h.endpoint, h.health ? "true" : "false", h.took, h.error});
    }
    out_ << RenderTable(kHealthHeader, rows);
    return true;
  }
  bool EndpointStatusList(const std::vector<EndpointStatus>& s) override {
    std::vector<std::vector<std::string>> rows;
    for (const auto& st : s) rows.push_back(StatusRow(st));
    out_ << RenderTable(kStatusHeader, rows);
    return true;
  }
  bool DBStatus(const SnapshotStatus& s) override {
    out_ << RenderTable(kDBStatusHeader, {DBStatusRow(s)});
    return true;
  }

 private:
  std::ostream& out_;
};

}  // namespace

std::string SimpleKV(const mvccpb::KeyValue& kv, bool hex, bool value_only) {
  std::string k = hex ? Hexed(kv.key()) : kv.key();
  std::string v = hex ? Hexed(kv.value()) : kv.value();
  std::string out;
  if (!value_only) out += k + "\n";
  out += v + "\n";
  return out;
}

std::unique_ptr<Printer> NewPrinter(const std::string& format, bool hex,
                                    bool value_only, std::ostream* out,
                                    std::ostream* err) {
  if (format == "simple") {
    return std::make_unique<SimplePrinter>(hex, value_only, out, err);
  }
  if (format == "json") return std::make_unique<JsonPrinter>(out);
  if (format == "table") return std::make_unique<TablePrinter>(out);
  return nullptr;
}

}  // namespace kplane::kpctl
