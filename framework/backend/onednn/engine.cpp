// The process-wide oneDNN CPU engine and per-thread streams.
#include "framework/backend/onednn/engine.h"

namespace rota::backend::onednn {

const dnnl::engine& cpu_engine() {
  // Function-local static: created once, thread-safely, on first use.
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& cpu_stream() {
  // One stream per host thread, so threads that each run kernels never share stream state.
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

}  // namespace rota::backend::onednn
