// Tensor views, copies, conversions and element access.
#include "framework/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <omp.h>

#include "framework/tensor/strided_loop.h"

namespace rota {

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  for (int64_t d : shape) ROTA_CHECK(d >= 0, "empty: negative size in shape {}", shape_str(shape));
  auto storage =
      std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype));
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

Tensor::Tensor(StoragePtr storage, Shape shape, Strides strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype) {}

int64_t Tensor::size(int64_t d) const {
  return shape_[normalize_axis(d, dim(), "size")];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  ROTA_CHECK(defined(), "raw_data: tensor is undefined");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

namespace {

// Resolves a single -1 in a requested shape against numel.
Shape infer_shape(const Shape& requested, int64_t numel, const char* op, const Shape& from) {
  Shape shape = requested;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      ROTA_CHECK(infer < 0, "{}: more than one -1 in {}", op, shape_str(requested));
      infer = static_cast<int>(i);
    } else {
      ROTA_CHECK(shape[i] >= 0, "{}: negative size in {}", op, shape_str(requested));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    ROTA_CHECK(known != 0 && numel % known == 0, "{}: cannot view {} as {}", op, shape_str(from),
               shape_str(requested));
    shape[infer] = numel / known;
  }
  ROTA_CHECK(shape_numel(shape) == numel, "{}: cannot view {} ({} elements) as {}", op,
             shape_str(from), numel, shape_str(requested));
  return shape;
}

// Strides for viewing (shape, strides) as new_shape without copying, or false if impossible.
// Walks groups of old dims that multiply to groups of new dims; each old group must be
// contiguous within itself.
bool view_strides(const Shape& shape, const Strides& strides, const Shape& new_shape,
                  Strides* out) {
  Shape old_shape;
  Strides old_strides;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 1) {
      old_shape.push_back(shape[i]);
      old_strides.push_back(strides[i]);
    }
  }
  out->assign(new_shape.size(), 0);
  size_t oi = 0;
  size_t ni = 0;
  while (ni < new_shape.size()) {
    if (new_shape[ni] == 1) {
      (*out)[ni] = 1;
      ++ni;
      continue;
    }
    if (oi >= old_shape.size()) return false;
    // Gather a chunk of old dims and new dims with equal products.
    int64_t old_prod = old_shape[oi];
    size_t oj = oi;
    size_t nj = ni;
    int64_t new_prod = new_shape[ni];
    while (old_prod != new_prod) {
      if (old_prod < new_prod) {
        ++oj;
        if (oj >= old_shape.size()) return false;
        if (old_strides[oj - 1] != old_strides[oj] * old_shape[oj]) return false;
        old_prod *= old_shape[oj];
      } else {
        ++nj;
        if (nj >= new_shape.size()) return false;
        new_prod *= new_shape[nj];
      }
    }
    // Assign strides to new dims ni..nj from the innermost old stride.
    int64_t stride = old_strides[oj];
    for (size_t k = nj + 1; k-- > ni;) {
      (*out)[k] = stride;
      stride *= new_shape[k];
    }
    oi = oj + 1;
    ni = nj + 1;
  }
  return oi == old_shape.size();
}

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  const Shape shape = infer_shape(requested, numel(), "view", shape_);
  Strides strides;
  if (numel() == 0) {
    strides = contiguous_strides(shape);
  } else {
    ROTA_CHECK(view_strides(shape_, strides_, shape, &strides),
               "view: cannot view {} with strides {} as {} without a copy (use reshape)",
               shape_str(shape_), shape_str(strides_), shape_str(shape));
  }
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::reshape(const Shape& requested) const {
  const Shape shape = infer_shape(requested, numel(), "reshape", shape_);
  Strides strides;
  if (numel() != 0 && view_strides(shape_, strides_, shape, &strides)) {
    return Tensor(storage_, shape, strides, offset_, dtype_);
  }
  return contiguous().view(shape);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  ROTA_CHECK(static_cast<int64_t>(order.size()) == dim(),
             "permute: order has {} entries for {} dims", order.size(), dim());
  Shape shape(dim());
  Strides strides(dim());
  std::vector<bool> seen(dim(), false);
  for (int64_t i = 0; i < dim(); ++i) {
    const int64_t a = normalize_axis(order[i], dim(), "permute");
    ROTA_CHECK(!seen[a], "permute: axis {} repeated", a);
    seen[a] = true;
    shape[i] = shape_[a];
    strides[i] = strides_[a];
  }
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  std::vector<int64_t> order(dim());
  for (int64_t i = 0; i < dim(); ++i) order[i] = i;
  std::swap(order[normalize_axis(d0, dim(), "transpose")],
            order[normalize_axis(d1, dim(), "transpose")]);
  return permute(order);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  const int64_t a = normalize_axis(d, dim(), "slice");
  ROTA_CHECK(step > 0, "slice: step must be positive, got {}", step);
  const int64_t n = shape_[a];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape = shape_;
  Strides strides = strides_;
  shape[a] = (end - start + step - 1) / step;
  strides[a] = strides_[a] * step;
  return Tensor(storage_, shape, strides, offset_ + start * strides_[a], dtype_);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  const int64_t a = normalize_axis(d, dim(), "narrow");
  ROTA_CHECK(start >= 0 && length >= 0 && start + length <= shape_[a],
             "narrow: [{}, {}) out of range for dim {} of {}", start, start + length, a,
             shape_str(shape_));
  return slice(a, start, start + length);
}

Tensor Tensor::expand(const Shape& shape) const {
  ROTA_CHECK(shape.size() >= shape_.size(), "expand: cannot expand {} to {}", shape_str(shape_),
             shape_str(shape));
  for (int64_t d : shape) {
    ROTA_CHECK(d >= 0, "expand: cannot expand {} to {} (negative size)", shape_str(shape_),
               shape_str(shape));
  }
  const size_t lead = shape.size() - shape_.size();
  Strides strides(shape.size(), 0);
  for (size_t i = 0; i < shape_.size(); ++i) {
    const int64_t target = shape[lead + i];
    if (shape_[i] == target) {
      strides[lead + i] = strides_[i];
    } else {
      ROTA_CHECK(shape_[i] == 1, "expand: cannot expand {} to {}", shape_str(shape_),
                 shape_str(shape));
      strides[lead + i] = 0;
    }
  }
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  const int64_t a = normalize_axis(d, dim() + 1, "unsqueeze");
  Shape shape = shape_;
  Strides strides = strides_;
  const int64_t stride = a < dim() ? strides_[a] * shape_[a] : 1;
  shape.insert(shape.begin() + a, 1);
  strides.insert(strides.begin() + a, stride);
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::squeeze(int64_t d) const {
  const int64_t a = normalize_axis(d, dim(), "squeeze");
  ROTA_CHECK(shape_[a] == 1, "squeeze: dim {} of {} has size {}, not 1", a, shape_str(shape_),
             shape_[a]);
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + a);
  strides.erase(strides.begin() + a);
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::contiguous() const {
  ROTA_CHECK(defined(), "contiguous: tensor is undefined");
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = Tensor::empty(shape_, dtype_);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor out = Tensor::empty(shape_, dtype);
  out.copy_from(*this);
  return out;
}

namespace {

template <typename T>
double load_as_double(const T* p) {
  if constexpr (std::is_same_v<T, BF16>) {
    return bf16_to_float(*p);
  } else {
    return static_cast<double>(*p);
  }
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, BF16>) {
    return double_to_bf16(v);
  } else {
    return static_cast<T>(v);
  }
}

template <typename Dst, typename Src>
Dst convert(Src v) {
  if constexpr (std::is_same_v<Dst, Src>) {
    return v;
  } else if constexpr (std::is_same_v<Src, BF16>) {
    return static_cast<Dst>(bf16_to_float(v));
  } else if constexpr (std::is_same_v<Dst, BF16> && std::is_same_v<Src, float>) {
    return float_to_bf16(v);
  } else if constexpr (std::is_same_v<Dst, BF16>) {
    // Through double (exact for f64, i32 and i64 up to 2^53) and a single rounding.
    return double_to_bf16(static_cast<double>(v));
  } else {
    return static_cast<Dst>(v);
  }
}

template <typename F>
void dispatch_all(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kF32:
      f(float{});
      break;
    case DType::kF64:
      f(double{});
      break;
    case DType::kBF16:
      f(BF16{});
      break;
    case DType::kI32:
      f(int32_t{});
      break;
    case DType::kI64:
      f(int64_t{});
      break;
  }
}

}  // namespace

void Tensor::copy_from(const Tensor& src) {
  ROTA_CHECK(defined() && src.defined(), "copy_from: undefined tensor");
  ROTA_CHECK(src.shape() == shape_, "copy_from: shape {} into {}", shape_str(src.shape()),
             shape_str(shape_));
  if (numel() == 0) return;
  if (dtype_ == src.dtype() && is_contiguous() && src.is_contiguous()) {
    std::memmove(raw_data(), src.raw_data(), nbytes());
    return;
  }
  dispatch_all(dtype_, [&](auto dst_tag) {
    using D = decltype(dst_tag);
    dispatch_all(src.dtype(), [&](auto src_tag) {
      using S = decltype(src_tag);
      D* dst = data<D>();
      const S* s = src.data<S>();
      // Rows of the innermost dim, split across threads when the copy is large enough to pay
      // for the fork (permute-then-contiguous is on every attention layer's path).
      const int64_t inner = dim() ? shape_.back() : 1;
      const int64_t rows = numel() / inner;
      const int64_t sd = dim() ? strides_.back() : 1;
      const int64_t ss = dim() ? src.strides().back() : 1;
      auto copy_rows = [&](int64_t r0, int64_t r1) {
        for_each_row_pair(shape_, strides_, src.strides(), r0, r1, [&](int64_t od, int64_t os) {
          D* d = dst + od;
          const S* x = s + os;
          if (sd == 1 && ss == 1) {
            for (int64_t i = 0; i < inner; ++i) d[i] = convert<D>(x[i]);
          } else {
            for (int64_t i = 0; i < inner; ++i) d[i * sd] = convert<D>(x[i * ss]);
          }
        });
      };
      if (numel() < (int64_t{1} << 16) || rows == 1) {
        copy_rows(0, rows);
      } else {
#pragma omp parallel
        {
          const int64_t nt = omp_get_num_threads();
          const int64_t id = omp_get_thread_num();
          copy_rows(rows * id / nt, rows * (id + 1) / nt);
        }
      }
    });
  });
}

void Tensor::fill(double value) {
  dispatch_all(dtype_, [&](auto tag) {
    using T = decltype(tag);
    const T v = from_double<T>(value);
    T* p = data<T>();
    for_each_strided(shape_, strides_, [&](int64_t o) { p[o] = v; });
  });
}

double Tensor::item() const {
  ROTA_CHECK(numel() == 1, "item: tensor of shape {} has {} elements, not 1", shape_str(shape_),
             numel());
  double out = 0;
  dispatch_all(dtype_, [&](auto tag) { out = load_as_double(data<decltype(tag)>()); });
  return out;
}

namespace {
// `op` ("at" or "set") names the caller in error messages.
int64_t element_offset(const Shape& shape, const Strides& strides,
                       const std::vector<int64_t>& index, const char* op) {
  ROTA_CHECK(index.size() == shape.size(), "{}: index has {} entries for shape {}", op,
             index.size(), shape_str(shape));
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    ROTA_CHECK(index[i] >= 0 && index[i] < shape[i], "{}: index {} out of range for shape {}", op,
               index[i], shape_str(shape));
    off += index[i] * strides[i];
  }
  return off;
}
}  // namespace

double Tensor::at(const std::vector<int64_t>& index) const {
  const int64_t off = element_offset(shape_, strides_, index, "at");
  double out = 0;
  dispatch_all(dtype_, [&](auto tag) { out = load_as_double(data<decltype(tag)>() + off); });
  return out;
}

void Tensor::set(const std::vector<int64_t>& index, double value) {
  const int64_t off = element_offset(shape_, strides_, index, "set");
  dispatch_all(dtype_, [&](auto tag) {
    using T = decltype(tag);
    data<T>()[off] = from_double<T>(value);
  });
}

std::vector<double> Tensor::to_double_vector() const {
  std::vector<double> out;
  out.reserve(numel());
  dispatch_all(dtype_, [&](auto tag) {
    using T = decltype(tag);
    const T* p = data<T>();
    for_each_strided(shape_, strides_, [&](int64_t o) { out.push_back(load_as_double(p + o)); });
  });
  return out;
}

std::string Tensor::to_string(int64_t max_elements) const {
  if (!defined()) return "Tensor(undefined)";
  std::string s = fmt::format("Tensor({}, {}, [", dtype_name(dtype_), shape_str(shape_));
  const std::vector<double> values = to_double_vector();
  const int64_t n = std::min<int64_t>(max_elements, static_cast<int64_t>(values.size()));
  for (int64_t i = 0; i < n; ++i) s += fmt::format("{}{:.6g}", i ? ", " : "", values[i]);
  if (n < static_cast<int64_t>(values.size())) s += ", ...";
  return s + "])";
}

Tensor tensor_from(const std::vector<double>& values, const Shape& shape, DType dtype) {
  ROTA_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
             "tensor_from: {} values for shape {}", values.size(), shape_str(shape));
  Tensor out = Tensor::empty(shape, dtype);
  dispatch_all(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = from_double<T>(values[i]);
  });
  return out;
}

void fill_elements(Tensor& tensor, const std::function<double()>& next) {
  ROTA_CHECK(tensor.defined() && tensor.is_contiguous(),
             "fill_elements: needs a defined, contiguous tensor");
  dispatch_all(tensor.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = tensor.data<T>();
    const int64_t n = tensor.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = from_double<T>(next());
  });
}

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor out = Tensor::empty(shape, dtype);
  out.fill(value);
  return out;
}

Tensor zeros(const Shape& shape, DType dtype) {
  Tensor out = Tensor::empty(shape, dtype);
  if (out.nbytes() > 0) std::memset(out.raw_data(), 0, out.nbytes());
  return out;
}

Tensor ones(const Shape& shape, DType dtype) {
  return full(shape, 1.0, dtype);
}

Tensor arange(double start, double end, double step, DType dtype) {
  ROTA_CHECK(step != 0, "arange: step is zero");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  return tensor_from(values, {n}, dtype);
}

Tensor scalar_tensor(double value, DType dtype) {
  return full({}, value, dtype);
}

Tensor empty_like(const Tensor& t) {
  return Tensor::empty(t.shape(), t.dtype());
}

Tensor empty_in_layout_of(const Tensor& t) {
  const int64_t nd = t.dim();
  if (nd <= 1) return Tensor::empty(t.shape(), t.dtype());
  // Stored dim i is dim order[i] of t: the leading dims by decreasing stride (dims of size 1 or
  // stride 0 say nothing about the layout and go first; ties keep their order), the last dim
  // innermost.
  std::vector<int64_t> order(nd - 1);
  for (int64_t d = 0; d < nd - 1; ++d) order[d] = d;
  const auto key = [&](int64_t d) {
    return t.size(d) <= 1 || t.strides()[d] == 0 ? std::numeric_limits<int64_t>::max()
                                                 : t.strides()[d];
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return key(a) > key(b); });
  order.push_back(nd - 1);
  Shape stored(nd);
  std::vector<int64_t> back(nd);  // dim d of t is stored dim back[d]
  for (int64_t i = 0; i < nd; ++i) {
    stored[i] = t.size(order[i]);
    back[order[i]] = i;
  }
  return Tensor::empty(stored, t.dtype()).permute(back);
}

Tensor with_unit_stride_rows(const Tensor& t) {
  return t.dim() == 0 || t.size(-1) <= 1 || t.strides().back() == 1 ? t : t.contiguous();
}

Tensor zeros_like(const Tensor& t) {
  return zeros(t.shape(), t.dtype());
}

}  // namespace rota
