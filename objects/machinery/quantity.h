// resource.Quantity (k8s.io/apimachinery/pkg/api/resource): parse, compare,
// add/subtract and print CPU/memory amounts the way Kubernetes does.
//
//   "100m" -> 0.1 (DecimalSI)         String() "100m",  MilliValue() 100
//   "1Gi"  -> 1073741824 (BinarySI)   String() "1Gi",   Value() 1073741824
//   "1.5Gi"                           String() "1536Mi"
//   "0.5"                             String() "500m"
//   "1e3"  -> 1000 (DecimalExponent)  String() "1e3"
//   "2k"                              String() "2k"
//   "1024"                            String() "1024"   (DecimalSI)
//
// Representation: an exact integer count of nano units (10^-9) in a signed
// 128-bit integer, plus the format the value was written in. Parsing rounds
// up (away from zero) to the nano, as Kubernetes does. Values beyond about
// 1.7e29 do not fit and are rejected (Kubernetes' arbitrary-precision decimal
// would accept them); BinarySI values are capped at 2^63-1 like upstream.
//
// Canonical form: a BinarySI quantity prints with the largest binary suffix
// that keeps an integer (Ki..Ei) if it is an integer >= 1024 in magnitude,
// otherwise it is printed as DecimalSI: the mantissa with trailing zeros
// moved into an exponent that is a multiple of 3 (n, u, m, "", k, M, G, T,
// P, E), or "e<exp>" for DecimalExponent. A parsed string that is already
// canonical is kept verbatim (upstream caches it; "+5" stays "+5").
//
// Quantity is a value type; thread-compatible. Errors: InvalidArgument with
// Kubernetes' messages ("quantities must match the regular expression
// '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'", "unable to parse
// quantity's suffix", "unable to parse numeric part of quantity").
#ifndef KPLANE_OBJECTS_MACHINERY_QUANTITY_H_
#define KPLANE_OBJECTS_MACHINERY_QUANTITY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/statusor.h"

namespace kplane::machinery {

class Quantity {
 public:
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  Quantity() = default;  // zero, DecimalSI
  static StatusOr<Quantity> Parse(std::string_view s);
  // CHECK-fails on a malformed literal: for constants in code and tests.
  static Quantity MustParse(std::string_view s);
  // value * 10^0 and value * 10^-3 (resource.NewQuantity/NewMilliQuantity).
  static Quantity FromInt64(int64_t value, Format format);
  static Quantity FromMilli(int64_t milli, Format format);

  // Integer value, rounded up (away from zero): "100m".Value() == 1.
  int64_t Value() const;
  // Thousandths, rounded up: "1.5".MilliValue() == 1500.
  int64_t MilliValue() const;
  // -1, 0, 1.
  int Cmp(const Quantity& other) const;
  bool IsZero() const { return nanos_ == 0; }
  int Sign() const { return nanos_ < 0 ? -1 : (nanos_ > 0 ? 1 : 0); }
  // Keeps this quantity's format unless it is zero (then takes other's).
  // Results clamp to the range Parse accepts (about +-1.7e29): upstream's
  // sums are exact, ours saturate rather than overflow.
  void Add(const Quantity& other);
  void Sub(const Quantity& other);
  void Neg();

  Format format() const { return format_; }
  std::string String() const;
  // A double approximation, for metrics and ratios.
  double AsApproximateDouble() const;

  friend bool operator==(const Quantity& a, const Quantity& b) {
    return a.Cmp(b) == 0;
  }

 private:
  __int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
  std::string cached_;  // the parsed text when already canonical
};

}  // namespace kplane::machinery

#endif  // KPLANE_OBJECTS_MACHINERY_QUANTITY_H_
