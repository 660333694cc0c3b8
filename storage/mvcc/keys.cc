#include "storage/mvcc/keys.h"

namespace kplane::mvcc::keys {
namespace {

constexpr char kEscapeByte = '\xff';
constexpr char kTerminatorByte = '\x01';
constexpr char kPutRecordTag = '\x01';
constexpr char kTombstoneRecordTag = '\x02';
constexpr char kEventPutTag = '\x01';
constexpr char kEventDeleteTag = '\x02';

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    uint8_t byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

}  // namespace

void PutBigEndian64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutBigEndian32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t GetBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint32_t GetBigEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void AppendEscapedKey(std::string* out, std::string_view user_key) {
  for (char c : user_key) {
    out->push_back(c);
    if (c == '\0') out->push_back(kEscapeByte);
  }
  out->push_back('\0');
  out->push_back(kTerminatorByte);
}

std::string VersionPrefix(std::string_view user_key) {
  std::string out;
  out.reserve(user_key.size() + 3 + kVersionSuffixSize);
  out.push_back(kVersionTag);
  AppendEscapedKey(&out, user_key);
  return out;
}

void AppendVersionSuffix(std::string* out, int64_t main, uint32_t sub) {
  PutBigEndian64(out, ~static_cast<uint64_t>(main));
  PutBigEndian32(out, ~sub);
}

std::string VersionKey(std::string_view user_key, int64_t main, uint32_t sub) {
  std::string out = VersionPrefix(user_key);
  AppendVersionSuffix(&out, main, sub);
  return out;
}

std::string VersionSeekKey(std::string_view user_key, int64_t rev) {
  // ~sub is smallest for the largest sub, so this lands on the last change
  // of revision `rev` (or on the newest older revision).
  return VersionKey(user_key, rev, UINT32_MAX);
}

bool ParseVersionKey(std::string_view key, std::string_view* prefix,
                     int64_t* main, uint32_t* sub) {
  if (key.size() < 1 + 2 + kVersionSuffixSize || key[0] != kVersionTag) {
    return false;
  }
  size_t plen = key.size() - kVersionSuffixSize;
  if (key[plen - 2] != '\0' || key[plen - 1] != kTerminatorByte) return false;
  *prefix = key.substr(0, plen);
  *main = static_cast<int64_t>(~GetBigEndian64(key.data() + plen));
  *sub = ~GetBigEndian32(key.data() + plen + 8);
  return true;
}

bool UserKeyOfPrefix(std::string_view prefix, std::string* user_key) {
  if (prefix.size() < 3 || prefix[0] != kVersionTag) return false;
  const size_t end = prefix.size() - 2;
  if (prefix[end] != '\0' || prefix[end + 1] != kTerminatorByte) return false;
  // Copied a run at a time: most keys hold no NUL, so one assign.
  std::string_view rest = prefix.substr(1, end - 1);
  size_t nul = rest.find('\0');
  if (nul == std::string_view::npos) {
    user_key->assign(rest);
    return true;
  }
  user_key->clear();
  while (nul != std::string_view::npos) {
    // A NUL of the key is escaped as 00 FF.
    if (nul + 1 >= rest.size() || rest[nul + 1] != kEscapeByte) return false;
    user_key->append(rest.substr(0, nul + 1));
    rest.remove_prefix(nul + 2);
    nul = rest.find('\0');
  }
  user_key->append(rest);
  return true;
}

std::string PrefixSuccessor(std::string_view version_prefix) {
  // The prefix ends in 00 01. No escaped key continues with 00 02 (a longer
  // key continues with 00 FF or a byte > 00), so 00 02 sorts after every
  // version of this key and before every greater key.
  std::string out(version_prefix);
  out.back() = static_cast<char>(kTerminatorByte + 1);
  return out;
}

bool VersionBounds(std::string_view key, std::string_view range_end,
                   std::string* lower, std::string* upper) {
  *lower = VersionPrefix(key);
  if (range_end.empty()) {
    *upper = PrefixSuccessor(*lower);
    return true;
  }
  if (range_end.size() == 1 && range_end[0] == '\0') {
    upper->assign(1, static_cast<char>(kVersionTag + 1));
    return true;
  }
  if (range_end <= key) return false;
  *upper = VersionPrefix(range_end);
  return true;
}

std::string EncodePutRecord(int64_t create_revision, int64_t version,
                            int64_t lease, std::string_view value) {
  std::string out;
  out.reserve(1 + 30 + value.size());
  out.push_back(kPutRecordTag);
  PutVarint(&out, static_cast<uint64_t>(create_revision));
  PutVarint(&out, static_cast<uint64_t>(version));
  PutVarint(&out, static_cast<uint64_t>(lease));
  out.append(value);
  return out;
}

std::string EncodeTombstoneRecord() {
  return std::string(1, kTombstoneRecordTag);
}

bool IsTombstoneRecord(std::string_view record) {
  return !record.empty() && record[0] == kTombstoneRecordTag;
}

bool DecodePutRecord(std::string_view record, mvccpb::KeyValue* kv,
                     bool with_value) {
  if (record.empty() || record[0] != kPutRecordTag) return false;
  record.remove_prefix(1);
  uint64_t create, version, lease;
  if (!GetVarint(&record, &create) || !GetVarint(&record, &version) ||
      !GetVarint(&record, &lease)) {
    return false;
  }
  kv->set_create_revision(static_cast<int64_t>(create));
  kv->set_version(static_cast<int64_t>(version));
  kv->set_lease(static_cast<int64_t>(lease));
  if (with_value) kv->set_value(record.data(), record.size());
  return true;
}

std::string EventRangeStart(int64_t main) {
  std::string out;
  out.reserve(kEventKeySize);  // room for EventKey's sub
  out.push_back(kEventTag);
  PutBigEndian64(&out, static_cast<uint64_t>(main));
  return out;
}

std::string EventKey(int64_t main, uint32_t sub) {
  std::string out = EventRangeStart(main);
  PutBigEndian32(&out, sub);
  return out;
}

bool ParseEventKey(std::string_view key, int64_t* main, uint32_t* sub) {
  if (key.size() != kEventKeySize || key[0] != kEventTag) return false;
  *main = static_cast<int64_t>(GetBigEndian64(key.data() + 1));
  *sub = GetBigEndian32(key.data() + 9);
  return true;
}

std::string EncodeEventRecord(bool is_delete, std::string_view user_key) {
  std::string out;
  out.reserve(1 + user_key.size());
  out.push_back(is_delete ? kEventDeleteTag : kEventPutTag);
  out.append(user_key);
  return out;
}

bool DecodeEventRecord(std::string_view record, bool* is_delete,
                       std::string_view* user_key) {
  if (record.empty()) return false;
  if (record[0] != kEventPutTag && record[0] != kEventDeleteTag) return false;
  *is_delete = record[0] == kEventDeleteTag;
  *user_key = record.substr(1);
  return true;
}

std::string EncodeInt64(int64_t v) {
  std::string out;
  PutBigEndian64(&out, static_cast<uint64_t>(v));
  return out;
}

bool DecodeInt64(std::string_view s, int64_t* v) {
  if (s.size() != 8) return false;
  *v = static_cast<int64_t>(GetBigEndian64(s.data()));
  return true;
}

std::string LeaseKey(int64_t id) {
  std::string out(1, kLeaseTag);
  PutBigEndian64(&out, static_cast<uint64_t>(id));
  return out;
}

bool ParseLeaseKey(std::string_view key, int64_t* id) {
  if (key.size() != 9 || key[0] != kLeaseTag) return false;
  *id = static_cast<int64_t>(GetBigEndian64(key.data() + 1));
  return true;
}

std::string AttachPrefix(int64_t id) {
  std::string out(1, kAttachTag);
  PutBigEndian64(&out, static_cast<uint64_t>(id));
  return out;
}

std::string AttachKey(int64_t id, std::string_view user_key) {
  std::string out = AttachPrefix(id);
  out.append(user_key);
  return out;
}

bool ParseAttachKey(std::string_view key, int64_t* id, std::string* user_key) {
  if (key.size() < 9 || key[0] != kAttachTag) return false;
  *id = static_cast<int64_t>(GetBigEndian64(key.data() + 1));
  user_key->assign(key.substr(9));
  return true;
}

}  // namespace kplane::mvcc::keys
