// Class names ↔ class ids for classifiers on user data, saved with runs as labels.json.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rota::data {

/// The label names of a classifier, in class-id order.
class LabelMap {
 public:
  LabelMap() = default;
  /// The given names in order (an explicit list); duplicates and empty names are errors.
  static LabelMap from_names(std::vector<std::string> names);
  /// From the labels seen in the training split: when every one is a non-negative integer
  /// below num_classes (written in decimal without leading zeros), the identity "0" … "C−1";
  /// otherwise the distinct labels in sorted (byte) order, whose count must be num_classes.
  /// `source` names the split for messages.
  static LabelMap from_training_labels(const std::vector<std::string>& labels, int64_t num_classes,
                                       std::string_view source);
  /// labels.json: {"format": "rota.labels", "version": 1, "labels": ["neg", "pos"]}.
  static LabelMap from_json(std::string_view text, std::string_view source);
  std::string to_json() const;

  int64_t size() const { return static_cast<int64_t>(names_.size()); }
  const std::vector<std::string>& names() const { return names_; }
  /// The name of class id (0 <= id < size()).
  const std::string& name(int64_t id) const;
  /// The id of a label; an unknown label is an error naming `origin` (file:line) and the known
  /// labels.
  int64_t id(std::string_view label, std::string_view origin) const;

 private:
  std::vector<std::string> names_;
};

/// The file name runs and checkpoints keep the mapping in.
inline constexpr const char* kLabelsFile = "labels.json";

}  // namespace rota::data
