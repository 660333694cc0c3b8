// The syscall floor of watch fan-out on this machine (issue 22): the CPU
// one thread spends writing one frame to each of N loopback TCP
// connections, the way a watch cache's dispatcher hands one event to N
// watchers, with a reader thread draining every connection (as the load
// tool does). No HTTP, no locks, no encoding: only write(2) and the
// kernel's loopback path (which runs the receiver's TCP processing in the
// sender's context).
//
//   g++ -O2 -std=c++20 -pthread -o /tmp/loopback_floor
//       scripts/bench/loopback_floor.cc   (one line)
//   /tmp/loopback_floor [connections=1000] [frame_bytes=1500] [rounds=50]
//
// Prints the writer's CPU (user + system, getrusage RUSAGE_THREAD) per
// write and the wall time of one round (one frame to every connection).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

double ThreadCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void Die(const char* what) {
  std::perror(what);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const size_t frame = argc > 2 ? std::atoi(argv[2]) : 1500;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 50;

  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Die("bind");
  }
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  if (listen(listener, n) != 0) Die("listen");

  std::vector<int> writers, readers;
  for (int i = 0; i < n; ++i) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      Die("connect");
    }
    int s = accept(listener, nullptr, nullptr);
    if (s < 0) Die("accept");
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    writers.push_back(s);
    readers.push_back(c);
  }

  const size_t total = static_cast<size_t>(n) * frame * rounds;
  std::atomic<size_t> received{0};
  std::thread reader([&] {
    int ep = epoll_create1(0);
    for (int fd : readers) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    std::vector<epoll_event> events(256);
    std::vector<char> buf(1 << 16);
    while (received.load() < total) {
      int k = epoll_wait(ep, events.data(), events.size(), 1000);
      for (int i = 0; i < k; ++i) {
        ssize_t r = read(events[i].data.fd, buf.data(), buf.size());
        if (r > 0) received += r;
      }
    }
    close(ep);
  });

  const std::string payload(frame, 'x');
  const double cpu0 = ThreadCpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  double worst_round_ms = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto r0 = std::chrono::steady_clock::now();
    for (int fd : writers) {
      if (write(fd, payload.data(), payload.size()) !=
          static_cast<ssize_t>(payload.size())) {
        Die("write");
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - r0)
                          .count();
    if (ms > worst_round_ms) worst_round_ms = ms;
    // Paced as the apiserver bench's creates (10/s would take long; the
    // reader catches up between rounds all the same).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double cpu = ThreadCpuSeconds() - cpu0;
  reader.join();
  const double wall = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
  std::printf(
      "%d connections, %zu-byte frames, %d rounds: writer CPU %.2f us per "
      "write; a round (one frame to every connection) %.2f ms mean of "
      "writing CPU, %.2f ms worst wall; %.1f s in all\n",
      n, frame, rounds, cpu / (static_cast<double>(n) * rounds) * 1e6,
      cpu / rounds * 1e3, worst_round_ms, wall);
  for (int fd : writers) close(fd);
  for (int fd : readers) close(fd);
  close(listener);
  return 0;
}
