// Fused-op against composed-op comparisons (see fused_vs_composed.h).
#include "tests/support/fused_vs_composed.h"

#include <gtest/gtest.h>

#include "framework/autograd/precision.h"
#include "tests/support/allclose.h"

namespace rota::testing {

void expect_same_results(const std::vector<Tensor>& fused, const std::vector<Tensor>& composed,
                         const std::vector<std::string>& names, DType dtype,
                         const std::string& what) {
  ASSERT_EQ(fused.size(), composed.size()) << what;
  ASSERT_EQ(fused.size(), names.size()) << what;
  for (size_t i = 0; i < fused.size(); ++i) {
    ASSERT_EQ(fused[i].defined(), composed[i].defined()) << what << " " << names[i];
    if (!fused[i].defined()) continue;
    ASSERT_EQ(fused[i].shape(), composed[i].shape()) << what << " " << names[i];
    if (dtype == DType::kF64) {
      EXPECT_TRUE(allclose(fused[i], composed[i], 1e-13, 1e-13)) << what << " " << names[i];
    } else {
      EXPECT_EQ(fused[i].to_double_vector(), composed[i].to_double_vector())
          << what << " " << names[i];
    }
  }
}

void for_each_bf16_matmul_path(const std::function<void(const std::string& label)>& f) {
  MatmulPrecisionGuard guard(MatmulPrecision::kBF16);
  for (bool emulate : {false, true}) {
    force_bf16_matmul_emulation(emulate);
    f(emulate ? "bf16 portable " : "bf16 ");
  }
  force_bf16_matmul_emulation(false);
}

}  // namespace rota::testing
