// Cross-checks our schemas against Kubernetes' own round-trip fixtures
// (kubernetes/api: testdata/HEAD/<group>.<version>.<Kind>.{json,pb}), in
// which the fuzzer fills every field. For each kind we serve:
//  1. the .pb decoded through our envelope and the .json decoded by our
//     codec must be the same message: every field we declare has the same
//     number as the JSON name says upstream;
//  2. re-encoding that message must give the fixture's JSON minus the
//     members our decoder reported as unknown (fields we do not model).
//
// The fixtures of the kinds we serve are in testdata/k8s-api, copied from
// kubernetes/api v0.32.4 (Apache-2.0; see its README.md). To check another
// release, point KPLANE_K8S_API_TESTDATA at its testdata/HEAD, e.g. one made
// with
//   git -C <kubernetes/api checkout> archive v0.33.0 testdata/HEAD | tar -x
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <rapidjson/pointer.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "objects/codec.h"
#include "objects/envelope.h"
#include "objects/scheme.h"
#include "schemas/k8s/options.pb.h"

namespace kplane::objects {
namespace {

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = in.good();
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Removes the member at a codec path ("spec.containers[0].foo").
void Remove(rapidjson::Value* root, const std::string& path) {
  rapidjson::Value* v = root;
  size_t i = 0;
  while (i < path.size() && v != nullptr) {
    if (path[i] == '[') {
      size_t end = path.find(']', i);
      size_t idx = std::stoul(path.substr(i + 1, end - i - 1));
      if (!v->IsArray() || idx >= v->Size()) return;
      v = &(*v)[static_cast<rapidjson::SizeType>(idx)];
      i = end + 1;
      if (i < path.size() && path[i] == '.') ++i;
      continue;
    }
    size_t end = path.find_first_of(".[", i);
    std::string key = path.substr(i, end == std::string::npos ? end : end - i);
    if (!v->IsObject()) return;
    if (end == std::string::npos) {
      v->RemoveMember(key.c_str());
      return;
    }
    auto it = v->FindMember(key.c_str());
    if (it == v->MemberEnd()) return;
    v = &it->value;
    i = path[end] == '.' ? end + 1 : end;
  }
}

TEST(UpstreamFixtures, SchemasMatchKubernetes) {
  const char* env = std::getenv("KPLANE_K8S_API_TESTDATA");
  const std::string dir = env != nullptr ? env : KPLANE_K8S_API_FIXTURES;
  int checked = 0;
  for (const auto& k : Scheme::Default().kinds()) {
    const KindInfo& kind = *k;
    const std::string base = dir + "/" +
                             (kind.gv.group.empty() ? "core" : kind.gv.group) +
                             "." + kind.gv.version + "." + kind.kind;
    bool ok_json, ok_pb;
    const std::string json = ReadFile(base + ".json", &ok_json);
    const std::string pb = ReadFile(base + ".pb", &ok_pb);
    if (!ok_json || !ok_pb) {
      // Upstream has fixtures for every resource kind; lists and meta kinds
      // have none.
      const ResourceInfo* r = Scheme::Default().ResourceForKind(kind);
      if (r != nullptr && r->kind == &kind) {
        ADD_FAILURE() << "missing fixture " << base;
      }
      continue;
    }
    SCOPED_TRACE(kind.kind);
    // Kinds whose Go type embeds no TypeMeta (WatchEvent) carry none, in
    // JSON or in the envelope.
    const TypeMeta tm_want =
        kind.descriptor->options().GetExtension(kplane::schema::type_meta)
            ? kind.type_meta()
            : TypeMeta{};
    auto from_json = kind.New();
    StatusOr<DecodeResult> dr = DecodeJson(json, from_json.get());
    ASSERT_TRUE(dr.ok()) << dr.status();
    auto from_pb = kind.New();
    StatusOr<TypeMeta> tm = DecodeEnvelopeInto(pb, from_pb.get());
    ASSERT_TRUE(tm.ok()) << tm.status();
    EXPECT_EQ(*tm, tm_want);

    std::string diff;
    google::protobuf::util::MessageDifferencer differ;
    differ.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differ.Compare(*from_json, *from_pb)) << diff;

    rapidjson::Document want;
    want.Parse(json.c_str());
    ASSERT_FALSE(want.HasParseError());
    for (const std::string& path : dr->unknown_fields) Remove(&want, path);
    rapidjson::Document got;
    got.Parse(EncodeJson(*from_pb, tm_want).c_str());
    EXPECT_TRUE(got == want) << "JSON differs for " << kind.kind
                             << "\nours: " << EncodeJson(*from_pb, tm_want);
    ++checked;
  }
  // 10 resource kinds, Binding, Scale, Status, DeleteOptions, WatchEvent.
  EXPECT_GE(checked, 15);
}

}  // namespace
}  // namespace kplane::objects
