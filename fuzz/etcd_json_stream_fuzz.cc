// Fuzzes the etcd JSON API's streamed bodies (storage/etcdjson/
// json_stream.h): the request streams of /v3/watch and /v3/lease/keepalive
// that the store splits into objects, and the response streams our
// clients read (`{"result":...}` / `{"error":...}` objects).
//
// Input: byte 0 chooses the read size; the rest is the stream.
//
// Checked: no crash or sanitizer report; the splitter cuts the same
// objects out of the stream, and refuses the same streams, however its
// bytes arrive.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "schemas/rpc.pb.h"
#include "storage/etcdjson/etcd_json.h"
#include "storage/etcdjson/json_stream.h"

namespace {

// The objects of `stream` fed in reads of `step` bytes, and whether the
// stream went bad.
std::vector<std::string> Split(std::string_view stream, size_t step,
                               bool* bad) {
  kplane::etcdjson::JsonObjectSplitter splitter;
  std::vector<std::string> out;
  *bad = false;
  for (size_t off = 0; off < stream.size() && !*bad; off += step) {
    splitter.Feed(stream.substr(off, step));
    std::string obj;
    kplane::Status err;
    while (splitter.Next(&obj, &err)) out.push_back(obj);
    if (!err.ok()) *bad = true;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  const size_t step = 1 + in.TakeByte() % 16;
  std::string_view stream = in.rest();
  bool bad_whole = false;
  bool bad_pieces = false;
  std::vector<std::string> whole = Split(stream, stream.size() + 1, &bad_whole);
  std::vector<std::string> pieces = Split(stream, step, &bad_pieces);
  if (bad_whole != bad_pieces || whole != pieces) {
    kplane::fuzz::Fail("the splitter's objects depend on how bytes arrive");
  }
  for (const std::string& obj : whole) {
    etcdserverpb::WatchRequest wreq;
    (void)kplane::etcdjson::ParseJson(obj, &wreq);
    etcdserverpb::LeaseKeepAliveRequest kreq;
    (void)kplane::etcdjson::ParseJson(obj, &kreq);
    etcdserverpb::WatchResponse wresp;
    (void)kplane::etcdjson::ParseStreamMessage(obj, &wresp);
  }
  return 0;
}
