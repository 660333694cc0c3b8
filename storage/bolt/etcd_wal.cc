#include "storage/bolt/etcd_wal.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "base/crc32c.h"
#include "schemas/etcdwal.pb.h"
#include "storage/bolt/etcd_backend.h"

namespace kplane::bolt {
namespace {

// etcd's record types (wal/wal.go).
constexpr int64_t kMetadataType = 1;
constexpr int64_t kEntryType = 2;
constexpr int64_t kStateType = 3;
constexpr int64_t kCrcType = 4;
constexpr int64_t kSnapshotType = 5;

// etcd 3.4 refuses records this large (maxWALEntrySizeLimit); so do we,
// before allocating anything for one.
constexpr uint64_t kMaxRecordBytes = 10 << 20;

uint64_t LittleEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%08x", v);
  return buf;
}

// "%016x-%016x.wal" -> sequence, index.
bool ParseWalName(std::string_view name, uint64_t* seq, uint64_t* index) {
  if (name.size() != 16 + 1 + 16 + 4 || name[16] != '-' ||
      name.substr(33) != ".wal") {
    return false;
  }
  auto hex = [](std::string_view s, uint64_t* out) {
    uint64_t v = 0;
    for (char c : s) {
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                     : -1;
      if (d < 0) return false;
      v = (v << 4) | static_cast<uint64_t>(d);
    }
    *out = v;
    return true;
  };
  return hex(name.substr(0, 16), seq) && hex(name.substr(17, 16), index);
}

}  // namespace

Status ReadEtcdWalFile(std::string_view name, std::string_view data,
                       uint32_t* crc, EtcdWal* wal) {
  bool has_metadata = false;
  size_t off = 0;
  auto bad = [&](size_t at, const std::string& what) {
    return CorruptionError("etcd WAL " + std::string(name) + " at byte " +
                           std::to_string(at) + ": " + what);
  };
  while (off + 8 <= data.size()) {
    const uint64_t word = LittleEndian64(data.data() + off);
    // Zeros: the preallocated rest of the file (etcd's decoder stops here).
    if (word == 0) break;
    const uint64_t size = word & ~(uint64_t{0xff} << 56);
    const uint64_t pad = (word >> 63) != 0 ? (word >> 56) & 0x7 : 0;
    if (size > kMaxRecordBytes) {
      return bad(off, "record of " + std::to_string(size) +
                          " bytes is larger than etcd's limit of 10 MiB "
                          "(a damaged length word)");
    }
    if (size + pad > data.size() - off - 8) {
      return bad(off, "record of " + std::to_string(size) + " bytes runs " +
                          "past the end of the file (" +
                          std::to_string(data.size()) +
                          " bytes): the file is truncated");
    }
    walpb::Record rec;
    if (!rec.ParseFromArray(data.data() + off + 8, static_cast<int>(size))) {
      return bad(off, "record does not parse");
    }
    if (rec.type() == kCrcType) {
      // The CRC the file starts from; it must continue the previous file's.
      if (*crc != 0 && rec.crc() != *crc) {
        return bad(off, "CRC record says " + Hex32(rec.crc()) +
                            " but the log so far has " + Hex32(*crc));
      }
      *crc = rec.crc();
    } else {
      *crc = crc32c::Extend(*crc, rec.data().data(), rec.data().size());
      if (rec.crc() != *crc) {
        return bad(off, "CRC mismatch: the record says " + Hex32(rec.crc()) +
                            ", its data give " + Hex32(*crc) +
                            " (the file is damaged)");
      }
    }
    switch (rec.type()) {
      case kCrcType:
        break;
      case kMetadataType: {
        walpb::Metadata md;
        if (!md.ParseFromString(rec.data())) {
          return bad(off, "metadata record does not parse");
        }
        if ((wal->node_id != 0 || wal->cluster_id != 0) &&
            (md.nodeid() != wal->node_id ||
             md.clusterid() != wal->cluster_id)) {
          return bad(off, "metadata differs from the previous file's");
        }
        wal->node_id = md.nodeid();
        wal->cluster_id = md.clusterid();
        has_metadata = true;
        break;
      }
      case kEntryType: {
        raftpb::Entry e;
        if (!e.ParseFromString(rec.data())) {
          return bad(off, "entry record does not parse");
        }
        // As etcd's ReadAll: a rewritten index replaces the old entry and
        // everything after it; entries before the log's start are skipped.
        const uint64_t base = wal->first_index > 0 ? wal->first_index - 1 : 0;
        if (e.index() <= base) break;
        const uint64_t pos = e.index() - base - 1;
        if (pos > wal->entries.size()) {
          return bad(off, "entry at index " + std::to_string(e.index()) +
                              " skips ahead of the log's last index " +
                              std::to_string(base + wal->entries.size()));
        }
        wal->entries.resize(pos);
        wal->entries.push_back(std::move(e));
        break;
      }
      case kStateType:
        if (!wal->hard_state.ParseFromString(rec.data())) {
          return bad(off, "hard state record does not parse");
        }
        break;
      case kSnapshotType: {
        walpb::Snapshot s;
        if (!s.ParseFromString(rec.data())) {
          return bad(off, "snapshot record does not parse");
        }
        wal->snapshot_index = s.index();
        wal->snapshot_term = s.term();
        break;
      }
      default:
        return InvalidArgumentError(
            "etcd WAL " + std::string(name) + " at byte " +
            std::to_string(off) + ": unknown record type " +
            std::to_string(rec.type()) +
            " (not an etcd 3.4 WAL; kplane imports etcd 3.4's)");
    }
    off += 8 + size + pad;
  }
  // Fewer than 8 bytes after the last frame: zeros, or a cut length word.
  if (off + 8 > data.size() &&
      data.substr(off).find_first_not_of('\0') != std::string_view::npos) {
    return bad(off, "a length word is cut short: the file is truncated");
  }
  if (!has_metadata) {
    return CorruptionError("etcd WAL " + std::string(name) +
                           " has no metadata record (empty or damaged)");
  }
  return Status::Ok();
}

StatusOr<EtcdWal> ReadEtcdWal(FileSystem* fs, const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dir));
  struct File {
    uint64_t seq, index;
    std::string name;
  };
  std::vector<File> files;
  for (const std::string& n : names) {
    if (n.size() < 4 || n.substr(n.size() - 4) != ".wal") continue;
    File f{0, 0, n};
    if (!ParseWalName(n, &f.seq, &f.index)) {
      return InvalidArgumentError("etcd WAL " + dir + "/" + n +
                                  ": not an etcd WAL file name "
                                  "(<16 hex digits>-<16 hex digits>.wal)");
    }
    files.push_back(std::move(f));
  }
  if (files.empty()) {
    return InvalidArgumentError("no etcd WAL files (*.wal) in " + dir);
  }
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.seq < b.seq; });
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].seq != files[i - 1].seq + 1) {
      return InvalidArgumentError("etcd WAL in " + dir + ": " +
                                  files[i - 1].name + " is followed by " +
                                  files[i].name + " (a file is missing)");
    }
  }
  EtcdWal wal;
  wal.first_index = files.front().index;
  uint32_t crc = 0;
  for (const File& f : files) {
    const std::string path = dir + "/" + f.name;
    ASSIGN_OR_RETURN(std::string data, ReadFile(fs, path));
    RETURN_IF_ERROR(ReadEtcdWalFile(path, data, &crc, &wal));
  }
  return wal;
}

StatusOr<EtcdWalMembership> MembershipFromEtcdWal(const EtcdWal& wal) {
  if (wal.first_index != 0) {
    return FailedPreconditionError(
        "the etcd WAL starts at raft index " + std::to_string(wal.first_index) +
        " (older WAL files were purged), so it no longer holds the "
        "cluster's first members");
  }
  EtcdWalMembership out;
  auto find = [&](uint64_t id) {
    return std::find_if(
        out.members.begin(), out.members.end(),
        [id](const etcdserverpb::Member& m) { return m.id() == id; });
  };
  for (const raftpb::Entry& e : wal.entries) {
    if (e.type() != raftpb::EntryConfChange) {
      if (e.type() == raftpb::EntryConfChangeV2) {
        return InvalidArgumentError(
            "etcd WAL entry " + std::to_string(e.index()) +
            " is a ConfChangeV2, which etcd 3.4 never writes");
      }
      continue;
    }
    raftpb::ConfChange cc;
    if (!cc.ParseFromString(e.data())) {
      return CorruptionError("etcd WAL entry " + std::to_string(e.index()) +
                             ": conf change does not parse");
    }
    auto member_from_context = [&]() -> StatusOr<etcdserverpb::Member> {
      etcdserverpb::Member m;
      if (!ParseEtcdMemberJson(cc.context(), &m) || m.id() != cc.node_id()) {
        return CorruptionError(
            "etcd WAL entry " + std::to_string(e.index()) +
            ": conf change context is not etcd's JSON of member " +
            std::to_string(cc.node_id()));
      }
      return m;
    };
    switch (cc.type()) {
      case raftpb::ConfChangeAddNode:
      case raftpb::ConfChangeAddLearnerNode: {
        ASSIGN_OR_RETURN(etcdserverpb::Member m, member_from_context());
        if (cc.type() == raftpb::ConfChangeAddLearnerNode) {
          m.set_islearner(true);
        }
        auto it = find(m.id());
        if (it != out.members.end()) {
          *it = std::move(m);  // a learner promoted (AddNode again)
        } else {
          out.members.push_back(std::move(m));
        }
        break;
      }
      case raftpb::ConfChangeRemoveNode: {
        auto it = find(cc.node_id());
        if (it != out.members.end()) out.members.erase(it);
        out.removed.push_back(cc.node_id());
        break;
      }
      case raftpb::ConfChangeUpdateNode: {
        ASSIGN_OR_RETURN(etcdserverpb::Member m, member_from_context());
        auto it = find(m.id());
        if (it != out.members.end()) {
          *it->mutable_peerurls() = m.peerurls();
        }
        break;
      }
      default:
        return InvalidArgumentError(
            "etcd WAL entry " + std::to_string(e.index()) +
            ": unknown conf change type " + std::to_string(cc.type()));
    }
  }
  return out;
}

}  // namespace kplane::bolt
