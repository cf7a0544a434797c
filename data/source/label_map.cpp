// Building, saving and looking up label mappings.
#include "data/source/label_map.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "data/util/utf8.h"
#include "framework/base/error.h"

namespace rota::data {

namespace {

bool is_class_number(const std::string& label, int64_t num_classes) {
  if (label.empty() || label.size() > 9 ||
      label.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  if (label.size() > 1 && label[0] == '0') return false;
  return std::stoll(label) < num_classes;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < 20; ++i) {
    text += (i ? ", \"" : "\"") + names[i] + "\"";
  }
  if (names.size() > 20) text += fmt::format(", … ({} in all)", names.size());
  return text;
}

}  // namespace

LabelMap LabelMap::from_names(std::vector<std::string> names) {
  std::set<std::string> seen;
  for (const std::string& name : names) {
    ROTA_CHECK(!name.empty(), "labels: an empty label name");
    ROTA_CHECK(seen.insert(name).second, "labels: \"{}\" is listed twice", name);
  }
  LabelMap map;
  map.names_ = std::move(names);
  return map;
}

LabelMap LabelMap::from_training_labels(const std::vector<std::string>& labels, int64_t num_classes,
                                        std::string_view source) {
  ROTA_CHECK(num_classes >= 2, "labels: num_classes {} < 2", num_classes);
  // Labels are saved in the run (labels.json) and printed by predict: they must be text.
  for (const std::string& label : labels) {
    ROTA_CHECK(is_valid_utf8(label),
               "labels: {}: the label \"{}\" is not valid UTF-8 text; convert the file to UTF-8 "
               "(e.g. iconv -f latin1 -t utf-8)",
               source, label);
  }
  const bool numeric = std::all_of(labels.begin(), labels.end(), [&](const std::string& label) {
    return is_class_number(label, num_classes);
  });
  LabelMap map;
  if (numeric) {
    for (int64_t i = 0; i < num_classes; ++i) map.names_.push_back(std::to_string(i));
    return map;
  }
  const std::set<std::string> distinct(labels.begin(), labels.end());
  map.names_.assign(distinct.begin(), distinct.end());
  ROTA_CHECK(map.size() == num_classes,
             "labels: {} has {} distinct labels ({}) but model.classifier.num_classes is {}; set "
             "num_classes to {}, or list the classes in data.files.labels",
             source, map.size(), quoted_list(map.names_), num_classes, map.size());
  return map;
}

LabelMap LabelMap::from_json(std::string_view text, std::string_view source) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ROTA_CHECK(!j.is_discarded() && j.is_object() && j.value("format", "") == "rota.labels" &&
                 j.value("version", 0) == 1 && j.contains("labels") && j["labels"].is_array(),
             "labels: {} is not a rota.labels version 1 file", source);
  std::vector<std::string> names;
  for (const auto& name : j["labels"]) {
    ROTA_CHECK(name.is_string(), "labels: {}: a label that is not a string", source);
    names.push_back(name.get<std::string>());
  }
  return from_names(std::move(names));
}

std::string LabelMap::to_json() const {
  const nlohmann::json j = {{"format", "rota.labels"}, {"version", 1}, {"labels", names_}};
  return j.dump(2) + "\n";
}

const std::string& LabelMap::name(int64_t id) const {
  ROTA_CHECK(id >= 0 && id < size(), "labels: class id {} outside [0, {})", id, size());
  return names_[static_cast<size_t>(id)];
}

int64_t LabelMap::id(std::string_view label, std::string_view origin) const {
  const auto it = std::find(names_.begin(), names_.end(), label);
  ROTA_CHECK(it != names_.end(), "data: {}: label \"{}\" is not one of the {} known labels ({})",
             origin, label, names_.size(), quoted_list(names_));
  return it - names_.begin();
}

}  // namespace rota::data
