// Reader for golden cases written by the PyTorch reference scripts in tests/reference/.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/tensor/tensor.h"

namespace rota::testing {

/// One golden case: a JSON object {"config": {...}, "tensors": {name: {shape, data}}}.
class GoldenCase {
 public:
  /// Loads `relative_path` under tests/golden/; throws naming the file when unreadable.
  static GoldenCase load(const std::string& relative_path);
  /// Lists the .json files of a folder under tests/golden/, sorted.
  static std::vector<std::string> list(const std::string& relative_dir);

  const nlohmann::json& config() const { return config_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  /// The tensor stored under `name`, converted to dtype; throws naming the key when absent.
  Tensor tensor(const std::string& name, DType dtype = DType::kF64) const;
  /// Names of all stored tensors, sorted.
  std::vector<std::string> names() const;

 private:
  std::string path_;
  nlohmann::json config_;
  std::map<std::string, Tensor> tensors_;
};

/// The gtest name of a golden file: its stem in CamelCase ("linear_attention/type1_odd_even_causal
/// .json" → "Type1OddEvenCausal"), for INSTANTIATE_TEST_SUITE_P over GoldenCase::list.
std::string golden_test_name(const std::string& relative_path);

/// golden_test_name as a gtest parameter-name generator.
struct GoldenTestName {
  template <typename ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    return golden_test_name(info.param);
  }
};

}  // namespace rota::testing
