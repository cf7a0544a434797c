// Matrix products: operand preparation, oneDNN dispatch (f32/bf16), blocked f64 loop.
#include "framework/backend/primitives/matmul.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "framework/backend/cpu/parallel.h"
#include "framework/backend/onednn/matmul.h"
#include "framework/backend/primitives/elementwise.h"

namespace rota::backend {

namespace {

std::atomic<int64_t> operand_copy_count{0};

// matmul_time(): nanoseconds inside oneDNN's products called outside parallel regions, and the
// products' counts (relaxed atomics; a product takes microseconds at least).
std::atomic<int64_t> product_nanoseconds{0};
std::atomic<int64_t> product_count{0};
std::atomic<int64_t> products_in_parallel_count{0};

// One product after 1-D promotion and transpose flags: a [..., M, K] and b [..., K, N] are
// views of the caller's tensors; the batch dims broadcast to `batch`.
struct Product {
  Tensor a;
  Tensor b;
  Shape batch;
  Shape full_shape;    // batch + [M, N]
  Shape result_shape;  // full_shape without the unit dims of 1-D operands
  DType out_dtype = DType::kF32;
};

std::string operand_str(const Tensor& t, bool transposed) {
  return transposed && t.dim() >= 2 ? shape_str(t.shape()) + "^T" : shape_str(t.shape());
}

// f32·f32 → f32, bf16·bf16 → f32 (oneDNN accumulates in f32), f64·f64 → f64.
DType product_dtype(const char* op, DType a, DType b) {
  ROTA_CHECK(a == b, "{}: operand dtypes {} and {} differ", op, dtype_name(a), dtype_name(b));
  switch (a) {
    case DType::kF32:
    case DType::kBF16:
      return DType::kF32;
    case DType::kF64:
      return DType::kF64;
    default:
      fail("{}: dtype {} is not supported (expected f32, bf16 or f64)", op, dtype_name(a));
  }
}

Shape batch_dims(const Tensor& t) {
  return Shape(t.shape().begin(), t.shape().end() - 2);
}

// "[4,128,256] x [512,64]^T" for error messages (built only when a check fails).
std::string shapes_str(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  return fmt::format("{} x {}", operand_str(a, transpose_a), operand_str(b, transpose_b));
}

Product prepare(const char* op, const Tensor& a, const Tensor& b, bool transpose_a,
                bool transpose_b) {
  ROTA_CHECK(a.defined() && b.defined(), "{}: undefined operand", op);
  ROTA_CHECK(a.dim() >= 1 && b.dim() >= 1, "{}: {}: operands need at least one dim", op,
             shapes_str(a, b, transpose_a, transpose_b));
  Product p;
  p.out_dtype = product_dtype(op, a.dtype(), b.dtype());
  p.a = a.dim() == 1 ? a.unsqueeze(0) : (transpose_a ? a.transpose(-2, -1) : a);
  p.b = b.dim() == 1 ? b.unsqueeze(1) : (transpose_b ? b.transpose(-2, -1) : b);
  ROTA_CHECK(p.a.size(-1) == p.b.size(-2), "{}: {}: inner dims differ", op,
             shapes_str(a, b, transpose_a, transpose_b));

  const Shape batch_a = batch_dims(p.a);
  const Shape batch_b = batch_dims(p.b);
  for (size_t i = 1; i <= std::min(batch_a.size(), batch_b.size()); ++i) {
    const int64_t da = batch_a[batch_a.size() - i];
    const int64_t db = batch_b[batch_b.size() - i];
    ROTA_CHECK(da == db || da == 1 || db == 1, "{}: {}: batch dims {} and {} cannot be broadcast",
               op, shapes_str(a, b, transpose_a, transpose_b), shape_str(batch_a),
               shape_str(batch_b));
  }
  p.batch = broadcast_shapes(batch_a, batch_b, op);
  const int64_t m = p.a.size(-2);
  const int64_t n = p.b.size(-1);
  p.full_shape = p.batch;
  p.full_shape.push_back(m);
  p.full_shape.push_back(n);
  p.result_shape = p.batch;
  if (a.dim() != 1) p.result_shape.push_back(m);
  if (b.dim() != 1) p.result_shape.push_back(n);
  return p;
}

// ---- f64: blocked reference loop ----

// Rows of C per work item, and the K x N block of B kept hot in cache while those rows use it
// (128 x 256 doubles = 256 KiB, within L2).
constexpr int64_t kRowBlock = 16;
constexpr int64_t kDepthBlock = 128;
constexpr int64_t kColBlock = 256;

// Element offset of each output batch's matrix inside contiguous t: [..., R, C], whose batch
// dims broadcast to `batch` (size-1 dims repeat the same matrix).
std::vector<int64_t> batch_offsets(const Tensor& t, const Shape& batch) {
  const int64_t nb = static_cast<int64_t>(batch.size());
  const int64_t lead = nb - (t.dim() - 2);
  const Strides strides = contiguous_strides(t.shape());
  std::vector<int64_t> offsets(shape_numel(batch));
  std::vector<int64_t> index(nb, 0);
  for (int64_t& offset : offsets) {
    offset = 0;
    for (int64_t d = lead; d < nb; ++d) {
      if (t.size(d - lead) != 1) offset += index[d] * strides[d - lead];
    }
    for (int64_t d = nb - 1; d >= 0; --d) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  return offsets;
}

// out[i] (+)= a[i]·b[i] (+ bias) for every batch index i.
// a: [..., M, K], b: [..., K, N] (batch dims broadcast to `batch`), bias: [N] or undefined,
// out: [batch..., M, N]. C[m, n] = Σ_k A[m, k] B[k, n], accumulated row by row so the
// innermost loop runs along contiguous rows of B and C and vectorises.
void reference_multiply(Tensor out, const Tensor& a, const Tensor& b, const Shape& batch,
                        const Tensor& bias, bool accumulate) {
  const bool in_place = out.is_contiguous();
  const Tensor target =
      in_place ? out : (accumulate ? out.contiguous() : Tensor::empty(out.shape(), DType::kF64));
  const Tensor a_dense = a.contiguous();
  const Tensor b_dense = b.contiguous();
  const Tensor bias_dense = bias.defined() ? bias.to(DType::kF64).contiguous() : Tensor();
  const int64_t m = a.size(-2);
  const int64_t k = a.size(-1);
  const int64_t n = b.size(-1);
  const std::vector<int64_t> a_offsets = batch_offsets(a_dense, batch);
  const std::vector<int64_t> b_offsets = batch_offsets(b_dense, batch);
  const double* a_data = a_dense.data<double>();
  const double* b_data = b_dense.data<double>();
  const double* bias_data = bias_dense.defined() ? bias_dense.data<double>() : nullptr;
  double* c_data = target.data<double>();
  const int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  const int64_t items = static_cast<int64_t>(a_offsets.size()) * row_blocks;

  parallel_for(items, std::min(m, kRowBlock) * k * n, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t batch_index = item / row_blocks;
      const int64_t row_begin = (item % row_blocks) * kRowBlock;
      const int64_t row_end = std::min(m, row_begin + kRowBlock);
      const double* a_mat = a_data + a_offsets[batch_index];
      const double* b_mat = b_data + b_offsets[batch_index];
      double* c_mat = c_data + batch_index * m * n;
      if (!accumulate) {
        for (int64_t i = row_begin; i < row_end; ++i) {
          double* c_row = c_mat + i * n;
          for (int64_t j = 0; j < n; ++j) c_row[j] = bias_data != nullptr ? bias_data[j] : 0.0;
        }
      } else if (bias_data != nullptr) {
        for (int64_t i = row_begin; i < row_end; ++i) {
          double* c_row = c_mat + i * n;
          for (int64_t j = 0; j < n; ++j) c_row[j] += bias_data[j];
        }
      }
      for (int64_t j0 = 0; j0 < n; j0 += kColBlock) {
        const int64_t j1 = std::min(n, j0 + kColBlock);
        for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
          const int64_t k1 = std::min(k, k0 + kDepthBlock);
          for (int64_t i = row_begin; i < row_end; ++i) {
            double* c_row = c_mat + i * n;
            for (int64_t kk = k0; kk < k1; ++kk) {
              const double a_ik = a_mat[i * k + kk];
              const double* b_row = b_mat + kk * n;
              for (int64_t j = j0; j < j1; ++j) c_row[j] += a_ik * b_row[j];
            }
          }
        }
      }
    }
  });
  if (!in_place) out.copy_from(target);
}

// ---- f32 / bf16: oneDNN ----

// What oneDNN reads for one operand: the caller's view, or a dense copy when oneDNN cannot
// express the view's strides.
struct OnednnOperand {
  Tensor tensor;
  onednn::OperandLayout layout;
};

OnednnOperand dense_operand(const Tensor& t, const Shape& batch) {
  ++operand_copy_count;
  const Tensor dense = t.contiguous();
  return {dense, *onednn::operand_layout(dense, batch)};
}

OnednnOperand readable_operand(const Tensor& t, const Shape& batch) {
  if (std::optional<onednn::OperandLayout> layout = onednn::operand_layout(t, batch)) {
    return {t, *layout};
  }
  return dense_operand(t, batch);
}

// out (+)= a·b (+ bias) through one cached oneDNN primitive; shapes as in reference_multiply.
void onednn_multiply(Tensor out, const Tensor& a, const Tensor& b, const Shape& batch,
                     const Tensor& bias, bool accumulate) {
  const auto is_bf16 = [](const Tensor& t) { return t.defined() && t.dtype() == DType::kBF16; };
  if ((is_bf16(a) || is_bf16(b) || is_bf16(out) || is_bf16(bias)) && !bf16_matmul_native()) {
    // No bf16 matmul in oneDNN on this CPU: the bf16 operands widened to f32 (exactly) and an
    // f32 product, which accumulates in f32 as oneDNN's bf16 kernels do; a bf16 out is rounded
    // once at the end, as oneDNN rounds its f32 accumulator.
    const auto wide = [](const Tensor& t) {
      return t.defined() && t.dtype() == DType::kBF16 ? t.to(DType::kF32) : t;
    };
    if (out.dtype() != DType::kBF16) {
      onednn_multiply(out, wide(a), wide(b), batch, wide(bias), accumulate);
      return;
    }
    Tensor out_f32 = accumulate ? out.to(DType::kF32) : Tensor::empty(out.shape(), DType::kF32);
    onednn_multiply(out_f32, wide(a), wide(b), batch, wide(bias), accumulate);
    out.copy_from(out_f32);
    return;
  }
  // dst is written in place when oneDNN can address out as a full (non-broadcast) tensor,
  // otherwise through a dense temporary copied back at the end.
  Tensor target = out;
  std::optional<onednn::OperandLayout> dst = onednn::operand_layout(out, batch);
  // oneDNN's optimised kernels write row-major dst only.
  const bool in_place = dst.has_value() && dst->dims == out.shape() && dst->strides.back() == 1;
  if (!in_place) {
    target = accumulate ? out.contiguous() : Tensor::empty(out.shape(), out.dtype());
    dst = onednn::operand_layout(target, batch);
  }
  OnednnOperand src = readable_operand(a, batch);
  OnednnOperand weights = readable_operand(b, batch);

  onednn::MatmulKey key{src.layout, weights.layout, {}, *dst, accumulate};
  Tensor bias_dense;
  if (bias.defined()) {
    bias_dense = bias.contiguous();
    std::vector<int64_t> bias_dims(out.dim(), 1);
    bias_dims.back() = out.size(-1);
    key.bias = onednn::dense_layout(bias_dims, bias.dtype());
  }
  std::shared_ptr<const onednn::MatmulPrimitive> primitive = onednn::matmul_primitive(key);
  if (primitive->is_reference && (!src.tensor.is_contiguous() || !weights.tensor.is_contiguous())) {
    // oneDNN has only its slow reference kernel for these strides; dense copies of the
    // operands get an optimised one, which is worth far more than the copy costs.
    if (!src.tensor.is_contiguous()) src = dense_operand(src.tensor, batch);
    if (!weights.tensor.is_contiguous()) weights = dense_operand(weights.tensor, batch);
    key.src = src.layout;
    key.weights = weights.layout;
    primitive = onednn::matmul_primitive(key);
  }
  const bool in_parallel = omp_in_parallel() != 0;
  const auto start = std::chrono::steady_clock::now();
  onednn::execute_matmul(*primitive, src.tensor.raw_data(), weights.tensor.raw_data(),
                         bias_dense.defined() ? bias_dense.raw_data() : nullptr, target.raw_data());
  product_count.fetch_add(1, std::memory_order_relaxed);
  if (in_parallel) {
    products_in_parallel_count.fetch_add(1, std::memory_order_relaxed);
  } else {
    const auto elapsed = std::chrono::steady_clock::now() - start;
    product_nanoseconds.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count(),
        std::memory_order_relaxed);
  }
  if (!in_place) out.copy_from(target);
}

// True when t ([..., R, C], batch dims right-aligned to a batch of rank nb) takes different
// values along batch dim d: it has the dim, with size > 1 and a nonzero stride.
bool varies_along(const Tensor& t, int64_t nb, int64_t d) {
  const int64_t i = d - (nb - (t.dim() - 2));
  return i >= 0 && t.size(i) > 1 && t.strides()[i] != 0;
}

// `batch` with size 1 at every dim along which neither a nor b varies; nullopt when that
// changes nothing.
std::optional<Shape> distinct_batch(const Tensor& a, const Tensor& b, const Shape& batch) {
  const int64_t nb = static_cast<int64_t>(batch.size());
  Shape distinct = batch;
  bool changed = false;
  for (int64_t d = 0; d < nb; ++d) {
    if (batch[d] > 1 && !varies_along(a, nb, d) && !varies_along(b, nb, d)) {
      distinct[d] = 1;
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  return distinct;
}

// t narrowed to its first index along every batch dim that `distinct` reduced to size 1.
Tensor first_slices(const Tensor& t, const Shape& batch, const Shape& distinct) {
  const int64_t nb = static_cast<int64_t>(batch.size());
  const int64_t lead = nb - (t.dim() - 2);
  Tensor slice = t;
  for (int64_t d = std::max<int64_t>(lead, 0); d < nb; ++d) {
    if (distinct[d] == 1 && t.size(d - lead) > 1) slice = slice.narrow(d - lead, 0, 1);
  }
  return slice;
}

// out (+)= a·b (+ bias). a: [..., M, K], b: [..., K, N], out: [batch..., M, N], bias: [N].
// out is a tensor handle taken by value: writes go to the storage it shares with the caller.
void multiply(Tensor out, const Tensor& a, const Tensor& b, const Shape& batch, const Tensor& bias,
              bool accumulate) {
  if (out.numel() == 0) return;
  if (a.size(-1) == 0) {
    // An empty sum: nothing to multiply (oneDNN rejects K = 0), only the bias to add.
    if (!accumulate) out.fill(0.0);
    if (bias.defined()) out.copy_from(add(out, bias.to(out.dtype())));
    return;
  }
  if (std::optional<Shape> distinct = distinct_batch(a, b, batch)) {
    // Batch dims along which neither operand varies (both broadcast, e.g. an expanded a times
    // a 2-D b) give identical output slices: compute one and broadcast it, instead of copying
    // an operand to make oneDNN see a real dim (it requires dst dims = max of the operands').
    const Tensor a_slice = first_slices(a, batch, *distinct);
    const Tensor b_slice = first_slices(b, batch, *distinct);
    Shape slice_shape = *distinct;
    slice_shape.push_back(out.size(-2));
    slice_shape.push_back(out.size(-1));
    Tensor slice = Tensor::empty(slice_shape, out.dtype());
    multiply(slice, a_slice, b_slice, *distinct, bias, /*accumulate=*/false);
    out.copy_from(accumulate ? add(out, slice) : slice.expand(out.shape()));
    return;
  }
  if (out.dtype() == DType::kF64) {
    reference_multiply(out, a, b, batch, bias, accumulate);
  } else {
    onednn_multiply(out, a, b, batch, bias, accumulate);
  }
}

// True when x's leading dims (all but the last) merge into one dim, so x: [..., In] views as
// [R, In] without a copy.
bool leading_dims_merge(const Tensor& x) {
  int64_t merged_stride = -1;  // stride the next outer dim needs to continue the merged dim
  for (int64_t d = x.dim() - 2; d >= 0; --d) {
    if (x.size(d) == 1) continue;
    if (merged_stride >= 0 && x.strides()[d] != merged_stride) return false;
    merged_stride = x.strides()[d] * x.size(d);
  }
  return true;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  const Product p = prepare("matmul", a, b, transpose_a, transpose_b);
  Tensor out = Tensor::empty(p.full_shape, p.out_dtype);
  multiply(out, p.a, p.b, p.batch, Tensor(), /*accumulate=*/false);
  return out.view(p.result_shape);
}

void matmul_accumulate(const Tensor& out, const Tensor& a, const Tensor& b, bool transpose_a,
                       bool transpose_b) {
  const Product p = prepare("matmul_accumulate", a, b, transpose_a, transpose_b);
  ROTA_CHECK(out.defined(), "matmul_accumulate: out is undefined");
  ROTA_CHECK(out.shape() == p.result_shape && out.dtype() == p.out_dtype,
             "matmul_accumulate: out {} {} does not match the product {} x {} -> {} {}",
             shape_str(out.shape()), dtype_name(out.dtype()), operand_str(a, transpose_a),
             operand_str(b, transpose_b), shape_str(p.result_shape), dtype_name(p.out_dtype));
  // Give out back the unit dims that 1-D operands dropped, as a view.
  Tensor full = out;
  if (a.dim() == 1) full = full.unsqueeze(static_cast<int64_t>(p.batch.size()));
  if (b.dim() == 1) full = full.unsqueeze(full.dim());
  multiply(full, p.a, p.b, p.batch, Tensor(), /*accumulate=*/true);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  ROTA_CHECK(x.defined() && weight.defined(), "linear: undefined x or weight");
  ROTA_CHECK(x.dim() >= 1 && weight.dim() == 2,
             "linear: x {} and weight {}: expected x [..., In] and weight [Out, In]",
             shape_str(x.shape()), shape_str(weight.shape()));
  const int64_t in_features = weight.size(1);
  const int64_t out_features = weight.size(0);
  ROTA_CHECK(x.size(-1) == in_features, "linear: x {} and weight {}: in features differ",
             shape_str(x.shape()), shape_str(weight.shape()));
  const DType out_dtype = product_dtype("linear", x.dtype(), weight.dtype());
  if (bias.defined()) {
    ROTA_CHECK(bias.shape() == Shape{out_features},
               "linear: bias {} does not match weight {} (expected [{}])", shape_str(bias.shape()),
               shape_str(weight.shape()), out_features);
    const bool bias_ok =
        bias.dtype() == out_dtype || (x.dtype() == DType::kBF16 && bias.dtype() == DType::kBF16);
    ROTA_CHECK(bias_ok, "linear: bias dtype {} does not suit {} x and weight",
               dtype_name(bias.dtype()), dtype_name(x.dtype()));
  }
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(out_features);
  Tensor out = Tensor::empty(out_shape, out_dtype);
  // weightᵀ: [In, Out] is a strided view, never a copy.
  const Tensor weight_t = weight.transpose(0, 1);
  if (leading_dims_merge(x)) {
    // One [R, In] x [In, Out] product over all rows: the largest GEMM available.
    const int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
    const Tensor x_rows = x.reshape({rows, in_features});
    multiply(out.view({rows, out_features}), x_rows, weight_t, Shape{}, bias,
             /*accumulate=*/false);
  } else {
    // Rows that do not merge (e.g. a permuted [B, T, In] view): a batched product with the
    // weight broadcast, so x is still read in place.
    multiply(out, x, weight_t, batch_dims(out), bias, /*accumulate=*/false);
  }
  return out;
}

size_t matmul_cache_size() {
  return onednn::matmul_cache_size();
}

void clear_matmul_cache() {
  onednn::clear_matmul_cache();
}

bool bf16_matmul_native() {
  return onednn::bf16_matmul_supported();
}

MatmulTime matmul_time() {
  MatmulTime time;
  time.seconds = static_cast<double>(product_nanoseconds.load(std::memory_order_relaxed)) * 1e-9;
  time.products = product_count.load(std::memory_order_relaxed);
  time.products_in_parallel_regions = products_in_parallel_count.load(std::memory_order_relaxed);
  return time;
}

void reset_matmul_time() {
  product_nanoseconds.store(0, std::memory_order_relaxed);
  product_count.store(0, std::memory_order_relaxed);
  products_in_parallel_count.store(0, std::memory_order_relaxed);
}

int64_t matmul_operand_copies() {
  return operand_copy_count.load();
}

Tensor matmul_weight_gradient(const Tensor& g, const Tensor& x) {
  ROTA_CHECK(g.dim() == 2 && x.dim() == 2 && g.size(0) == x.size(0),
             "matmul_weight_gradient: g {} and x {} must be [R, Out] and [R, In]",
             shape_str(g.shape()), shape_str(x.shape()));
  if (x.size(1) > g.size(1)) return matmul(x, g, true, false).transpose(0, 1).contiguous();
  return matmul(g, x, true, false);
}

}  // namespace rota::backend
