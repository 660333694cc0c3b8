#include "storage/wal/wal.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "base/crc32c.h"
#include "base/file_system.h"
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

// What the bytes at some offset of a segment are.
struct Probe {
  enum Kind {
    kRecord,       // a whole record with a good checksum
    kCleanEnd,     // nothing, or a zero header (unwritten space)
    kCutShort,     // a header or payload that runs past the end of the data
    kBadChecksum,  // a whole record whose checksum does not match
  };
  Kind kind;
  size_t size = 0;  // kRecord, kBadChecksum: header + payload bytes
};

bool AllZero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == 0; });
}

Probe ProbeRecord(std::string_view in) {
  if (in.size() < kHeaderBytes) {
    // A short run of zeros is unwritten space; anything else is torn.
    return {AllZero(in) ? Probe::kCleanEnd : Probe::kCutShort};
  }
  if (AllZero(in.substr(0, kHeaderBytes))) return {Probe::kCleanEnd};
  const uint64_t len = GetFixed32(in.data() + 4);
  if (len > in.size() - kHeaderBytes) return {Probe::kCutShort};
  const size_t size = kHeaderBytes + static_cast<size_t>(len);
  const uint32_t crc = GetFixed32(in.data());
  const uint32_t actual = crc32c::Value(in.data() + 4, size - 4);
  return {actual == crc ? Probe::kRecord : Probe::kBadChecksum, size};
}

// The offset of the first whole, checksummed record starting at or after
// `from`, or npos. Runs of zeros are skipped quickly; any other offset costs
// a header check and, when the length fits, a CRC.
size_t FindValidRecord(std::string_view data, size_t from) {
  size_t off = from;
  while (off + kHeaderBytes <= data.size()) {
    if (AllZero(data.substr(off, kHeaderBytes))) {
      // No header starting here..(next non-zero byte - 17) can be non-zero.
      size_t nz = data.find_first_not_of('\0', off + kHeaderBytes);
      if (nz == std::string_view::npos) return std::string_view::npos;
      off = std::max(off + 1, nz - (kHeaderBytes - 1));
      continue;
    }
    if (ProbeRecord(data.substr(off)).kind == Probe::kRecord) return off;
    ++off;
  }
  return std::string_view::npos;
}

// True if one of the 512-byte disk sectors the record [pos, pos+size)
// touches holds only zeros within the record: a write whose size reached
// the disk but whose data did not (etcd's isTornEntry).
bool HasZeroSector(std::string_view data, size_t pos, size_t size) {
  constexpr size_t kSector = 512;
  const size_t end = std::min(data.size(), pos + size);
  for (size_t at = pos; at < end;) {
    size_t next = std::min(end, (at / kSector + 1) * kSector);
    if (AllZero(data.substr(at, next - at))) return true;
    at = next;
  }
  return false;
}

std::string At(const std::string& path, size_t offset) {
  return "wal: " + path + " at offset " + std::to_string(offset);
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
  const Probe p = ProbeRecord(in);
  switch (p.kind) {
    case Probe::kCleanEnd:
      return size_t{0};
    case Probe::kCutShort:
      if (in.size() >= kHeaderBytes &&
          GetFixed32(in.data() + 4) > kMaxPayload) {
        return CorruptionError("record length out of range");
      }
      return CorruptionError(in.size() < kHeaderBytes
                                 ? "truncated record header"
                                 : "truncated record payload");
    case Probe::kBadChecksum:
      return CorruptionError("record checksum mismatch");
    case Probe::kRecord:
      break;
  }
  out->type = static_cast<uint8_t>(in[8]);
  out->index = GetFixed64(in.data() + 9);
  out->payload.assign(in.data() + kHeaderBytes, p.size - kHeaderBytes);
  return p.size;
}

Wal::Wal(std::string dir, Options options)
    : dir_(std::move(dir)),
      options_(std::move(options)),
      fs_(options_.file_system != nullptr ? options_.file_system
                                          : FileSystem::Default()) {}

Wal::~Wal() {
  if (file_) {
    if (sticky_error_.ok() && !buffer_.empty()) (void)WriteBuffered();
    (void)file_->Close();
  }
}

StatusOr<size_t> Wal::ReplaySegment(const std::string& path,
                                    std::string_view data, bool last,
                                    const ReplayFn& replay) {
  Record rec;
  size_t pos = 0;
  while (true) {
    const Probe p = ProbeRecord(data.substr(pos));
    if (p.kind == Probe::kRecord) {
      rec.type = static_cast<uint8_t>(data[pos + 8]);
      rec.index = GetFixed64(data.data() + pos + 9);
      rec.payload.assign(data.data() + pos + kHeaderBytes,
                         p.size - kHeaderBytes);
      replay(rec);
      pos += p.size;
      continue;
    }
    if (p.kind == Probe::kCleanEnd && pos == data.size()) return pos;
    // Something other than a record. Only the end of the last segment may
    // hold a write that never completed; everything before it was synced.
    std::string what;
    switch (p.kind) {
      case Probe::kCleanEnd:
        what = "zeros";
        break;
      case Probe::kCutShort:
        what = "a record cut short by the end of the file";
        break;
      case Probe::kBadChecksum:
        what = "a record failing its checksum";
        break;
      case Probe::kRecord:
        break;  // replayed above
    }
    if (!last) {
      return CorruptionError(At(path, pos) + ": " + what +
                             " in a segment that is not the last");
    }
    // A torn write is cut short, or whole but with a sector that never
    // reached the disk. A whole record with a bad checksum and no such
    // sector is damage (a flipped bit), never a torn write.
    if (p.kind == Probe::kBadChecksum && !HasZeroSector(data, pos, p.size)) {
      return CorruptionError(At(path, pos) + ": record checksum mismatch");
    }
    // Nothing valid may follow a torn write: a record after it means the
    // bytes at `pos` were written and synced once, and were damaged since.
    const size_t next = FindValidRecord(data, pos + 1);
    if (next != std::string_view::npos) {
      return CorruptionError(At(path, pos) + ": " + what +
                             ", followed by a valid record at offset " +
                             std::to_string(next));
    }
    if (p.kind != Probe::kCleanEnd) {
      LOG(WARNING) << At(path, pos) << ": torn tail (" << what
                   << "); truncating " << (data.size() - pos) << " bytes";
    }
    return pos;
  }
}

StatusOr<std::unique_ptr<Wal>> Wal::Open(const std::string& dir,
                                         const Options& options,
                                         const ReplayFn& replay) {
  std::unique_ptr<Wal> wal(new Wal(dir, options));
  FileSystem* fs = wal->fs_;
  RETURN_IF_ERROR(CreateDirAll(fs, dir, kPrivateDirMode));

  ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dir));
  std::vector<SegmentInfo> segs;
  std::vector<std::string> unfinished;
  for (const std::string& name : names) {
    uint64_t seq, start;
    if (ParseSegmentName(name, &seq, &start)) {
      segs.push_back({seq, start, dir + "/" + name, 0});
    } else if (name.size() > 8 && name.substr(name.size() - 8) == ".wal.tmp") {
      unfinished.push_back(dir + "/" + name);
    }
  }
  // A segment Cut was building when the process died: the log continues in
  // the segment before it.
  for (const std::string& path : unfinished) {
    RETURN_IF_ERROR(fs->Remove(path));
  }
  if (!unfinished.empty()) RETURN_IF_ERROR(fs->SyncDir(dir));
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
    ASSIGN_OR_RETURN(std::string data, ReadFile(fs, segs[i].path));
    ASSIGN_OR_RETURN(
        size_t valid,
        wal->ReplaySegment(segs[i].path, data, i + 1 == segs.size(), replay));
    segs[i].bytes = valid;
    last_valid = valid;
  }
  wal->segments_ = segs;
  wal->segments_.pop_back();
  RETURN_IF_ERROR(wal->OpenForAppend(segs.back(), last_valid));
  return wal;
}

Status Wal::OpenForAppend(const SegmentInfo& seg, uint64_t valid_bytes) {
  ASSIGN_OR_RETURN(file_, fs_->OpenWritable(seg.path, OpenMode::kAppend));
  if (file_->Size() != valid_bytes) {
    // Cut off the torn tail, durably, before appending after it.
    RETURN_IF_ERROR(file_->Truncate(valid_bytes));
    RETURN_IF_ERROR(file_->Sync());
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
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                   fs_->OpenWritable(path, OpenMode::kCreateNew));
  if (file_) (void)file_->Close();
  file_ = std::move(f);
  offset_ = 0;
  preallocated_to_ = 0;
  segments_.push_back({sequence, start_index, path, 0});
  return fs_->SyncDir(dir_);
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
    // Best effort: some file systems cannot; appends still work (and a full
    // disk shows up as the append's own error).
    preallocated_to_ = file_->Preallocate(target).ok() ? target : UINT64_MAX;
  }
  Status s = file_->Append(buffer_);
  if (!s.ok()) {
    if (!s.Is(StatusCode::kNoSpace)) {
      sticky_error_ = s.Annotate("wal append");
      return sticky_error_;
    }
    // A full disk: the write may have put part of the buffer into the
    // file. Cut the file back to its last whole record, so the log is as
    // it was before this call and the caller may try the same records
    // again. Were the partial bytes left, the next append would land after
    // them, and a restart would find damage followed by valid records.
    // Shrinking a file needs no new blocks; if even that fails, what the
    // file holds is unknown: sticky.
    buffer_.clear();
    if (file_->Size() != offset_) {
      Status t = file_->Truncate(offset_);
      if (!t.ok()) {
        sticky_error_ = t.Annotate("wal append: undoing a partial write (" +
                                   s.ToString() + ")");
        return sticky_error_;
      }
    }
    return s.Annotate("wal append");
  }
  offset_ += buffer_.size();
  segments_.back().bytes = offset_;
  buffer_.clear();
  return Status::Ok();
}

Status Wal::Sync() {
  if (!sticky_error_.ok()) return sticky_error_;
  Status s = file_->Sync();
  if (!s.ok()) {
    sticky_error_ = s.Annotate("wal sync");
    return sticky_error_;
  }
  return Status::Ok();
}

bool Wal::NeedsCut() const { return offset_ >= options_.segment_bytes; }

Status Wal::Cut(uint64_t next_index, const std::vector<Record>& header) {
  RETURN_IF_ERROR(Sync());
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
  bool named = false;  // the rename happened: the log changed
  auto s = [&]() -> StatusOr<std::unique_ptr<WritableFile>> {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
                     fs_->OpenWritable(tmp, OpenMode::kTruncate));
    RETURN_IF_ERROR(f->Append(data));
    RETURN_IF_ERROR(f->Sync());
    if (options_.crash_hook) options_.crash_hook("cut:created");
    RETURN_IF_ERROR(fs_->Rename(tmp, path));
    named = true;
    RETURN_IF_ERROR(fs_->SyncDir(dir_));
    return f;
  }();
  if (!s.ok()) {
    if (!named && s.status().Is(StatusCode::kNoSpace)) {
      // A full disk before the new segment got its name: the log is
      // unchanged and goes on in the current segment (everything in it is
      // synced above). The half-built file is removed now if it can be
      // (Open removes a leftover one anyway); the caller may cut again.
      (void)fs_->Remove(tmp);
      return s.status().Annotate("wal cut");
    }
    sticky_error_ = s.status().Annotate("wal cut");
    return sticky_error_;
  }
  // Closing the finished segment gives back its preallocated tail.
  (void)file_->Close();
  file_ = std::move(*s);
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
  size_t removed = 0;
  Status s;
  while (removed < n && s.ok()) {
    s = fs_->Remove(segments_[removed].path);
    if (s.ok()) ++removed;
  }
  segments_.erase(segments_.begin(), segments_.begin() + removed);
  RETURN_IF_ERROR(s);
  return fs_->SyncDir(dir_);
}

std::vector<SegmentInfo> Wal::Segments() const { return segments_; }

uint64_t Wal::SizeBytes() const {
  uint64_t total = 0;
  for (const auto& s : segments_) total += s.bytes;
  return total;
}

}  // namespace kplane::wal
