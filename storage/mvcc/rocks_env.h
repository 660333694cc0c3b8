// A RocksDB Env whose durable file operations go through a kplane
// FileSystem (base/file_system.h), so that the fault-injecting file system
// sees RocksDB's writes as it sees the WAL's (internal to kplane_mvcc).
//
// Through the seam: every writable file (RocksDB's WAL, SSTs, MANIFEST,
// CURRENT, OPTIONS, IDENTITY, LOCK) with its appends, syncs, truncation,
// preallocation and close; directory creation (mode 0700) and fsync; renames,
// hard links and deletions of files and directories. Files are created 0600,
// the info LOG included.
//
// Straight to RocksDB's default file system: reads (sequential and random
// access files), listings, sizes, modification times, free space. They see
// what the seam wrote, because every FileSystem writes through to the disk
// (the fault double too; it only forgets at a power cut).
//
// Not supported: ReuseWritableFile (log recycling, which the store leaves
// off) and NewRandomRWFile (external file ingestion, unused): both return
// NotSupported rather than writing around the seam.
//
// Ownership: `fs` is not owned and must outlive the Env, which must outlive
// every DB opened with it. Thread-safety: as RocksDB requires (any thread).
#ifndef KPLANE_STORAGE_MVCC_ROCKS_ENV_H_
#define KPLANE_STORAGE_MVCC_ROCKS_ENV_H_

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <memory>

#include "base/file_system.h"

namespace kplane::mvcc {

// RocksDB's FileSystem over ours.
std::shared_ptr<rocksdb::FileSystem> NewRocksFileSystem(FileSystem* fs);

// An Env for rocksdb::Options::env: RocksDB's default Env (threads, clock)
// with NewRocksFileSystem(fs) for files.
std::unique_ptr<rocksdb::Env> NewRocksEnv(FileSystem* fs);

}  // namespace kplane::mvcc

#endif  // KPLANE_STORAGE_MVCC_ROCKS_ENV_H_
