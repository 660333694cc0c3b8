// The RocksDB key space of the MVCC store: how user keys, revisions, events,
// meta values and leases are encoded into RocksDB keys and values.
// FORMAT.md is the specification; this header is its implementation.
//
// One RocksDB column family, five one-byte prefixes:
//
//   'k' key-major history   k | esc(user_key) | 00 01 | be64(~main) |
//   be32(~sub)
//                           -> version record (put or tombstone)
//   'r' revision-major log  r | be64(main) | be32(sub) -> event (type, user
//   key) 'm' meta                m | name -> be64 'l' lease               l |
//   be64(id) -> be64(ttl) 'a' lease attachment    a | be64(id) | user_key -> ""
//
// esc() keeps byte order and makes the escaped key self-delimiting: every
// 0x00 byte becomes 00 FF, and 00 01 terminates the key. So all versions of
// one user key are contiguous, the newest first (~main, ~sub are inverted),
// and user keys sort in the same order as their escaped forms.
//
// Worked example: user key "foo" written at revisions 1 (put) and 3 (put),
// deleted at 4; user key "foo\0" written at 2:
//
//   6b 66 6f 6f 00 01       | ff..fb (~4) | ffffffff (~0) -> tombstone
//   6b 66 6f 6f 00 01       | ff..fc (~3) | ffffffff      -> put, version 2
//   6b 66 6f 6f 00 01       | ff..fe (~1) | ffffffff      -> put, version 1
//   6b 66 6f 6f 00 ff 00 01 | ff..fd (~2) | ffffffff      -> put of "foo\0"
//
// A range at revision 3 seeks to ("foo", ~3, ~max) and lands on the put at 3:
// one seek per user key, however long the history.
//
// Thread-safety: pure functions. Errors: parsers return false on malformed
// input (the caller treats it as corruption).
#ifndef KPLANE_STORAGE_MVCC_KEYS_H_
#define KPLANE_STORAGE_MVCC_KEYS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "schemas/kv.pb.h"

namespace kplane::mvcc::keys {

inline constexpr char kVersionTag = 'k';
inline constexpr char kEventTag = 'r';
inline constexpr char kMetaTag = 'm';
inline constexpr char kLeaseTag = 'l';
inline constexpr char kAttachTag = 'a';

// Bytes after the escaped key prefix in a version key: be64(~main) be32(~sub).
inline constexpr size_t kVersionSuffixSize = 12;

// ---- key-major versions -------------------------------------------------

// "k" + esc(user_key) + 00 01: the common prefix of every version of a key.
std::string VersionPrefix(std::string_view user_key);
// Appends esc(user_key) + 00 01.
void AppendEscapedKey(std::string* out, std::string_view user_key);

std::string VersionKey(std::string_view user_key, int64_t main, uint32_t sub);
// The seek target that lands on the newest version with main <= rev.
std::string VersionSeekKey(std::string_view user_key, int64_t rev);
// Appends the revision suffix to a version prefix.
void AppendVersionSuffix(std::string* out, int64_t main, uint32_t sub);

// Splits a version key into its prefix (tag, escaped key, terminator) and
// revision. Returns false when `key` is not a well-formed version key.
bool ParseVersionKey(std::string_view key, std::string_view* prefix,
                     int64_t* main, uint32_t* sub);
// The user key of a version prefix ("k" + esc + 00 01). False if malformed.
bool UserKeyOfPrefix(std::string_view prefix, std::string* user_key);

// The smallest string greater than every version key of this prefix's user
// key and no greater than any version key of a greater user key.
std::string PrefixSuccessor(std::string_view version_prefix);

// Bounds of the version keys of user keys in [key, range_end) with etcd's
// range_end convention: empty = the single key; "\0" = every key >= key.
// Returns false when the range is empty (range_end <= key).
bool VersionBounds(std::string_view key, std::string_view range_end,
                   std::string* lower, std::string* upper);

// ---- version records ------------------------------------------------------

// Value of a put: 01 | varint(create) | varint(version) | varint(lease) |
// value bytes. The key and mod revision live in the RocksDB key.
std::string EncodePutRecord(int64_t create_revision, int64_t version,
                            int64_t lease, std::string_view value);
// Value of a tombstone: 02.
std::string EncodeTombstoneRecord();
bool IsTombstoneRecord(std::string_view record);
// Fills kv (all fields but key and mod_revision). False if malformed or a
// tombstone.
bool DecodePutRecord(std::string_view record, mvccpb::KeyValue* kv,
                     bool with_value = true);

// ---- revision-major event log -------------------------------------------

inline constexpr size_t kEventKeySize = 13;  // r | be64(main) | be32(sub)
std::string EventKey(int64_t main, uint32_t sub);
// `r | be64(main)`: sorts right before every event of `main` and is no
// event's key (those are kEventKeySize long). Compaction's range deletions
// of the log start here (store.cc, MemtableHint, says why).
std::string EventRangeStart(int64_t main);
bool ParseEventKey(std::string_view key, int64_t* main, uint32_t* sub);
// Value: 01 (put) or 02 (delete) followed by the raw user key.
std::string EncodeEventRecord(bool is_delete, std::string_view user_key);
bool DecodeEventRecord(std::string_view record, bool* is_delete,
                       std::string_view* user_key);

// ---- meta -----------------------------------------------------------------

inline constexpr std::string_view kMetaCurrentRevision = "mcurrent_revision";
inline constexpr std::string_view kMetaConsistentIndex = "mconsistent_index";
inline constexpr std::string_view kMetaCompactScheduled = "mcompact_scheduled";
inline constexpr std::string_view kMetaCompactFinished = "mcompact_finished";
inline constexpr std::string_view kMetaCompactCursor = "mcompact_cursor";
inline constexpr std::string_view kMetaSizeInUse = "msize_in_use";
inline constexpr std::string_view kMetaAlarmNoSpace = "malarm_nospace";
inline constexpr std::string_view kMetaLeaseSeq = "mlease_seq";
inline constexpr std::string_view kMetaFormatVersion = "mformat_version";
inline constexpr int64_t kFormatVersion = 1;

std::string EncodeInt64(int64_t v);  // be64
bool DecodeInt64(std::string_view s, int64_t* v);

// ---- leases ---------------------------------------------------------------

std::string LeaseKey(int64_t id);
bool ParseLeaseKey(std::string_view key, int64_t* id);
std::string AttachKey(int64_t id, std::string_view user_key);
std::string AttachPrefix(int64_t id);
bool ParseAttachKey(std::string_view key, int64_t* id, std::string* user_key);

// Big-endian helpers (exposed for tests and the format spec).
void PutBigEndian64(std::string* out, uint64_t v);
void PutBigEndian32(std::string* out, uint32_t v);
uint64_t GetBigEndian64(const char* p);
uint32_t GetBigEndian32(const char* p);

}  // namespace kplane::mvcc::keys

#endif  // KPLANE_STORAGE_MVCC_KEYS_H_
