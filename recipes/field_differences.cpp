// Field-by-field differences of two recipe messages (see field_differences.h).
#include "recipes/field_differences.h"

#include <sstream>

#include <fmt/format.h>
#include <google/protobuf/util/message_differencer.h>

namespace rota::recipes {
namespace {

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const size_t last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

}  // namespace

std::vector<std::string> field_differences(const google::protobuf::Message& first,
                                           const google::protobuf::Message& second,
                                           const std::string& prefix, size_t limit,
                                           const std::string& first_only,
                                           const std::string& second_only) {
  std::string report;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&report);
  differencer.Compare(first, second);
  // The differencer writes "modified: train.lr: 0.001 -> 0.002", "added: …", "deleted: …".
  std::vector<std::string> fields;
  std::istringstream lines(report);
  size_t total = 0;
  for (std::string line; std::getline(lines, line);) {
    line = trimmed(line);
    if (line.empty()) continue;
    ++total;
    for (const char* kind : {"modified: ", "added: ", "deleted: "}) {
      const std::string tag = kind;
      if (line.rfind(tag, 0) != 0) continue;
      const std::string what = prefix + line.substr(tag.size());
      line = tag == "modified: " ? what
             : tag == "added: "  ? fmt::format("{} ({})", what, second_only)
                                 : fmt::format("{} ({})", what, first_only);
      break;
    }
    if (fields.size() < limit) fields.push_back(line);
  }
  if (total > fields.size()) fields.push_back(fmt::format("… and {} more", total - fields.size()));
  return fields;
}

}  // namespace rota::recipes
