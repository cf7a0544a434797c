// StateDict: ordered name → tensor map.
#include "framework/tensor/state_dict.h"

#include "framework/base/error.h"

namespace rota {

void StateDict::insert(std::string name, Tensor tensor) {
  ROTA_CHECK(tensor.defined(), "StateDict: tensor for '{}' is undefined", name);
  ROTA_CHECK(index_.count(name) == 0, "StateDict: duplicate entry '{}'", name);
  index_.emplace(name, items_.size());
  items_.emplace_back(std::move(name), std::move(tensor));
}

const Tensor& StateDict::at(const std::string& name) const {
  const auto it = index_.find(name);
  ROTA_CHECK(it != index_.end(), "StateDict: no entry '{}'", name);
  return items_[it->second].second;
}

}  // namespace rota
