#include "base/process_metrics.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <string>

namespace kplane::metrics {
namespace {

// proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt
// cminflt majflt cmajflt utime(14) stime(15) cutime cstime priority nice
// num_threads itrealvalue starttime(22) vsize(23) rss(24) ...
constexpr char kStat[] =
    "4242 (kplane (a) b) S 1 4242 4242 0 -1 4194560 1000 0 0 0 "
    "250 150 0 0 20 0 12 0 123456 987654321 2048 18446744073709551615 1 1 0 "
    "0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcessMetricsTest, ParsesTheStatLineAfterTheLastParenthesis) {
  auto s = ParseProcStat(kStat, 100, 4096);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 4.0);  // (250 + 150) / 100
  EXPECT_DOUBLE_EQ(s->start_time_ticks, 123456);
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 987654321);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 2048.0 * 4096);
}

TEST(ProcessMetricsTest, RefusesWhatIsNotAStatLine) {
  EXPECT_FALSE(ParseProcStat("", 100, 4096).ok());
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 2 3", 100, 4096).ok());
  std::string bad = kStat;
  bad.replace(bad.find(" 250 "), 5, " 2x0 ");
  EXPECT_FALSE(ParseProcStat(bad, 100, 4096).ok());
  EXPECT_FALSE(ParseProcStat(kStat, 0, 4096).ok());
}

TEST(ProcessMetricsTest, BootTime) {
  auto b = ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1764800000\nprocesses 9\n");
  ASSERT_TRUE(b.ok());
  EXPECT_DOUBLE_EQ(*b, 1764800000);
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\n").ok());
}

double Value(const std::string& text, const std::string& name) {
  size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + name.size() + 2));
}

TEST(ProcessMetricsTest, ThisProcessAsPrometheusRendersIt) {
  Registry r;
  RegisterProcessMetrics(&r);
  std::string before = r.Render();
  EXPECT_NE(before.find("# TYPE process_cpu_seconds_total counter\n"),
            std::string::npos)
      << before;
  EXPECT_NE(before.find("# TYPE process_open_fds gauge\n"), std::string::npos);
  // Opening descriptors shows.
  double fds = Value(before, "process_open_fds");
  int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(Value(r.Render(), "process_open_fds"), fds + 2);
  close(a);
  close(b);
  EXPECT_GT(Value(before, "process_max_fds"), fds);
  EXPECT_GT(Value(before, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(Value(before, "process_virtual_memory_bytes"),
            Value(before, "process_resident_memory_bytes"));
  // Started at most an hour ago, judged by the wall clock.
  double now = std::chrono::duration<double>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  double start = Value(before, "process_start_time_seconds");
  EXPECT_LE(start, now + 1);
  EXPECT_GT(start, now - 3600);
  // CPU time grows with work.
  double cpu = Value(before, "process_cpu_seconds_total");
  // Spin until this process has used 30 ms more CPU (more than a 10 ms
  // clock tick), however loaded the machine is.
  const std::clock_t spin_from = std::clock();
  volatile double x = 0;
  while (std::clock() - spin_from < CLOCKS_PER_SEC * 3 / 100) x = x + 1;
  EXPECT_GT(Value(r.Render(), "process_cpu_seconds_total"), cpu);
}

// The CPU, virtual and resident series of one render come from one read
// of /proc/self/stat (they describe one instant), and each render reads
// it again.
TEST(ProcessMetricsTest, OneStatReadPerRender) {
  Registry r;
  int reads = 0;
  RegisterProcessMetrics(&r, [&reads]() -> StatusOr<ProcessStat> {
    ++reads;  // each read sees different values
    return ProcessStat{.cpu_seconds = 1.0 * reads,
                       .virtual_bytes = 1000.0 * reads,
                       .resident_bytes = 100.0 * reads};
  });
  const int registered = reads;  // the start time's read
  for (int render = 1; render <= 2; ++render) {
    std::string text = r.Render();
    EXPECT_EQ(reads, registered + render);
    EXPECT_EQ(Value(text, "process_cpu_seconds_total"), 1.0 * reads);
    EXPECT_EQ(Value(text, "process_virtual_memory_bytes"), 1000.0 * reads);
    EXPECT_EQ(Value(text, "process_resident_memory_bytes"), 100.0 * reads);
  }
}

TEST(ProcessMetricsTest, AFailedStatReadRendersNaN) {
  Registry r;
  RegisterProcessMetrics(
      &r, []() -> StatusOr<ProcessStat> { return IOError("no /proc"); });
  std::string text = r.Render();
  for (const char* name :
       {"process_cpu_seconds_total", "process_virtual_memory_bytes",
        "process_resident_memory_bytes", "process_start_time_seconds"}) {
    EXPECT_TRUE(std::isnan(Value(text, name))) << name << "\n" << text;
  }
}

TEST(ProcessMetricsTest, TheDefaultRegistryHasThem) {
  EXPECT_NE(Registry::Default()->Render().find("process_start_time_seconds "),
            std::string::npos);
}

}  // namespace
}  // namespace kplane::metrics
