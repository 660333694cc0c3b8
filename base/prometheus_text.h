// The Content-Type of the Prometheus text exposition format (version 0.0.4),
// which metrics::Registry::Render() writes, in the two spellings the
// servers kplane stands in for use. Kept out of base/metrics.h, which most
// of the tree includes, so that these constants cost a rebuild of their few
// users only.
#ifndef KPLANE_BASE_PROMETHEUS_TEXT_H_
#define KPLANE_BASE_PROMETHEUS_TEXT_H_

namespace kplane::metrics {

// As etcd 3.4 serves /metrics (its Prometheus client predates the charset
// parameter)...
inline constexpr char kTextFormatContentType[] = "text/plain; version=0.0.4";
// ...and as Kubernetes' components serve it.
inline constexpr char kTextFormatContentTypeUtf8[] =
    "text/plain; version=0.0.4; charset=utf-8";

}  // namespace kplane::metrics

#endif  // KPLANE_BASE_PROMETHEUS_TEXT_H_
