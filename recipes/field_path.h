// Dotted field paths ("model.position.lrpe.type") over a schema, and "did you mean" suggestions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>

namespace rota::recipes {

/// One step of a path: a field name and, for an element of a repeated field, its index.
struct PathPart {
  std::string name;
  int index = -1;  // -1: the whole field
};

/// "a.b[2].c" → {a}, {b, 2}, {c}. Empty for an empty path. Does not consult a schema.
std::vector<PathPart> split_path(std::string_view path);

/// The field at the end of `path` below `root`, or nullptr when some name is not a field (or
/// a middle step is not a message).
const google::protobuf::FieldDescriptor* field_at(const google::protobuf::Descriptor* root,
                                                  std::string_view path);

/// The message type at `path` (root itself for ""), or nullptr when the path does not end at a
/// message field.
const google::protobuf::Descriptor* message_type_at(const google::protobuf::Descriptor* root,
                                                    std::string_view path);

/// The candidate closest to `name` (edit distance, case-insensitive) when it is close enough to
/// be a likely misspelling, else the only candidate that starts with `name` (3+ characters),
/// else the only one that contains it; nullopt otherwise.
std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates);

/// The field names of `type` in declaration order.
std::vector<std::string> field_names(const google::protobuf::Descriptor* type);

/// "a, b, c".
std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

/// " (did you mean 'x'?)" for the closest candidate, or "" when none is close.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace rota::recipes
