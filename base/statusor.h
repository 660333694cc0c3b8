// StatusOr<T>: either a value of type T or a non-OK Status.
//
//   StatusOr<RangeResult> r = store->Range(req);
//   if (!r.ok()) return r.status();
//   Use(*r);
//
// Accessing the value of a non-OK StatusOr crashes loudly (it is a bug).
#ifndef KPLANE_BASE_STATUSOR_H_
#define KPLANE_BASE_STATUSOR_H_

#include <cstdlib>
#include <optional>
#include <type_traits>
#include <utility>

#include "base/status.h"

namespace kplane {

namespace internal {
[[noreturn]] void StatusOrAccessError(const Status& s);
}  // namespace internal

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // A non-OK status. Constructing from an OK status is a bug.
  StatusOr(Status s) : status_(std::move(s)) {  // NOLINT: implicit by design
    if (status_.ok()) {
      status_ = Status(StatusCode::kInternal, "StatusOr built from OK status");
    }
  }
  template <typename U = T,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>,
                                                        Status>>>
  StatusOr(U&& value) : value_(std::forward<U>(value)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    Check();
    return *value_;
  }
  const T& value() const& {
    Check();
    return *value_;
  }
  T&& value() && {
    Check();
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? *value_ : fallback; }

 private:
  void Check() const {
    if (!status_.ok()) internal::StatusOrAccessError(status_);
  }
  Status status_;
  std::optional<T> value_;
};

}  // namespace kplane

#define KP_CONCAT_INNER_(a, b) a##b
#define KP_CONCAT_(a, b) KP_CONCAT_INNER_(a, b)

// ASSIGN_OR_RETURN(auto x, Foo()); returns Foo()'s status when not OK.
#define ASSIGN_OR_RETURN(lhs, expr)                                     \
  auto KP_CONCAT_(_kp_statusor_, __LINE__) = (expr);                    \
  if (!KP_CONCAT_(_kp_statusor_, __LINE__).ok())                        \
    return KP_CONCAT_(_kp_statusor_, __LINE__).status();                \
  lhs = std::move(KP_CONCAT_(_kp_statusor_, __LINE__)).value()

#endif  // KPLANE_BASE_STATUSOR_H_
