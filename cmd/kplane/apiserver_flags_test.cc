// `kplane apiserver`'s refusals of bad limits and timeouts: each is
// refused before anything starts (no store, no listener), exit code 2,
// with a message that names the flag.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "cmd/kplane/apiserver_command.h"

namespace kplane::cmd {
namespace {

TEST(ApiServerFlagsTest, NegativeLimitsAndTimeoutsAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--request-timeout=-1s", "--request-timeout must not be negative"},
      {"--request-body-timeout=-1s",
       "--request-body-timeout must not be negative"},
      {"--max-connections=-1", "--max-connections must not be negative"},
      {"--etcd-compaction-interval=-1s",
       "--etcd-compaction-interval must not be negative"},
      {"--watch-cache-history-window=-1s",
       "--watch-cache-history-window must not be negative"},
      {"--max-watch-buffer-bytes=-1", "must not be negative"},
      {"--port=70000", "--port must be in 0..65535"},
      {"--watch-send-threads=-1", "--watch-send-threads must be in 0..64"},
      {"--watch-cache-json-max-bytes=0",
       "--watch-cache-json-max-bytes must be at least 1"},
      {"--watch-send-threads=65", "--watch-send-threads must be in 0..64"},
      {"--max-exec-streams=0", "--max-streams-per-user must be at least 1"},
      {"--max-log-streams=0", "--max-streams-per-user must be at least 1"},
      {"--max-streams-per-user=0",
       "--max-streams-per-user must be at least 1"},
      {"--request-timeout=soon", "request-timeout"},
  };
  for (const auto& [flag, want] : cases) {
    testing::internal::CaptureStderr();
    // A serving pair that cannot be read: the first thing after the checks
    // fails, so a missing check shows as the wrong message, not a server.
    const int code = RunApiServerCommand(
        {flag, "--tls-cert-file=/nonexistent/apiserver.crt",
         "--tls-private-key-file=/nonexistent/apiserver.key"});
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 2) << flag;
    EXPECT_NE(err.find(want), std::string::npos) << flag << "\n got: " << err;
  }
}

}  // namespace
}  // namespace kplane::cmd
