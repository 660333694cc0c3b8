// Wal: a segmented, checksummed, append-only write-ahead log.
//
// The replicated store writes every raft entry, hard state and snapshot
// marker here and fsyncs before it acknowledges anything (storage/server).
// The log knows nothing of raft: a record is (type, index, payload) and the
// caller gives meaning to types. `index` is the raft index for entries (0 for
// records without one); the log uses it only to name segments and to decide
// which segments may be released. The byte format is in FORMAT.md.
//
// Life cycle:
//   auto wal = Wal::Open(dir, options, [&](const Record& r) { replay(r); });
//   wal->Append({...});  wal->Sync();        // durable after Sync returns
//   if (wal->NeedsCut()) wal->Cut(next_index, {hard_state_record});
//   wal->ReleaseBefore(snapshot_index);       // after a snapshot is durable
//
// Open() replays every record of every live segment, oldest first. It
// repairs a torn tail, etcd's wal.Repair rule: the LAST record of the LAST
// segment may be a write that never completed -- cut short by the end of the
// file, or whole but holding a 512-byte sector of zeros -- provided no valid
// record follows it; the file is truncated there. Anything else (a checksum
// mismatch, a bad length, zeros or garbage followed by a valid record,
// damage in an earlier segment, a missing segment) is kCorruption naming the
// file and the offset, and nothing is changed on disk: those bytes were
// synced and acknowledged, so the node must not start on them.
//
// All files go through Options::file_system (base/file_system.h): segments
// are created 0600, the directory 0700. Errors are sticky (leveldb's
// bg_error_): after a failed write or sync the log refuses all further
// writes, because the file's contents are unknown; failed() then says so.
// A full disk is kNoSpace, other failures kIOError.
//
// A full disk met by a write is the exception, and is retryable: the file's
// contents are known, because the log undoes the write. Append cuts the
// segment back to its last whole record (a write may have stored part of
// the records before ENOSPC) and returns kNoSpace with the log as it was
// before the call, so the caller may append the same records again once
// there is space. Cut that meets a full disk before the new segment is
// named removes the half-built file and returns kNoSpace; the log goes on in
// the current segment (already synced), and a later Cut may try again.
// A failed sync stays sticky whatever its errno: after a failed fsync the
// kernel may have dropped the dirty pages, so nothing is known (as etcd and
// PostgreSQL treat it).
//
// Thread-safety: not thread-safe; one owner (the raft loop) calls it.
#ifndef KPLANE_STORAGE_WAL_WAL_H_
#define KPLANE_STORAGE_WAL_WAL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_system.h"
#include "base/statusor.h"

namespace kplane::wal {

struct Record {
  uint8_t type = 0;
  uint64_t index = 0;
  std::string payload;
};

struct Options {
  // A new segment is started once the current one reaches this size.
  size_t segment_bytes = 64 << 20;
  // Space reserved ahead with fallocate(KEEP_SIZE) so appends rarely
  // allocate extents. 0 disables.
  size_t preallocate_bytes = 64 << 20;
  // Test seam: called at named points of multi-step file updates
  // ("cut:created": the next segment exists on disk, possibly under a
  // temporary name, but Cut has not returned). Crash tests kill the process
  // there. Null in production.
  std::function<void(std::string_view point)> crash_hook;
  // Where the files go; null = FileSystem::Default(). Not owned; must
  // outlive the Wal.
  FileSystem* file_system = nullptr;
};

struct SegmentInfo {
  uint64_t sequence;
  uint64_t start_index;
  std::string path;
  uint64_t bytes;
};

class Wal {
 public:
  using ReplayFn = std::function<void(const Record&)>;

  ~Wal();
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Opens the log in `dir`, creating the directory and a first segment when
  // there is none. Calls `replay` for each record in log order.
  static StatusOr<std::unique_ptr<Wal>> Open(const std::string& dir,
                                             const Options& options,
                                             const ReplayFn& replay);

  // Appends records to the current segment (written to the OS, not synced).
  // kNoSpace (not sticky): nothing of `records` is in the log.
  Status Append(const std::vector<Record>& records);
  Status Append(const Record& record);

  // Makes every appended record durable (fdatasync).
  Status Sync();

  // True once the current segment has reached segment_bytes.
  bool NeedsCut() const;

  // Syncs and closes the current segment and starts a new one named after
  // `next_index` (the index the next entry will carry), beginning with
  // `header` (e.g. the current hard state and snapshot marker, so that older
  // segments can be released without losing them). The new segment is
  // written under a temporary name and renamed once its header is durable,
  // so a crash never leaves a segment without it; the directory entry is
  // synced before Cut returns. kNoSpace (not sticky): no new segment; the
  // log continues in the current one.
  Status Cut(uint64_t next_index, const std::vector<Record>& header);

  // Deletes whole segments all of whose entries have index < `index`. The
  // current segment is never deleted.
  Status ReleaseBefore(uint64_t index);

  // True once an error made the log refuse every further write (above).
  bool failed() const { return !sticky_error_.ok(); }

  std::vector<SegmentInfo> Segments() const;
  // Bytes in all live segments.
  uint64_t SizeBytes() const;

 private:
  Wal(std::string dir, Options options);
  // Replays the records of one segment's `data`; returns the length of its
  // valid prefix (shorter than the data only for a torn tail of the last
  // segment), or kCorruption.
  StatusOr<size_t> ReplaySegment(const std::string& path, std::string_view data,
                                 bool last, const ReplayFn& replay);
  Status OpenForAppend(const SegmentInfo& seg, uint64_t valid_bytes);
  Status CreateSegment(uint64_t sequence, uint64_t start_index);
  Status WriteBuffered();

  const std::string dir_;
  const Options options_;
  FileSystem* const fs_;
  std::vector<SegmentInfo> segments_;   // oldest first; back() is current
  std::unique_ptr<WritableFile> file_;  // current segment
  uint64_t offset_ = 0;                 // bytes written to the current segment
  uint64_t preallocated_to_ = 0;
  std::string buffer_;  // encoded, not yet written
  Status sticky_error_;
};

// Encoding helpers, exposed for tests and tools (e.g. a `kpctl` WAL dump).
void EncodeRecord(const Record& r, std::string* out);
// Parses one record at the start of `in`. Returns the bytes consumed, 0 for a
// clean end (zero header, i.e. unwritten preallocated space), or an error for
// a truncated or damaged record.
StatusOr<size_t> DecodeRecord(std::string_view in, Record* out);

std::string SegmentName(uint64_t sequence, uint64_t start_index);

}  // namespace kplane::wal

#endif  // KPLANE_STORAGE_WAL_WAL_H_
