#include "apiserver/range_allocator.h"

#include <algorithm>
#include <utility>

#include "objects/envelope.h"
#include "schemas/k8s/core_rangeallocation.pb.h"

namespace kplane::apiserver {

namespace {

using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::TxnRequest;

// Lost compare-and-swaps in a row before giving up (each one means another
// writer changed the bitmap in between, so progress is being made).
constexpr int kMaxAttempts = 100;

const objects::TypeMeta kRangeAllocationType{"v1", "RangeAllocation"};

bool Test(const std::string& bits, int64_t i) {
  return (static_cast<uint8_t>(bits[i / 8]) >> (i % 8)) & 1;
}
void Set(std::string* bits, int64_t i, bool on) {
  auto byte = static_cast<uint8_t>((*bits)[i / 8]);
  const auto mask = static_cast<uint8_t>(1u << (i % 8));
  (*bits)[i / 8] = static_cast<char>(on ? (byte | mask) : (byte & ~mask));
}

// Our bitmap (little-endian bytes) <-> Go's big.Int.Bytes() (big-endian,
// no leading zero bytes), the bytes kube stores.
std::string ToBigEndian(const std::string& bits) {
  std::string out(bits.rbegin(), bits.rend());
  const size_t first = out.find_first_not_of('\0');
  return first == std::string::npos ? "" : out.substr(first);
}
std::string FromBigEndian(const std::string& data, size_t bytes) {
  std::string out(data.rbegin(), data.rend());
  out.resize(std::max(bytes, out.size()), '\0');
  return out;
}

}  // namespace

RangeAllocator::RangeAllocator(storage::KV* kv, std::string key,
                               std::string range, int64_t size, Kind kind)
    : kv_(kv),
      key_(std::move(key)),
      range_(std::move(range)),
      size_(size),
      band_(StaticBand(kind, size)),
      rand_(std::random_device{}()) {}

int64_t RangeAllocator::StaticBand(Kind kind, int64_t size) {
  // calculateRangeOffset of kube's ipallocator and portallocator: the same
  // shape, other constants. Matching them keeps the ports kube leaves to
  // explicit requests (86 of the default 2768, not 173) the same here.
  if (kind == Kind::kNodePorts) {
    constexpr int64_t kMin = 16, kMax = 128, kStep = 32;
    if (size <= kMin) return 0;
    return std::clamp(size / kStep, kMin, kMax);
  }
  constexpr int64_t kMin = 16, kMax = 256, kStep = 16;
  if (size < kMin) return 0;
  return std::clamp(size / kStep, kMin, kMax);
}

StatusOr<RangeAllocator::Bitmap> RangeAllocator::Read(int64_t* mod_revision) {
  RangeRequest req;
  req.set_key(key_);
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse resp, kv_->Range(req));
  const size_t bytes = static_cast<size_t>((size_ + 7) / 8);
  if (resp.kvs().empty()) {
    *mod_revision = 0;
    return Bitmap(bytes, '\0');
  }
  *mod_revision = resp.kvs(0).mod_revision();
  ::k8s::io::api::core::v1::RangeAllocation stored;
  RETURN_IF_ERROR(
      objects::DecodeEnvelopeInto(resp.kvs(0).value(), &stored).status());
  if (stored.range() != range_) {
    return FailedPreconditionError(key_ + " holds the allocations of range " +
                                   stored.range() + ", not of the configured " +
                                   range_);
  }
  Bitmap bits = FromBigEndian(stored.data(), bytes);
  if (bits.size() > bytes) {
    return FailedPreconditionError(key_ + " holds offsets beyond the range");
  }
  return bits;
}

Status RangeAllocator::Mutate(
    const std::function<StatusOr<bool>(Bitmap*)>& change) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    int64_t mod_revision = 0;
    ASSIGN_OR_RETURN(Bitmap bits, Read(&mod_revision));
    ASSIGN_OR_RETURN(bool changed, change(&bits));
    if (!changed) return Status::Ok();
    ::k8s::io::api::core::v1::RangeAllocation value;
    value.set_range(range_);
    value.set_data(ToBigEndian(bits));
    TxnRequest txn;
    Compare* unchanged = txn.add_compare();
    unchanged->set_key(key_);
    unchanged->set_target(Compare::MOD);
    unchanged->set_result(Compare::EQUAL);
    unchanged->set_mod_revision(mod_revision);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(key_);
    put->set_value(objects::EncodeEnvelope(value, kRangeAllocationType));
    ASSIGN_OR_RETURN(etcdserverpb::TxnResponse resp, kv_->Txn(txn));
    if (resp.succeeded()) return Status::Ok();
  }
  return UnavailableError("too many concurrent changes to " + key_);
}

StatusOr<int64_t> RangeAllocator::FindFree(const Bitmap& bits) {
  const int64_t band = band_;
  int64_t start;
  {
    MutexLock lock(&rand_mu_);
    start = band < size_
                ? band + static_cast<int64_t>(
                             rand_() % static_cast<uint64_t>(size_ - band))
                : 0;
  }
  // The upper band from a random start, wrapping; then the static band.
  for (int64_t n = 0; n < size_ - band; ++n) {
    const int64_t i = band + (start - band + n) % (size_ - band);
    if (!Test(bits, i)) return i;
  }
  for (int64_t i = 0; i < band; ++i) {
    if (!Test(bits, i)) return i;
  }
  return ResourceExhaustedError("range is full");
}

Status RangeAllocator::Allocate(int64_t offset) {
  if (offset < 0 || offset >= size_) {
    return Status(StatusCode::kOutOfRange, "offset outside the range");
  }
  return Mutate([&](Bitmap* bits) -> StatusOr<bool> {
    if (Test(*bits, offset)) return AlreadyExistsError("already allocated");
    Set(bits, offset, true);
    return true;
  });
}

StatusOr<int64_t> RangeAllocator::AllocateNext() {
  int64_t got = -1;
  RETURN_IF_ERROR(Mutate([&](Bitmap* bits) -> StatusOr<bool> {
    ASSIGN_OR_RETURN(got, FindFree(*bits));
    Set(bits, got, true);
    return true;
  }));
  return got;
}

Status RangeAllocator::Release(int64_t offset) {
  if (offset < 0 || offset >= size_) return Status::Ok();
  return Mutate([&](Bitmap* bits) -> StatusOr<bool> {
    if (!Test(*bits, offset)) return false;
    Set(bits, offset, false);
    return true;
  });
}

StatusOr<bool> RangeAllocator::Has(int64_t offset) {
  if (offset < 0 || offset >= size_) {
    return Status(StatusCode::kOutOfRange, "offset outside the range");
  }
  int64_t mod_revision = 0;
  ASSIGN_OR_RETURN(Bitmap bits, Read(&mod_revision));
  return Test(bits, offset);
}

StatusOr<int64_t> RangeAllocator::PeekNext() {
  int64_t mod_revision = 0;
  ASSIGN_OR_RETURN(Bitmap bits, Read(&mod_revision));
  return FindFree(bits);
}

}  // namespace kplane::apiserver
