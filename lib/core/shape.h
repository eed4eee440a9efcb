#pragma once
// Shapes and strides: a handful of int64 dims, counted in elements.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <fmt/format.h>

namespace mstar {

class Shape {
 public:
  static constexpr int kMaxDims = 6;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  int64_t numel() const;
  // Row-major strides, in elements.
  Shape contiguous_strides() const;
  std::string str() const;  // "[2, 3, 4]"

  bool operator==(const Shape& o) const;

 private:
  std::array<int64_t, kMaxDims> dims_{};
  int rank_ = 0;
};

}  // namespace mstar

template <>
struct fmt::formatter<mstar::Shape> : fmt::formatter<std::string> {
  auto format(const mstar::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.str(), ctx);
  }
};
