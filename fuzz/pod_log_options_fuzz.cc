// Fuzzes pods/log's query options (apiserver/pod_logs.h ParsePodLogRequest):
// the query string of GET .../pods/<name>/log, chosen by any client allowed
// to read logs, then forwarded to the kubelet.
//
// Input: byte 0 picks the pod (even: one container; odd: an init container
// and two containers), the rest is the raw query ("tailLines=5&follow=1").
// Checked: no crash or sanitizer report; a refusal is a 400 or 422; an
// accepted request names one of the pod's containers, and its kubelet
// query parses back to options within kube's bounds (tailLines >= 0,
// limitBytes and sinceSeconds > 0, sinceTime RFC 3339) and nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "apiserver/pod_logs.h"
#include "base/strings.h"
#include "fuzz/fuzz_input.h"
#include "net/url.h"
#include "objects/time.h"

namespace {

namespace corev1 = kplane::objects::corev1;
using kplane::fuzz::Fail;

corev1::Pod TestPod(bool several) {
  corev1::Pod p;
  p.mutable_metadata()->set_name("web");
  p.mutable_metadata()->set_namespace_("default");
  if (several) p.mutable_spec()->add_initcontainers()->set_name("init");
  p.mutable_spec()->add_containers()->set_name("app");
  if (several) p.mutable_spec()->add_containers()->set_name("side car");
  return p;
}

void CheckKubeletQuery(const std::string& query) {
  auto parsed = kplane::net::ParseQuery(query);
  if (!parsed.ok()) Fail("the kubelet query does not parse");
  for (const auto& [name, value] : *parsed) {
    if (name == "follow" || name == "previous" || name == "timestamps") {
      if (value != "true") Fail("a flag other than true is forwarded");
    } else if (name == "tailLines" || name == "limitBytes" ||
               name == "sinceSeconds") {
      std::optional<int64_t> v = kplane::ParseInt64(value);
      if (!v) Fail("a forwarded number is not a number");
      if (*v < (name == "tailLines" ? 0 : 1)) {
        Fail("a forwarded number is below kube's bound");
      }
    } else if (name == "sinceTime") {
      if (!kplane::objects::ParseRfc3339(value).ok()) {
        Fail("a forwarded sinceTime is not RFC 3339");
      }
    } else {
      std::fprintf(stderr, "%s\n", kplane::fuzz::Escape(name).c_str());
      Fail("an unknown option is forwarded to the kubelet");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kplane::fuzz::FuzzInput in(data, size);
  const corev1::Pod pod = TestPod(in.TakeByte() % 2 == 1);
  auto query = kplane::net::ParseQuery(in.rest());
  if (!query.ok()) return 0;
  kplane::net::HttpRequest req;
  req.raw_query = std::string(in.rest());
  req.query = std::move(*query);
  auto r = kplane::apiserver::ParsePodLogRequest(req, pod);
  if (const auto* e = std::get_if<kplane::apiserver::ApiError>(&r)) {
    if (e->code != 400 && e->code != 422) Fail("a refusal is not 400 or 422");
    return 0;
  }
  const auto& lr = std::get<kplane::apiserver::PodLogRequest>(r);
  bool known = false;
  for (const auto& c : pod.spec().initcontainers()) {
    known = known || c.name() == lr.container;
  }
  for (const auto& c : pod.spec().containers()) {
    known = known || c.name() == lr.container;
  }
  if (!known) Fail("the container is not the pod's");
  CheckKubeletQuery(lr.kubelet_query);
  const std::string target = lr.KubeletTarget(pod);
  if (target.rfind("/containerLogs/default/web/", 0) != 0) {
    Fail("the kubelet target is not the pod's log path");
  }
  return 0;
}
