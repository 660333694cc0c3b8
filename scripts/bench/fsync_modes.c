// What an append + fdatasync costs with each way of preparing a log file
// (docs/performance.md, "What would close the gap to 50,000 nodes": the
// WAL's fsync). Appends N records of 1 KiB to ./fsync_modes.test, each
// followed by fdatasync, and prints wall and CPU time per record:
//   mode 0: fallocate(FALLOC_FL_KEEP_SIZE) 64 MiB ahead, as storage/wal
//           does: every append grows the file's size, so every fdatasync
//           also writes the inode (on a journaled file system: a commit);
//   mode 1: fallocate(0) 64 MiB: the size is set once (etcd's
//           fileutil.Preallocate with extend), appends land in unwritten
//           extents;
//   mode 2: 64 MiB of zeros written and synced first: appends overwrite
//           written blocks and change no metadata.
//
//   cc -O2 -o /tmp/fsync_modes scripts/bench/fsync_modes.c
//   cd <directory on the file system to test> && /tmp/fsync_modes 0 3000
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static double Cpu(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec +
         (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODE(0|1|2) RECORDS\n", argv[0]);
    return 2;
  }
  const int mode = atoi(argv[1]);
  const int n = atoi(argv[2]);
  const size_t kRecord = 1024;
  const off_t kAhead = 64 << 20;
  const char* path = "fsync_modes.test";
  unlink(path);
  int fd = open(path, O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    perror("open");
    return 1;
  }
  if (mode == 0 && fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, kAhead) != 0) {
    perror("fallocate");
  }
  if (mode == 1 && fallocate(fd, 0, 0, kAhead) != 0) perror("fallocate");
  if (mode == 2) {
    char* zeros = calloc(1, 1 << 20);
    for (off_t at = 0; at < kAhead; at += 1 << 20) {
      if (pwrite(fd, zeros, 1 << 20, at) != 1 << 20) {
        perror("pwrite");
        return 1;
      }
    }
    free(zeros);
    fdatasync(fd);
  }
  char record[1024];
  memset(record, 'x', sizeof(record));
  const double t0 = Now(), c0 = Cpu();
  for (int i = 0; i < n; ++i) {
    if (pwrite(fd, record, kRecord, (off_t)i * kRecord) != (ssize_t)kRecord) {
      perror("pwrite");
      return 1;
    }
    if (fdatasync(fd) != 0) {
      perror("fdatasync");
      return 1;
    }
  }
  const double t1 = Now(), c1 = Cpu();
  printf("mode %d: %.1f us wall, %.1f us CPU per append + fdatasync\n", mode,
         (t1 - t0) / n * 1e6, (c1 - c0) / n * 1e6);
  close(fd);
  unlink(path);
  return 0;
}
