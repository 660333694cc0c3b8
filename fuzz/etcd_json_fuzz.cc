// Fuzzes the store's etcd v3 JSON API bodies (storage/etcdjson/etcd_json.h):
// the request of every POST /v3/... route the store serves to anyone who
// can reach its client port, and the answers our clients read from a store
// or a real etcd (responses and error bodies).
//
// Input: one body, parsed as each message type.
//
// Checked: no crash or sanitizer report; a parsed message written by ToJson
// parses back to the same message, and ToJson writes what protobuf's own
// JSON printer writes (its documented contract).
#include <google/protobuf/message.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "schemas/rpc.pb.h"
#include "storage/etcdjson/etcd_json.h"

namespace {

template <typename M>
void Check(std::string_view body) {
  M msg;
  kplane::Status s = kplane::etcdjson::ParseJson(body, &msg);
  if (!s.ok()) {
    (void)kplane::etcdjson::StatusToError(s).Body();
    return;
  }
  std::string json = kplane::etcdjson::ToJson(msg);
  M again;
  kplane::Status s2 = kplane::etcdjson::ParseJson(json, &again);
  if (!s2.ok() ||
      !google::protobuf::util::MessageDifferencer::Equals(msg, again)) {
    std::fprintf(stderr, "%s: %s\n%s\n", M::descriptor()->name().c_str(),
                 s2.ToString().c_str(), json.c_str());
    kplane::fuzz::Fail("ToJson's output does not parse back to the message");
  }
  std::string reference = kplane::etcdjson::ToJsonWithProtobuf(msg);
  if (reference != json) {
    std::fprintf(stderr, "ours:     %s\nprotobuf: %s\n", json.c_str(),
                 reference.c_str());
    kplane::fuzz::Fail("ToJson differs from protobuf's JSON printer");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace pb = etcdserverpb;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  Check<pb::RangeRequest>(body);
  Check<pb::PutRequest>(body);
  Check<pb::DeleteRangeRequest>(body);
  Check<pb::TxnRequest>(body);
  Check<pb::CompactionRequest>(body);
  Check<pb::WatchRequest>(body);
  Check<pb::LeaseGrantRequest>(body);
  Check<pb::LeaseKeepAliveRequest>(body);
  Check<pb::LeaseTimeToLiveRequest>(body);
  Check<pb::MemberAddRequest>(body);
  Check<pb::HashKVRequest>(body);
  Check<pb::AlarmRequest>(body);
  Check<pb::RangeResponse>(body);
  Check<pb::TxnResponse>(body);
  Check<pb::WatchResponse>(body);
  (void)kplane::etcdjson::ErrorToStatus(400, body);
  return 0;
}
