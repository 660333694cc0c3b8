#include "kpctl/store/bolt_status.h"

#include <string>

#include "base/crc32c.h"
#include "storage/bolt/bolt_reader.h"

namespace kplane::kpctl {

StatusOr<SnapshotStatus> BoltSnapshotStatus(std::string_view data) {
  ASSIGN_OR_RETURN(bolt::BoltReader db, bolt::BoltReader::Open(data));
  SnapshotStatus st;
  st.total_size = static_cast<int64_t>(db.page_count() * db.page_size());
  uint32_t crc = 0;
  Status not_bucket;
  // One set for the root walk and every bucket walk: a page reached twice
  // anywhere in the file (bucket headers sharing a root page) is refused,
  // so a hostile file costs time linear in its size.
  bolt::BoltReader::Visited seen;
  Status walk = db.ForEachRoot(
      [&](std::string_view name, std::string_view header,
          bool is_bucket) -> Status {
        if (!is_bucket) {  // etcdctl's text
          not_bucket = InvalidArgumentError("cannot get hash of bucket " +
                                            std::string(name));
          return not_bucket;
        }
        crc = crc32c::Extend(crc, name.data(), name.size());
        const bool key_bucket = name == "key";
        return db.ForEachInBucket(
            header,
            [&](std::string_view k, std::string_view v, bool) -> Status {
              crc = crc32c::Extend(crc, k.data(), k.size());
              crc = crc32c::Extend(crc, v.data(), v.size());
              if (key_bucket && k.size() >= 8) {
                uint64_t main = 0;
                for (int i = 0; i < 8; ++i) {
                  main = (main << 8) | static_cast<unsigned char>(k[i]);
                }
                st.revision = static_cast<int64_t>(main);
              }
              ++st.total_keys;
              return Status::Ok();
            },
            &seen);
      },
      &seen);
  if (!not_bucket.ok()) return not_bucket;
  if (!walk.ok()) return InvalidArgumentError("invalid database");
  st.hash = crc;
  return st;
}

}  // namespace kplane::kpctl
