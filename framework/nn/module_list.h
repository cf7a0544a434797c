// ModuleList: children registered under their index ("0", "1", ...), like torch.nn.ModuleList.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/nn/module.h"

namespace rota::nn {

/// An ordered list of modules of one type; gives dotted names such as `blocks.3.attn.q_proj`.
template <typename M>
class ModuleList : public Module {
 public:
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    items_.push_back(register_module(std::to_string(items_.size()), std::move(module)));
    return items_.back();
  }
  size_t size() const { return items_.size(); }
  const std::shared_ptr<M>& operator[](size_t i) const { return items_.at(i); }
  typename std::vector<std::shared_ptr<M>>::const_iterator begin() const { return items_.begin(); }
  typename std::vector<std::shared_ptr<M>>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace rota::nn
