// oneDNN matmul: operand layouts from tensor views, primitive creation and the primitive cache.
#include "framework/backend/onednn/matmul.h"

#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "framework/backend/onednn/engine.h"
#include "framework/base/seed_mix.h"

namespace rota::backend::onednn {

namespace {

// A bound on the cache: shapes vary in evaluation (sequence lengths, last batches), and each
// primitive holds JIT code. When it is full the cache starts over; a training step uses a
// few dozen shapes, so the hot ones come back after one miss each.
constexpr size_t kMaxCachedPrimitives = 1024;

dnnl::memory::data_type to_dnnl(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return dnnl::memory::data_type::f32;
    case DType::kBF16:
      return dnnl::memory::data_type::bf16;
    default:
      fail("matmul: dtype {} has no oneDNN kernel (expected f32 or bf16)", dtype_name(dtype));
  }
}

dnnl::memory::desc memory_desc(const OperandLayout& layout) {
  return dnnl::memory::desc(layout.dims, to_dnnl(layout.dtype), layout.strides);
}

std::string layout_str(const OperandLayout& layout) {
  return fmt::format("{} strides {} {}", shape_str(layout.dims), shape_str(layout.strides),
                     dtype_name(layout.dtype));
}

void add_to_hash(size_t& seed, int64_t value) {
  seed = ::rota::hash_combine(seed, std::hash<int64_t>{}(value));
}

void hash_layout(size_t& seed, const OperandLayout& layout) {
  add_to_hash(seed, static_cast<int64_t>(layout.dims.size()));
  for (int64_t d : layout.dims) add_to_hash(seed, d);
  for (int64_t s : layout.strides) add_to_hash(seed, s);
  add_to_hash(seed, static_cast<int64_t>(layout.dtype));
}

struct MatmulKeyHash {
  size_t operator()(const MatmulKey& key) const {
    size_t seed = key.accumulate ? 1 : 0;
    hash_layout(seed, key.src);
    hash_layout(seed, key.weights);
    hash_layout(seed, key.bias);
    hash_layout(seed, key.dst);
    return seed;
  }
};

struct MatmulCache {
  std::mutex mutex;
  std::unordered_map<MatmulKey, std::shared_ptr<const MatmulPrimitive>, MatmulKeyHash> entries;
};

MatmulCache& cache() {
  static MatmulCache instance;
  return instance;
}

std::shared_ptr<const MatmulPrimitive> create_primitive(const MatmulKey& key) {
  auto result = std::make_shared<MatmulPrimitive>();
  try {
    result->src = memory_desc(key.src);
    result->weights = memory_desc(key.weights);
    result->dst = memory_desc(key.dst);
    const bool has_bias = !key.bias.dims.empty();
    if (has_bias) result->bias = memory_desc(key.bias);
    const dnnl::matmul::desc desc =
        has_bias ? dnnl::matmul::desc(result->src, result->weights, result->bias, result->dst)
                 : dnnl::matmul::desc(result->src, result->weights, result->dst);
    dnnl::primitive_attr attr;
    if (key.accumulate) {
      // The sum post-op reads dst before writing it: dst = 1 * dst + product.
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
    result->is_reference = std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
    result->primitive = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    fail("matmul: oneDNN cannot create a primitive for src {} x weights {} -> dst {}: {}",
         layout_str(key.src), layout_str(key.weights), layout_str(key.dst), e.what());
  }
  return result;
}

}  // namespace

std::optional<OperandLayout> operand_layout(const Tensor& t, const Shape& batch) {
  const int64_t nd = static_cast<int64_t>(batch.size()) + 2;
  const int64_t lead = nd - t.dim();
  ROTA_CHECK(t.dim() >= 2 && lead >= 0, "matmul: operand {} does not fit batch {}",
             shape_str(t.shape()), shape_str(batch));
  OperandLayout layout;
  layout.dims.assign(nd, 1);
  layout.strides.assign(nd, 0);
  layout.dtype = t.dtype();
  for (int64_t i = lead; i < nd; ++i) {
    layout.dims[i] = t.size(i - lead);
    layout.strides[i] = t.strides()[i - lead];
  }

  // Matrix part [R, C] with strides (sr, sc): row-major needs sc == 1 and sr >= C, column-major
  // sr == 1 and sc >= R. The stride of a size-1 dim is free, so pick the dense one.
  const int64_t r = layout.dims[nd - 2];
  const int64_t c = layout.dims[nd - 1];
  int64_t& sr = layout.strides[nd - 2];
  int64_t& sc = layout.strides[nd - 1];
  if (r == 1 && c == 1) {
    sr = 1;
    sc = 1;
  } else if (r == 1) {
    if (sc == 1) {
      sr = c;
    } else if (sc > 0) {
      sr = 1;  // a strided row is a column-major [1, C] with leading dimension sc
    } else {
      return std::nullopt;
    }
  } else if (c == 1) {
    // A column is row-major [R, 1] with leading dimension sr (dense when sr == 1). Row-major,
    // not column-major: oneDNN only has optimised kernels for row-major dst.
    if (sr <= 0) return std::nullopt;
    sc = 1;
  } else if (!((sc == 1 && sr >= c) || (sr == 1 && sc >= r))) {
    return std::nullopt;
  }

  // Batch dims, innermost first: an expanded dim (stride 0) is a broadcast dim of size 1 for
  // oneDNN; a size-1 dim gets the stride a dense layout would give it (the span of the dims
  // inside it), which is what oneDNN's optimised kernels expect.
  int64_t span = 1 + (r - 1) * sr + (c - 1) * sc;
  for (int64_t i = nd - 3; i >= 0; --i) {
    if (layout.strides[i] == 0) layout.dims[i] = 1;
    if (layout.dims[i] == 1) {
      layout.strides[i] = span;
    } else {
      span += (layout.dims[i] - 1) * layout.strides[i];
    }
  }
  return layout;
}

OperandLayout dense_layout(const std::vector<int64_t>& dims, DType dtype) {
  OperandLayout layout;
  layout.dims = dims;
  layout.strides = contiguous_strides(dims);
  layout.dtype = dtype;
  return layout;
}

std::shared_ptr<const MatmulPrimitive> matmul_primitive(const MatmulKey& key) {
  MatmulCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    const auto it = c.entries.find(key);
    if (it != c.entries.end()) return it->second;
  }
  // Created outside the lock: JIT compilation takes milliseconds and other shapes need not
  // wait. If two threads race on one key, the first insertion wins and both use it.
  std::shared_ptr<const MatmulPrimitive> created = create_primitive(key);
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.entries.size() >= kMaxCachedPrimitives) c.entries.clear();
  return c.entries.try_emplace(key, std::move(created)).first->second;
}

bool bf16_matmul_supported() {
  static const bool supported = [] {
    // The two kinds of bf16 products Rota makes: plain, and with an f32 bias.
    try {
      const dnnl::memory::desc bf16 = memory_desc(dense_layout({2, 2}, DType::kBF16));
      const dnnl::memory::desc f32 = memory_desc(dense_layout({2, 2}, DType::kF32));
      const dnnl::memory::desc bias = memory_desc(dense_layout({1, 2}, DType::kF32));
      const dnnl::matmul::primitive_desc plain(dnnl::matmul::desc(bf16, bf16, f32), cpu_engine());
      const dnnl::matmul::primitive_desc biased(dnnl::matmul::desc(bf16, bf16, bias, f32),
                                                cpu_engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return supported;
}

void execute_matmul(const MatmulPrimitive& primitive, const void* src, const void* weights,
                    const void* bias, void* dst) {
  const dnnl::engine& engine = cpu_engine();
  dnnl::stream& stream = cpu_stream();
  // The memory objects only wrap the caller's pointers: nothing is allocated or copied.
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(primitive.src, engine, const_cast<void*>(src))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(primitive.weights, engine, const_cast<void*>(weights))},
      {DNNL_ARG_DST, dnnl::memory(primitive.dst, engine, dst)},
  };
  if (bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(primitive.bias, engine, const_cast<void*>(bias)));
  }
  try {
    primitive.primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    fail("matmul: oneDNN execution failed: {}", e.what());
  }
}

size_t matmul_cache_size() {
  MatmulCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.entries.size();
}

void clear_matmul_cache() {
  MatmulCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.entries.clear();
}

}  // namespace rota::backend::onednn
