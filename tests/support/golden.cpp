// Golden case loading (JSON, float64 values).
#include "tests/support/golden.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "tests/support/source_tree.h"

namespace rota::testing {

namespace {
std::string golden_root() {
  return std::string(ROTA_SOURCE_DIR) + "/tests/golden/";
}
}  // namespace

GoldenCase GoldenCase::load(const std::string& relative_path) {
  GoldenCase c;
  c.path_ = golden_root() + relative_path;
  std::ifstream in(c.path_);
  ROTA_CHECK(in.good(), "golden: cannot open {}", c.path_);
  nlohmann::json j;
  in >> j;
  c.config_ = j.value("config", nlohmann::json::object());
  for (const auto& [name, entry] : j.at("tensors").items()) {
    const Shape shape = entry.at("shape").get<Shape>();
    const std::vector<double> data = entry.at("data").get<std::vector<double>>();
    c.tensors_[name] = tensor_from(data, shape, DType::kF64);
  }
  return c;
}

std::vector<std::string> GoldenCase::list(const std::string& relative_dir) {
  std::vector<std::string> out;
  const std::string dir = golden_root() + relative_dir;
  ROTA_CHECK(std::filesystem::is_directory(dir), "golden: no folder {}", dir);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json")
      out.push_back(relative_dir + "/" + e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Tensor GoldenCase::tensor(const std::string& name, DType dtype) const {
  auto it = tensors_.find(name);
  ROTA_CHECK(it != tensors_.end(), "golden: {} has no tensor '{}'", path_, name);
  return it->second.to(dtype);
}

std::vector<std::string> GoldenCase::names() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors_) out.push_back(name);
  return out;
}

std::string golden_test_name(const std::string& relative_path) {
  std::string stem = relative_path.substr(relative_path.rfind('/') + 1);
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) {
    stem.resize(stem.size() - 5);
  }
  std::string camel;
  bool upper = true;
  for (char ch : stem) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    camel += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  return camel;
}

}  // namespace rota::testing
