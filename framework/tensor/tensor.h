// Tensor: a typed, strided view (shape, strides, offset) into shared aligned storage.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "framework/base/error.h"
#include "framework/tensor/dtype.h"
#include "framework/tensor/shape.h"
#include "framework/tensor/storage.h"

namespace rota {

/// A row-major n-dimensional array. Copies are cheap and share storage (like torch.Tensor);
/// view operations (reshape of contiguous data, permute, slice, expand...) never copy.
/// Strides and offset are in elements.
class Tensor {
 public:
  /// An undefined tensor (defined() == false).
  Tensor() = default;
  /// Uninitialised contiguous tensor.
  static Tensor empty(const Shape& shape, DType dtype = DType::kF32);
  /// Wraps existing storage as a view.
  Tensor(StoragePtr storage, Shape shape, Strides strides, int64_t offset, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  /// Size of dimension d (negative counts from the end).
  int64_t size(int64_t d) const;
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  const StoragePtr& storage() const { return storage_; }

  /// Pointer to the first element; T must match dtype() exactly.
  template <typename T>
  T* data() const {
    ROTA_CHECK(defined(), "data: tensor is undefined");
    ROTA_CHECK(DTypeOf<T>::value == dtype_, "data: tensor has dtype {}, accessed as {}",
               dtype_name(dtype_), dtype_name(DTypeOf<T>::value));
    return static_cast<T*>(storage_->data()) + offset_;
  }
  /// Untyped pointer to the first element.
  void* raw_data() const;

  // ---- views (share storage) ----
  /// View with a new shape; one dim may be -1. Requires compatible strides (throws otherwise).
  Tensor view(const Shape& shape) const;
  /// Like view, but copies when the strides do not allow a view.
  Tensor reshape(const Shape& shape) const;
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  /// Elements start, start+step, ... < end along dim (end clamped to the size).
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  /// Broadcasts size-1 dims (and new leading dims) to `shape` with zero strides.
  Tensor expand(const Shape& shape) const;
  Tensor unsqueeze(int64_t dim) const;
  /// Removes dim (must have size 1).
  Tensor squeeze(int64_t dim) const;
  Tensor flatten() const { return reshape({numel()}); }

  // ---- copies ----
  /// This tensor if already contiguous, otherwise a contiguous copy.
  Tensor contiguous() const;
  /// Always a fresh contiguous copy.
  Tensor clone() const;
  /// Converted copy (or this tensor when the dtype already matches).
  Tensor to(DType dtype) const;
  /// Copies src (same shape, any dtype/strides) into this tensor's elements.
  void copy_from(const Tensor& src);
  /// Sets every element to value.
  void fill(double value);

  // ---- element access (slow; for tests, printing and small host code) ----
  /// The single element of a one-element tensor, as double.
  double item() const;
  /// Element at a multi-index, as double.
  double at(const std::vector<int64_t>& index) const;
  /// Sets the element at a multi-index.
  void set(const std::vector<int64_t>& index, double value);
  /// All elements in row-major order, converted to double.
  std::vector<double> to_double_vector() const;
  /// Human-readable form (dtype, shape and values, truncated when large).
  std::string to_string(int64_t max_elements = 64) const;

 private:
  StoragePtr storage_;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::kF32;
};

/// Writes next() into every element of a contiguous tensor in row-major order, each value
/// converted as tensor_from converts it: the same bits as tensor_from(values drawn in that
/// order), without a buffer of the whole tensor (initialising a large embedding).
void fill_elements(Tensor& tensor, const std::function<double()>& next);

/// Contiguous tensor from values (converted to dtype); numel(shape) must equal values.size().
Tensor tensor_from(const std::vector<double>& values, const Shape& shape,
                   DType dtype = DType::kF32);
Tensor zeros(const Shape& shape, DType dtype = DType::kF32);
Tensor ones(const Shape& shape, DType dtype = DType::kF32);
Tensor full(const Shape& shape, double value, DType dtype = DType::kF32);
/// [start, start+step, ...) up to end (exclusive).
Tensor arange(double start, double end, double step = 1.0, DType dtype = DType::kF32);
/// Scalar (0-dim) tensor.
Tensor scalar_tensor(double value, DType dtype = DType::kF32);
/// Contiguous tensor of the same shape and dtype as t, uninitialised.
Tensor empty_like(const Tensor& t);
/// Like empty_like, but dense in t's memory order: the dims before the last ordered by t's
/// strides (largest outermost; size-1 and stride-0 dims first; ties in dim order), the last dim
/// always innermost (unit-stride rows), returned permuted to t's shape. For t = a permuted view
/// (e.g. [B, N, H, D] seen as [B, H, N, D]) the result is that permuted layout, so a gradient
/// written into it needs no copy when the permute is undone. Contiguous t: a contiguous result.
Tensor empty_in_layout_of(const Tensor& t);
/// t itself when its rows (last dim) are unit-stride or hold at most one element — any view of
/// the other dims, e.g. a [B, N, H, D] tensor permuted to [B, H, N, D] — for kernels that read
/// rows in place; a contiguous copy otherwise.
Tensor with_unit_stride_rows(const Tensor& t);
Tensor zeros_like(const Tensor& t);

}  // namespace rota
