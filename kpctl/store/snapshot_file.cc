#include "kpctl/store/snapshot_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "base/crc32c.h"
#include "kpctl/store/bolt_status.h"
#include "schemas/storage.pb.h"
#include "storage/bolt/etcd_backend.h"
#include "storage/mvcc/store.h"
#include "storage/server/cluster.h"
#include "storage/server/etcd_import.h"

namespace kplane::kpctl {

namespace fs = std::filesystem;

namespace {

Status Errno(const std::string& what) {
  return IOError(what + ": " + std::strerror(errno));
}

// Go's os.Stat error text ("stat /x: no such file or directory").
Status StatError(const std::string& path, int err) {
  std::string msg = std::strerror(err);
  for (char& ch : msg)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kIOError,
                "stat " + path + ": " + msg);
}

StatusOr<std::string> ReadFile(const std::string& path) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0) return StatError(path, errno);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errno("open " + path);
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  return data;
}

Status WriteFileSynced(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("open " + path);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = Errno("write " + path);
      ::close(fd);
      return s;
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status s = Errno("fsync " + path);
    ::close(fd);
    return s;
  }
  ::close(fd);
  return Status::Ok();
}

bool IsPacked(std::string_view data) {
  return data.substr(0, kPackedSnapshotMagic.size()) == kPackedSnapshotMagic;
}

// Writes the files of a packed snapshot under `dir`; returns their total
// size.
StatusOr<int64_t> Unpack(const std::vector<PackedFile>& files,
                         const std::string& dir) {
  int64_t total = 0;
  for (const PackedFile& f : files) {
    fs::path p = fs::path(dir) / f.name;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec)
      return IOError("create " + p.parent_path().string() + ": " +
                     ec.message());
    RETURN_IF_ERROR(WriteFileSynced(p.string(), f.data));
    total += static_cast<int64_t>(f.data.size());
  }
  return total;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kpctl-snapshot-XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

StatusOr<std::vector<PackedFile>> ParsePackedSnapshot(std::string_view data,
                                                      bool skip_crc) {
  if (!IsPacked(data)) {
    return InvalidArgumentError("not a kplane snapshot (no KPSNAP1 header)");
  }
  std::vector<PackedFile> files;
  size_t off = kPackedSnapshotMagic.size();
  while (off < data.size()) {
    if (off + 4 > data.size()) {
      return InvalidArgumentError("truncated snapshot (header length)");
    }
    uint32_t n =
        (static_cast<uint32_t>(static_cast<unsigned char>(data[off])) << 24) |
        (static_cast<uint32_t>(static_cast<unsigned char>(data[off + 1]))
         << 16) |
        (static_cast<uint32_t>(static_cast<unsigned char>(data[off + 2]))
         << 8) |
        static_cast<uint32_t>(static_cast<unsigned char>(data[off + 3]));
    off += 4;
    if (off + n > data.size()) {
      return InvalidArgumentError("truncated snapshot (file header)");
    }
    storagepb::SnapshotFile h;
    if (!h.ParseFromArray(data.data() + off, static_cast<int>(n))) {
      return InvalidArgumentError("malformed snapshot file header");
    }
    off += n;
    if (h.last()) break;
    // h.size() is the file's word (up to 2^64 - 1): off + h.size() could
    // wrap around and send the parser back to an earlier header. off is at
    // most data.size() here.
    if (h.size() > data.size() - off) {
      return InvalidArgumentError("truncated snapshot (" + h.name() + ")");
    }
    std::string_view body = data.substr(off, h.size());
    off += h.size();
    fs::path p(h.name());
    if (h.name().empty() || p.is_absolute() ||
        h.name().find("..") != std::string::npos) {
      return InvalidArgumentError("bad file name in snapshot: \"" + h.name() +
                                  "\"");
    }
    if (!skip_crc && crc32c::Value(body) != h.crc32c()) {
      return Status(StatusCode::kCorruption,
                    "snapshot file " + h.name() + " fails its CRC-32C check");
    }
    files.push_back({h.name(), body});
  }
  return files;
}

Status SaveSnapshot(storage::Maintenance* member, const std::string& path) {
  const std::string part = path + ".part";
  int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return IOError("could not open " + part + " (" + std::strerror(errno) +
                   ")");
  }
  std::string head;
  auto written = member->Snapshot([&](std::string_view blob) -> Status {
    if (head.size() < kPackedSnapshotMagic.size()) {
      head.append(blob.substr(0, kPackedSnapshotMagic.size() - head.size()));
    }
    size_t off = 0;
    while (off < blob.size()) {
      ssize_t n = ::write(fd, blob.data() + off, blob.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno("write " + part);
      }
      off += static_cast<size_t>(n);
    }
    return Status::Ok();
  });
  Status s = written.ok() ? Status::Ok() : written.status();
  if (s.ok() && !IsPacked(head) && *written % 512 != 32) {
    s = InvalidArgumentError(
        "sha256 checksum not found [bytes: " + std::to_string(*written) + "]");
  }
  if (s.ok() && ::fsync(fd) != 0) s = Errno("fsync " + part);
  ::close(fd);
  if (s.ok() && ::rename(part.c_str(), path.c_str()) != 0) {
    s = IOError("could not rename " + part + " to " + path + " (" +
                std::strerror(errno) + ")");
  }
  if (!s.ok()) ::unlink(part.c_str());
  return s;
}

StatusOr<SnapshotStatus> SnapshotFileStatus(const std::string& path) {
  ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  if (!IsPacked(data)) return BoltSnapshotStatus(data);

  ASSIGN_OR_RETURN(std::vector<PackedFile> files, ParsePackedSnapshot(data));
  TempDir tmp;
  if (tmp.path().empty()) return IOError("mkdtemp failed");
  ASSIGN_OR_RETURN(int64_t total, Unpack(files, tmp.path()));
  mvcc::Options o;
  o.dir = tmp.path() + "/db";
  ASSIGN_OR_RETURN(std::unique_ptr<mvcc::Store> store, mvcc::Store::Open(o));
  SnapshotStatus st;
  st.revision = store->CurrentRevision();
  ASSIGN_OR_RETURN(etcdserverpb::HashKVResponse h, store->HashKV(0));
  st.hash = h.hash();
  etcdserverpb::RangeRequest all;
  all.set_key(std::string(1, '\0'));
  all.set_range_end(std::string(1, '\0'));
  all.set_count_only(true);
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse r, store->Range(all));
  st.total_keys = r.count();
  st.total_size = total;
  store->Close();
  return st;
}

namespace {

// bbolt's meta page: a 16-byte page header, then magic 0xED0CDAED (host
// order, little-endian on every etcd host).
bool IsBolt(std::string_view data) {
  return data.size() >= 20 && static_cast<unsigned char>(data[16]) == 0xED &&
         static_cast<unsigned char>(data[17]) == 0xDA &&
         static_cast<unsigned char>(data[18]) == 0x0C &&
         static_cast<unsigned char>(data[19]) == 0xED;
}

std::string HexBytes(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char ch : s) {
    out += kHex[static_cast<unsigned char>(ch) >> 4];
    out += kHex[static_cast<unsigned char>(ch) & 15];
  }
  return out;
}

// The store a restore writes, read from the snapshot: either a packed
// checkpoint's db/ files or an etcd backend's history (one of the two).
struct RestoredData {
  std::vector<PackedFile> db_files;
  std::optional<mvcc::Store::Export> history;
  storagepb::AuthRecord auth;
};

// KPSNAP1: the checkpoint's files and the old membership's auth state.
StatusOr<RestoredData> ReadPacked(std::string_view data, bool skip_crc) {
  RestoredData out;
  ASSIGN_OR_RETURN(std::vector<PackedFile> files,
                   ParsePackedSnapshot(data, skip_crc));
  for (const PackedFile& f : files) {
    if (f.name.rfind("db/", 0) == 0) out.db_files.push_back(f);
    if (f.name == "cluster.pb") {
      storagepb::ClusterRecord old;
      if (!old.ParseFromArray(f.data.data(), static_cast<int>(f.data.size()))) {
        return CorruptionError("snapshot's cluster.pb does not parse");
      }
      out.auth = old.auth();
    }
  }
  if (out.db_files.empty()) {
    return InvalidArgumentError("snapshot holds no database files (db/...)");
  }
  return out;
}

// etcd's bbolt snapshot (etcdctl's file, or a member's member/snap/db with
// skip_hash_check): checks the trailing SHA-256 as etcdctl does, then reads
// the key, lease, meta and auth buckets.
StatusOr<RestoredData> ReadBolt(std::string_view data, bool skip_hash_check) {
  constexpr size_t kHash = 32;
  const bool has_hash = data.size() % 512 == kHash;
  if (!has_hash && !skip_hash_check) {
    return InvalidArgumentError(
        "snapshot missing hash but --skip-hash-check=false");
  }
  std::string_view db = has_hash ? data.substr(0, data.size() - kHash) : data;
  if (has_hash && !skip_hash_check) {
    const std::string want(data.substr(db.size()));
    const std::string got = bolt::Sha256(db);
    if (got != want) {
      return Status(StatusCode::kCorruption,
                    "expected sha256 " + HexBytes(want) + ", got " +
                        HexBytes(got) + " (the snapshot file is damaged)");
    }
  }
  ASSIGN_OR_RETURN(bolt::EtcdBackend b, bolt::ReadEtcdBackend(db));
  // The same conversion as `kplane store` importing an etcd data dir.
  ASSIGN_OR_RETURN(storage::EtcdBackendData d,
                   storage::FromEtcdBackend(std::move(b)));
  RestoredData out;
  out.history = std::move(d.history);
  out.auth = std::move(d.auth);
  return out;
}

// Removes a staging directory unless released.
class StagingDir {
 public:
  explicit StagingDir(std::string path) : path_(std::move(path)) {}
  ~StagingDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace

Status RestoreSnapshot(const std::string& path, const RestoreOptions& o) {
  ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  std::string data_dir = o.data_dir.empty() ? o.name + ".etcd" : o.data_dir;
  while (data_dir.size() > 1 && data_dir.back() == '/') data_dir.pop_back();
  if (fs::exists(data_dir)) {
    return Status(StatusCode::kAlreadyExists,
                  "data-dir \"" + data_dir + "\" exists");
  }

  // The new membership, as `kplane store` computes it from the same flags.
  std::vector<std::string> peer_urls;
  {
    std::string u;
    for (char ch : o.initial_advertise_peer_urls + ",") {
      if (ch == ',') {
        if (!u.empty()) peer_urls.push_back(u);
        u.clear();
      } else {
        u += ch;
      }
    }
  }
  std::string ic = o.initial_cluster;
  if (ic.empty()) {
    ic = o.name + "=" +
         (peer_urls.empty() ? "http://localhost:2380" : peer_urls.front());
  }
  ASSIGN_OR_RETURN(std::vector<storage::InitialMember> members,
                   storage::ParseInitialCluster(ic));
  bool found = false;
  for (const auto& m : members) found = found || m.name == o.name;
  if (!found) {
    return InvalidArgumentError("member name \"" + o.name +
                                "\" is not in --initial-cluster \"" + ic +
                                "\"");
  }
  storagepb::ClusterRecord record =
      storage::NewClusterRecord(members, o.initial_cluster_token);

  // The format is told by content, not by the file's name.
  StatusOr<RestoredData> restored =
      IsPacked(data) ? ReadPacked(data, o.skip_hash_check)
      : IsBolt(data)
          ? ReadBolt(data, o.skip_hash_check)
          : StatusOr<RestoredData>(InvalidArgumentError(
                path +
                " is not a snapshot file: neither an etcd (bbolt) snapshot "
                "(etcdctl snapshot save) nor a kplane one (KPSNAP1)"));
  if (!restored.ok()) return restored.status();
  // The old cluster's membership is replaced by the new one, but its users
  // and roles are kept (etcd's restore keeps its auth buckets).
  *record.mutable_auth() = std::move(restored->auth);

  // Everything is built in <data-dir>.part and renamed into place at the
  // end, so a restore that fails leaves no data dir behind.
  const std::string staging = data_dir + ".part";
  {
    std::error_code ec;
    fs::remove_all(staging, ec);
  }
  StagingDir cleanup(staging);
  const std::string member_dir = staging + "/member";
  mvcc::Options mo;
  mo.dir = member_dir + "/db";
  if (restored->history) {
    // The restored member starts a new log at index 1, so the store must
    // not count any entry as applied (etcd's restore resets its consistent
    // index the same way).
    restored->history->consistent_index = 0;
    Status st = mvcc::Store::CreateFromExport(mo, *restored->history);
    if (!st.ok()) return st.Annotate("restore " + path);
  } else {
    RETURN_IF_ERROR(Unpack(restored->db_files, member_dir).status());
    // The checkpoint remembers the raft index it was taken at: forget it,
    // as above.
    ASSIGN_OR_RETURN(auto store, mvcc::Store::Open(mo));
    Status rs = store->ResetConsistentIndex();
    store->Close();
    if (!rs.ok()) return rs.Annotate("reset restored db");
  }
  ASSIGN_OR_RETURN(auto membership, storage::Membership::Open(
                                        member_dir + "/cluster.pb", record));
  RETURN_IF_ERROR(membership->Save());
  if (::rename(staging.c_str(), data_dir.c_str()) != 0) {
    return Errno("rename " + staging + " to " + data_dir);
  }
  cleanup.Release();
  return Status::Ok();
}

}  // namespace kplane::kpctl
