// Dotted field paths over a message schema and "did you mean" suggestions.
#include "recipes/field_path.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace rota::recipes {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

std::vector<PathPart> split_path(std::string_view path) {
  std::vector<PathPart> parts;
  size_t begin = 0;
  while (begin < path.size()) {
    size_t end = path.find('.', begin);
    if (end == std::string_view::npos) end = path.size();
    std::string_view step = path.substr(begin, end - begin);
    PathPart part;
    const size_t bracket = step.find('[');
    int index = -1;
    if (bracket != std::string_view::npos && step.back() == ']') {
      const std::string_view digits = step.substr(bracket + 1, step.size() - bracket - 2);
      const auto [end_ptr, error] =
          std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (error != std::errc() || end_ptr != digits.data() + digits.size()) index = -1;
    }
    if (index >= 0) {
      part.name = std::string(step.substr(0, bracket));
      part.index = index;
    } else {
      part.name = std::string(step);
    }
    parts.push_back(std::move(part));
    begin = end + 1;
  }
  return parts;
}

const FieldDescriptor* field_at(const Descriptor* root, std::string_view path) {
  const Descriptor* type = root;
  const FieldDescriptor* field = nullptr;
  for (const PathPart& part : split_path(path)) {
    if (type == nullptr) return nullptr;
    field = type->FindFieldByName(part.name);
    if (field == nullptr) return nullptr;
    type = field->message_type();
  }
  return field;
}

const Descriptor* message_type_at(const Descriptor* root, std::string_view path) {
  if (path.empty()) return root;
  const FieldDescriptor* field = field_at(root, path);
  return field == nullptr ? nullptr : field->message_type();
}

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions): a typo such as
// "lyaers" is one edit from "layers".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates) {
  const std::string wanted = lower(name);
  // Up to one edit per three characters (at least one, at most three).
  const size_t allowed = std::clamp<size_t>(wanted.size() / 3, 1, 3);
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(wanted, lower(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  if (best || wanted.size() < 3) return best;
  // Abbreviations ("optim" for "optimizer"), then parts ("shakespeare" for "tinyshakespeare"):
  // the unique candidate that starts with, then contains, the name.
  for (const bool anywhere : {false, true}) {
    std::optional<std::string> only;
    int matches = 0;
    for (const std::string& candidate : candidates) {
      const size_t at = lower(candidate).find(wanted);
      if (at != std::string::npos && (anywhere || at == 0)) {
        only = candidate;
        ++matches;
      }
    }
    if (matches == 1) return only;
    if (matches > 1) return std::nullopt;  // ambiguous
  }
  return std::nullopt;
}

std::vector<std::string> field_names(const Descriptor* type) {
  std::vector<std::string> names;
  for (int i = 0; i < type->field_count(); ++i) names.push_back(type->field(i)->name());
  return names;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::optional<std::string> best = closest_name(name, candidates);
  return best ? " (did you mean '" + *best + "'?)" : "";
}

void for_each_set_field(const google::protobuf::Message& message, const SetFieldVisitor& visit,
                        const std::string& prefix) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    const std::string path = prefix.empty() ? field->name() : prefix + "." + field->name();
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int index = field->is_repeated() ? i : -1;
      const std::string element = index < 0 ? path : path + "[" + std::to_string(i) + "]";
      visit(element, message, field, index);
      if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
      for_each_set_field(index < 0 ? reflection->GetMessage(message, field)
                                   : reflection->GetRepeatedMessage(message, field, i),
                         visit, element);
    }
  }
}

}  // namespace rota::recipes
