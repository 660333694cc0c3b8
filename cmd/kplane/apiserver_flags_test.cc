// `kplane apiserver`'s refusals of bad limits and timeouts: each is
// refused before anything starts (no store, no listener), exit code 2,
// with a message that names the flag. Values at the edges of each range
// pass the checks, and 0 in-flight requests means no limit, as in
// kube-apiserver.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cmd/kplane/apiserver_command.h"
#include "net/http_client.h"

namespace kplane::cmd {
namespace {

// A loopback port free a moment ago.
uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

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
      {"--max-streams-per-user=0", "--max-streams-per-user must be at least 1"},
      {"--request-timeout=soon", "request-timeout"},
      // kube-apiserver's texts (server_run_options.go Validate).
      {"--max-requests-inflight=-1",
       "--max-requests-inflight can not be negative value"},
      {"--max-mutating-requests-inflight=-1",
       "--max-mutating-requests-inflight can not be negative value"},
      {"--min-request-timeout=-1",
       "--min-request-timeout can not be negative value"},
      // Seconds whose double, in nanoseconds, would overflow a deadline.
      {"--min-request-timeout=9223372036854775807",
       "--min-request-timeout must be at most 1000000000"},
      // kplane's own: 0 would answer every body 413 (and -1 was a limit
      // of 18446744073709551615 bytes); 4x the limit bounds a watch's
      // buffer, so it must not overflow.
      {"--max-request-bytes=-1", "--max-request-bytes must be in 1.."},
      {"--max-request-bytes=0", "--max-request-bytes must be in 1.."},
      {"--max-request-bytes=1073741825", "--max-request-bytes must be in 1.."},
      // 0 or less would answer every watch 429.
      {"--max-watches=0", "--max-watches must be at least 1"},
      {"--max-watches=-1", "--max-watches must be at least 1"},
      // Each watch cache allocates its window up front.
      {"--default-watch-cache-size=-1",
       "--default-watch-cache-size must be in 1..1000000"},
      {"--default-watch-cache-size=0",
       "--default-watch-cache-size must be in 1..1000000"},
      {"--default-watch-cache-size=1000001",
       "--default-watch-cache-size must be in 1..1000000"},
      {"--worker-threads=0", "--worker-threads must be in 1..4096"},
      {"--worker-threads=-1", "--worker-threads must be in 1..4096"},
      {"--worker-threads=4097", "--worker-threads must be in 1..4096"},
      // 0 would close every pods/exec session at once.
      {"--exec-idle-timeout=0", "--exec-idle-timeout must be positive"},
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

// The edges of each range pass the checks: the command gets as far as
// reading the (missing) serving certificate.
TEST(ApiServerFlagsTest, EdgesOfTheRangesAreAccepted) {
  const std::vector<std::string> flags = {
      "--max-requests-inflight=0",  // kube: zero for no limit
      "--max-mutating-requests-inflight=0",
      "--min-request-timeout=0",  // kube: watches without a timeout
      "--min-request-timeout=1000000000",
      "--max-request-bytes=1",
      "--max-request-bytes=1073741824",
      "--max-watches=1",
      "--default-watch-cache-size=1",
      "--default-watch-cache-size=1000000",
      "--worker-threads=1",
      "--worker-threads=4096",
      "--exec-idle-timeout=1s",
  };
  for (const std::string& flag : flags) {
    testing::internal::CaptureStderr();
    const int code = RunApiServerCommand(
        {flag, "--tls-cert-file=/nonexistent/apiserver.crt",
         "--tls-private-key-file=/nonexistent/apiserver.key"});
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 2) << flag;
    EXPECT_NE(err.find("/nonexistent/apiserver"), std::string::npos)
        << flag << "\n got: " << err;
  }
}

// --max-requests-inflight=0 and --max-mutating-requests-inflight=0: no
// limit (kube-apiserver without priority and fairness), not "none at
// once": the command serves a GET and a POST.
TEST(ApiServerFlagsTest, ZeroInflightMeansNoLimit) {
  char tmpl[] = "/tmp/kplane-apiflags-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const uint16_t port = FreePort();
  ASSERT_NE(port, 0);
  std::atomic<bool> returned{false};
  int code = -1;
  std::thread command([&] {
    code = RunApiServerCommand(
        {"--insecure-http", "--port=" + std::to_string(port),
         "--data-dir=" + dir + "/data", "--authorization-mode=AlwaysAllow",
         "--max-requests-inflight=0", "--max-mutating-requests-inflight=0",
         "--log-level=error"});
    returned = true;
  });
  // Stops the command (it waits for SIGTERM, blocked, on its own thread;
  // it blocks it before it listens) however the test ends.
  struct Stop {
    Stop(std::thread& t, std::atomic<bool>& r) : command(t), returned(r) {}
    ~Stop() {
      if (!returned) pthread_kill(command.native_handle(), SIGTERM);
      command.join();
    }
    std::thread& command;
    std::atomic<bool>& returned;
  };
  std::optional<Stop> stop(std::in_place, command, returned);
  // The first answer once it listens (a 503 while it starts is retried).
  StatusOr<net::HttpResponse> get = UnavailableError("not started");
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!returned && std::chrono::steady_clock::now() < deadline) {
    net::HttpClient client("127.0.0.1", port);
    get = client.Request("GET", "/api/v1/namespaces");
    if (get.ok() && get->status != 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->status, 200) << get->body;
  net::HttpClient client("127.0.0.1", port);
  StatusOr<net::HttpResponse> post = client.Request(
      "POST", "/api/v1/namespaces/default/configmaps",
      {{"Content-Type", "application/json"}},
      R"({"apiVersion":"v1","kind":"ConfigMap",)"
      R"("metadata":{"name":"zero-inflight"},"data":{"a":"b"}})");
  ASSERT_TRUE(post.ok()) << post.status();
  EXPECT_EQ(post->status, 201) << post->body;
  stop.reset();
  EXPECT_EQ(code, 0);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace kplane::cmd
