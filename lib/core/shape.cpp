#include "core/shape.h"

#include "core/errors.h"

namespace mstar {

Shape::Shape(std::initializer_list<int64_t> dims) {
  if (dims.size() > kMaxDims) throw InputError(fmt::format("shape: {} dims, at most {}", dims.size(), kMaxDims));
  for (int64_t d : dims) {
    if (d < 0) throw InputError(fmt::format("shape: negative dimension {}", d));
    dims_[static_cast<std::size_t>(rank_++)] = d;
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

Shape Shape::contiguous_strides() const {
  Shape s = *this;
  int64_t acc = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    s.dims_[static_cast<std::size_t>(i)] = acc;
    acc *= dims_[static_cast<std::size_t>(i)];
  }
  return s;
}

std::string Shape::str() const {
  std::string out = "[";
  for (int i = 0; i < rank_; ++i) out += fmt::format("{}{}", i ? ", " : "", dims_[static_cast<std::size_t>(i)]);
  return out + "]";
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[static_cast<std::size_t>(i)] != o.dims_[static_cast<std::size_t>(i)]) return false;
  return true;
}

}  // namespace mstar
