// A reader of etcd 3.4's write-ahead log (member/wal/*.wal), for importing
// an etcd data directory (storage/server/etcd_import.h). Only what an
// import needs: who wrote the log (node and cluster ID), its entries, hard
// state and snapshot markers, and the membership its conf changes build.
// It never writes etcd's files.
//
// FORMAT (etcd's wal/encoder.go, decoder.go; docs/store.md "etcd data
// directories"). Files are named %016x-%016x.wal (sequence, raft index of
// the first entry the file may hold), sequences consecutive. A file is a
// series of frames, each
//   u64 little-endian length word: the low 56 bits the record's size; when
//     the top bit is set, the top byte's low 3 bits are the padding bytes
//     that follow the record to keep frames 8-byte aligned;
//   a walpb.Record {type, crc, data} (schemas/etcdwal.proto), then padding.
// A length word of zero ends the file (etcd preallocates 64 MiB of zeros).
// crc is CRC-32C chained over the data of every record since the log
// began: each file starts with a type-4 record carrying the CRC the
// previous file ended with (0 for the first), and every other record's crc
// is the running value after its own data.
//
// Checks (each a kCorruption naming the file and byte offset): a record
// longer than 10 MiB or than the bytes left in the file, a frame cut short
// (a truncated file), a record that does not parse, a CRC that does not
// match, a type-4 record that disagrees with the running CRC, an entry
// whose index skips ahead, two metadata records that differ, a file
// without a metadata record. kInvalidArgument: an unknown record type,
// file names that are not etcd's or whose sequence has a gap, no .wal
// files at all.
//
// Thread-safety: pure functions.
#ifndef KPLANE_STORAGE_BOLT_ETCD_WAL_H_
#define KPLANE_STORAGE_BOLT_ETCD_WAL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_system.h"
#include "base/statusor.h"
#include "schemas/raft.pb.h"
#include "schemas/rpc.pb.h"

namespace kplane::bolt {

struct EtcdWal {
  uint64_t node_id = 0;  // etcdserverpb.Metadata of the member
  uint64_t cluster_id = 0;
  // Raft index of the first file's name: 0 when the log still holds every
  // entry since the cluster began (no file was purged).
  uint64_t first_index = 0;
  // The entries as etcd's WAL.ReadAll returns them: an entry at an index
  // already read replaces it and everything after it.
  std::vector<raftpb::Entry> entries;
  raftpb::HardState hard_state;  // the last state record
  uint64_t snapshot_index = 0;   // the last snapshot marker
  uint64_t snapshot_term = 0;
  uint64_t LastIndex() const {
    return entries.empty() ? first_index : entries.back().index();
  }
};

// Reads one WAL file's bytes, continuing `*wal` and the running `*crc`
// (0 before the first file). `name` only labels errors.
Status ReadEtcdWalFile(std::string_view name, std::string_view data,
                       uint32_t* crc, EtcdWal* wal);

// Reads every .wal file of `dir` in sequence order.
StatusOr<EtcdWal> ReadEtcdWal(FileSystem* fs, const std::string& dir);

// The membership the log's conf changes build, applied in index order:
// AddNode and AddLearnerNode add the member their context holds (etcd's
// member JSON, bolt::ParseEtcdMemberJson), RemoveNode removes one (its id
// joins `removed`), UpdateNode replaces a member's peer URLs.
// kFailedPrecondition when the log no longer starts at index 0 (older
// files purged: the first members are unknown); kCorruption for a conf
// change that does not parse, or one whose context is not etcd's JSON or
// names another id.
struct EtcdWalMembership {
  std::vector<etcdserverpb::Member> members;  // in the order they joined
  std::vector<uint64_t> removed;
};
StatusOr<EtcdWalMembership> MembershipFromEtcdWal(const EtcdWal& wal);

}  // namespace kplane::bolt

#endif  // KPLANE_STORAGE_BOLT_ETCD_WAL_H_
