// One kernel compiled per instruction set (AVX-512, AVX2+FMA, portable x86-64) and the run-time
// choice among the builds: the pattern of vecmath's array kernels, for any kernel function.
#pragma once

#include <type_traits>
#include <utility>

#include "framework/backend/cpu/vector_math.h"

namespace rota::backend::vecmath {

namespace detail {

// kernel's code in one function per instruction set. The target attribute sets the vector
// width (16 floats with AVX-512, 8 with AVX2, 4 with SSE2) and lets GCC fuse a * b + c into
// FMAs; `flatten` inlines kernel and everything it calls (compiled for any x86-64) into each
// build, so its loops are vectorised with that build's instructions. Each build takes exactly
// kernel's parameters, so its address converts to kernel's function-pointer type.
template <auto kernel, typename = decltype(kernel)>
struct Builds;

template <auto kernel, typename R, typename... Args>
struct Builds<kernel, R (*)(Args...)> {
  [[gnu::flatten]] static R portable(Args... args) { return kernel(std::forward<Args>(args)...); }
#if defined(__x86_64__)
  [[gnu::target("avx2,fma"), gnu::flatten]] static R avx2(Args... args) {
    return kernel(std::forward<Args>(args)...);
  }
  [[gnu::target("avx512f,fma"), gnu::flatten]] static R avx512(Args... args) {
    return kernel(std::forward<Args>(args)...);
  }
#endif
};

}  // namespace detail

/// The builds for one instruction set: Build::of<&kernel> is kernel (a function, e.g.
/// &rows<float>) compiled for Build::isa, with kernel's signature. A build is only called where
/// isa_supported(Build::isa).
struct PortableBuild {
  static constexpr Isa isa = Isa::kPortable;
  template <auto kernel>
  static constexpr auto of = &detail::Builds<kernel>::portable;
};

#if defined(__x86_64__)
struct Avx2Build {
  static constexpr Isa isa = Isa::kAvx2;
  template <auto kernel>
  static constexpr auto of = &detail::Builds<kernel>::avx2;
};

struct Avx512Build {
  static constexpr Isa isa = Isa::kAvx512;
  template <auto kernel>
  static constexpr auto of = &detail::Builds<kernel>::avx512;
};
#endif

/// f(Build{}) with the build type for isa (always PortableBuild off x86-64).
template <typename F>
decltype(auto) with_build(Isa isa, F&& f) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return f(Avx512Build{});
  if (isa == Isa::kAvx2) return f(Avx2Build{});
#endif
  return f(PortableBuild{});
}

/// kernel compiled for isa (e.g. `static const auto rows = build_of<&rows<float>>(best_isa());`).
template <auto kernel>
decltype(kernel) build_of(Isa isa) {
  return with_build(
      isa, [](auto build) -> decltype(kernel) { return decltype(build)::template of<kernel>; });
}

/// The kernel for element type T: float_kernel built for best_isa() (chosen once) when T is float,
/// double_kernel (the portable code of the f64 references and gradient checks) otherwise. E.g.
/// `const auto run = f32_build_or_portable<T, &group<float>, &group<double>>();`.
template <typename T, auto float_kernel, auto double_kernel>
auto f32_build_or_portable() {
  if constexpr (std::is_same_v<T, float>) {
    static const auto chosen = build_of<float_kernel>(best_isa());
    return chosen;
  } else {
    return double_kernel;
  }
}

}  // namespace rota::backend::vecmath
