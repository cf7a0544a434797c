// The process-wide oneDNN CPU engine and the stream kernels submit oneDNN primitives to.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace rota::backend::onednn {

/// The one CPU engine every oneDNN memory object and primitive in the process is created on.
const dnnl::engine& cpu_engine();

/// An in-order stream on cpu_engine(), one per calling thread. oneDNN's CPU runtime here is
/// OpenMP, so a primitive executed on it runs synchronously on the calling thread's OpenMP
/// team (the same pool and thread count as backend::parallel_for).
dnnl::stream& cpu_stream();

}  // namespace rota::backend::onednn
