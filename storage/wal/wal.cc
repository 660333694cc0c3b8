#include "storage/wal/wal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "base/crc32c.h"
#include "base/logging.h"

namespace kplane::wal {
namespace {

constexpr size_t kHeaderBytes = 4 + 4 + 1 + 8;  // crc, length, type, index
constexpr uint32_t kMaxPayload = 1u << 30;

void PutFixed32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(b, 4);
}
void PutFixed64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(b, 8);
}
uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t GetFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

Status ErrnoError(const std::string& what) {
  return IOError(what + ": " + std::strerror(errno));
}

bool ParseSegmentName(const std::string& name, uint64_t* seq, uint64_t* start) {
  if (name.size() != 16 + 1 + 16 + 4 || name.substr(33) != ".wal" ||
      name[16] != '-') {
    return false;
  }
  // Named copies: `end` points into the parsed string, which must outlive
  // the check of *end (a temporary substr() would be freed by then).
  const std::string seq_hex = name.substr(0, 16);
  const std::string start_hex = name.substr(17, 16);
  char* end = nullptr;
  *seq = std::strtoull(seq_hex.c_str(), &end, 16);
  if (*end != '\0') return false;
  *start = std::strtoull(start_hex.c_str(), &end, 16);
  return *end == '\0';
}

StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + path);
  // Read straight into a buffer of the file's size: growing a string 64 KiB
  // at a time copied a 64 MiB segment ~log2(1024) times and page-faulted on
  // every copy (a large share of a restart's time on this VM).
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoError("stat " + path);
    ::close(fd);
    return s;
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t filled = 0;
  while (true) {
    if (filled == data.size()) data.resize(data.size() + (1 << 16));
    ssize_t n = ::read(fd, data.data() + filled, data.size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = ErrnoError("read " + path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  ::close(fd);
  data.resize(filled);
  return data;
}

Status WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("wal write");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

}  // namespace

std::string SegmentName(uint64_t sequence, uint64_t start_index) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64 "-%016" PRIx64 ".wal", sequence,
                start_index);
  return buf;
}

void EncodeRecord(const Record& r, std::string* out) {
  size_t start = out->size();
  PutFixed32(out, 0);  // crc placeholder
  PutFixed32(out, static_cast<uint32_t>(r.payload.size()));
  out->push_back(static_cast<char>(r.type));
  PutFixed64(out, r.index);
  out->append(r.payload);
  uint32_t crc =
      crc32c::Value(out->data() + start + 4, out->size() - start - 4);
  for (int i = 0; i < 4; ++i) {
    (*out)[start + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
  }
}

StatusOr<size_t> DecodeRecord(std::string_view in, Record* out) {
  if (in.empty()) return size_t{0};
  if (in.size() < kHeaderBytes) {
    // A short tail of zeros is unwritten space; anything else is torn.
    if (std::all_of(in.begin(), in.end(), [](char c) { return c == 0; })) {
      return size_t{0};
    }
    return CorruptionError("truncated record header");
  }
  uint32_t crc = GetFixed32(in.data());
  uint32_t len = GetFixed32(in.data() + 4);
  if (crc == 0 && len == 0 && in[8] == 0 && GetFixed64(in.data() + 9) == 0) {
    return size_t{0};
  }
  if (len > kMaxPayload) return CorruptionError("record length out of range");
  if (in.size() < kHeaderBytes + len) {
    return CorruptionError("truncated record payload");
  }
  uint32_t actual = crc32c::Value(in.data() + 4, kHeaderBytes - 4 + len);
  if (actual != crc) return CorruptionError("record checksum mismatch");
  out->type = static_cast<uint8_t>(in[8]);
  out->index = GetFixed64(in.data() + 9);
  out->payload.assign(in.data() + kHeaderBytes, len);
  return kHeaderBytes + len;
}

Wal::Wal(std::string dir, Options options)
    : dir_(std::move(dir)), options_(options) {}

Wal::~Wal() {
  if (fd_ >= 0) {
    if (sticky_error_.ok() && !buffer_.empty()) (void)WriteBuffered();
    ::close(fd_);
  }
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

StatusOr<std::unique_ptr<Wal>> Wal::Open(const std::string& dir,
                                         const Options& options,
                                         const ReplayFn& replay) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError("mkdir " + dir);
  }
  std::unique_ptr<Wal> wal(new Wal(dir, options));
  wal->dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (wal->dir_fd_ < 0) return ErrnoError("open " + dir);

  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError("opendir " + dir);
  std::vector<SegmentInfo> segs;
  std::vector<std::string> unfinished;
  while (struct dirent* e = ::readdir(d)) {
    uint64_t seq, start;
    std::string name = e->d_name;
    if (ParseSegmentName(name, &seq, &start)) {
      segs.push_back({seq, start, dir + "/" + name, 0});
    } else if (name.size() > 8 && name.substr(name.size() - 8) == ".wal.tmp") {
      unfinished.push_back(dir + "/" + name);
    }
  }
  ::closedir(d);
  // A segment Cut was building when the process died: the log continues in
  // the segment before it.
  for (const std::string& path : unfinished) {
    if (::unlink(path.c_str()) != 0) return ErrnoError("unlink " + path);
  }
  std::sort(segs.begin(), segs.end(),
            [](const SegmentInfo& a, const SegmentInfo& b) {
              return a.sequence < b.sequence;
            });
  for (size_t i = 1; i < segs.size(); ++i) {
    if (segs[i].sequence != segs[i - 1].sequence + 1) {
      return CorruptionError("wal: missing segment between " +
                             segs[i - 1].path + " and " + segs[i].path);
    }
  }
  if (segs.empty()) {
    RETURN_IF_ERROR(wal->CreateSegment(0, 0));
    return wal;
  }

  uint64_t last_valid = 0;
  for (size_t i = 0; i < segs.size(); ++i) {
    ASSIGN_OR_RETURN(std::string data, ReadFile(segs[i].path));
    size_t pos = 0;
    Record rec;
    while (pos < data.size()) {
      StatusOr<size_t> n =
          DecodeRecord(std::string_view(data).substr(pos), &rec);
      if (!n.ok()) {
        if (i + 1 != segs.size()) {
          return n.status().Annotate("wal: " + segs[i].path + " at offset " +
                                     std::to_string(pos));
        }
        LOG(WARNING) << "wal: torn tail in " << segs[i].path << " at offset "
                     << pos << " (" << n.status().message() << "); truncating "
                     << (data.size() - pos) << " bytes";
        break;
      }
      if (*n == 0) break;
      replay(rec);
      pos += *n;
    }
    segs[i].bytes = pos;
    last_valid = pos;
  }
  wal->segments_ = segs;
  wal->segments_.pop_back();
  RETURN_IF_ERROR(wal->OpenForAppend(segs.back(), last_valid));
  return wal;
}

Status Wal::OpenForAppend(const SegmentInfo& seg, uint64_t valid_bytes) {
  fd_ = ::open(seg.path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) return ErrnoError("open " + seg.path);
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ErrnoError("stat " + seg.path);
  if (static_cast<uint64_t>(st.st_size) != valid_bytes) {
    if (::ftruncate(fd_, static_cast<off_t>(valid_bytes)) != 0) {
      return ErrnoError("truncate " + seg.path);
    }
    if (::fdatasync(fd_) != 0) return ErrnoError("fdatasync " + seg.path);
  }
  if (::lseek(fd_, static_cast<off_t>(valid_bytes), SEEK_SET) < 0) {
    return ErrnoError("seek " + seg.path);
  }
  offset_ = valid_bytes;
  preallocated_to_ = valid_bytes;
  SegmentInfo cur = seg;
  cur.bytes = valid_bytes;
  segments_.push_back(cur);
  return Status::Ok();
}

Status Wal::CreateSegment(uint64_t sequence, uint64_t start_index) {
  std::string path = dir_ + "/" + SegmentName(sequence, start_index);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create " + path);
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  offset_ = 0;
  preallocated_to_ = 0;
  segments_.push_back({sequence, start_index, path, 0});
  if (::fsync(dir_fd_) != 0) return ErrnoError("fsync " + dir_);
  return Status::Ok();
}

Status Wal::Append(const Record& record) {
  if (!sticky_error_.ok()) return sticky_error_;
  EncodeRecord(record, &buffer_);
  return WriteBuffered();
}

Status Wal::Append(const std::vector<Record>& records) {
  if (!sticky_error_.ok()) return sticky_error_;
  for (const Record& r : records) EncodeRecord(r, &buffer_);
  return WriteBuffered();
}

Status Wal::WriteBuffered() {
  if (buffer_.empty()) return Status::Ok();
  if (options_.preallocate_bytes > 0 &&
      offset_ + buffer_.size() > preallocated_to_) {
    uint64_t target = offset_ + buffer_.size() + options_.preallocate_bytes;
    // Best effort: some filesystems lack fallocate; appends still work.
    if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(target)) ==
        0) {
      preallocated_to_ = target;
    } else {
      preallocated_to_ = UINT64_MAX;
    }
  }
  Status s = WriteAll(fd_, buffer_.data(), buffer_.size());
  if (!s.ok()) {
    sticky_error_ = s;
    return s;
  }
  offset_ += buffer_.size();
  segments_.back().bytes = offset_;
  buffer_.clear();
  return Status::Ok();
}

Status Wal::Sync() {
  if (!sticky_error_.ok()) return sticky_error_;
  if (::fdatasync(fd_) != 0) {
    sticky_error_ = ErrnoError("wal fdatasync");
    return sticky_error_;
  }
  return Status::Ok();
}

bool Wal::NeedsCut() const { return offset_ >= options_.segment_bytes; }

Status Wal::Cut(uint64_t next_index, const std::vector<Record>& header) {
  RETURN_IF_ERROR(Sync());
  // Give back the preallocated tail of the finished segment.
  if (::ftruncate(fd_, static_cast<off_t>(offset_)) != 0) {
    sticky_error_ = ErrnoError("truncate wal segment");
    return sticky_error_;
  }
  // The next segment gets its name only once its header records are
  // durable. Were it named first, a crash before the header was synced
  // would leave a last segment without them; the log would keep appending
  // there after a restart, and releasing the older segments would then drop
  // the only copies of the identity, hard state and snapshot marker.
  const uint64_t sequence = segments_.back().sequence + 1;
  const std::string path = dir_ + "/" + SegmentName(sequence, next_index);
  const std::string tmp = path + ".tmp";
  std::string data;
  for (const Record& r : header) EncodeRecord(r, &data);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  Status s = fd < 0 ? ErrnoError("create " + tmp) : Status::Ok();
  if (s.ok()) s = WriteAll(fd, data.data(), data.size());
  if (s.ok() && ::fdatasync(fd) != 0) s = ErrnoError("fdatasync " + tmp);
  if (s.ok() && options_.crash_hook) options_.crash_hook("cut:created");
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = ErrnoError("rename " + tmp);
  }
  if (s.ok() && ::fsync(dir_fd_) != 0) s = ErrnoError("fsync " + dir_);
  if (!s.ok()) {
    if (fd >= 0) ::close(fd);
    sticky_error_ = s;
    return s;
  }
  ::close(fd_);
  fd_ = fd;
  offset_ = data.size();
  preallocated_to_ = offset_;
  segments_.push_back({sequence, next_index, path, offset_});
  return Status::Ok();
}

Status Wal::ReleaseBefore(uint64_t index) {
  size_t n = 0;
  while (n + 1 < segments_.size() && segments_[n + 1].start_index <= index) {
    ++n;
  }
  if (n == 0) return Status::Ok();
  for (size_t i = 0; i < n; ++i) {
    if (::unlink(segments_[i].path.c_str()) != 0) {
      return ErrnoError("unlink " + segments_[i].path);
    }
  }
  segments_.erase(segments_.begin(), segments_.begin() + n);
  if (::fsync(dir_fd_) != 0) return ErrnoError("fsync " + dir_);
  return Status::Ok();
}

std::vector<SegmentInfo> Wal::Segments() const { return segments_; }

uint64_t Wal::SizeBytes() const {
  uint64_t total = 0;
  for (const auto& s : segments_) total += s.bytes;
  return total;
}

}  // namespace kplane::wal
