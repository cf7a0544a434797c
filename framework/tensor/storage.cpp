// Aligned allocation for Storage.
#include "framework/tensor/storage.h"

#include <cstdlib>
#include <new>

namespace rota {

namespace {
constexpr size_t kAlignment = 64;
}

Storage::Storage(size_t nbytes) : nbytes_(nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  const size_t rounded = ((nbytes + kAlignment - 1) / kAlignment) * kAlignment;
  data_ = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (data_ == nullptr) throw std::bad_alloc();
}

Storage::~Storage() { std::free(data_); }

}  // namespace rota
