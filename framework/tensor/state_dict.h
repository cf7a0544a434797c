// StateDict: name → tensor in a fixed order, what checkpoints are written from and read into.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/tensor/tensor.h"

namespace rota {

/// Name → tensor with a fixed iteration order (nn::Module::state_dict gives registration order,
/// depth-first) and lookup by name. This is what checkpoints are written from and read into.
class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  /// Appends an entry; throws when the name is already present.
  void insert(std::string name, Tensor tensor);
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  /// The tensor stored under `name`; throws naming the key when absent.
  const Tensor& at(const std::string& name) const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const std::vector<Item>& items() const { return items_; }
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace rota
