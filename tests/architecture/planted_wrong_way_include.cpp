// Built only by the test layering_compile_refuses_wrong_way_include: a tensor-layer file that
// includes an nn header must not compile, because rota_tensor's include view has no nn folder.
#include "framework/nn/module.h"
#include "framework/tensor/tensor.h"

namespace rota {
int planted_wrong_way_include() {
  return 0;
}
}  // namespace rota
