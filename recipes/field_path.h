// Dotted field paths ("model.position.lrpe.type") over a schema, and "did you mean" suggestions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

namespace rota::recipes {

/// One step of a path: a field name and, for an element of a repeated field, its index.
struct PathPart {
  std::string name;
  int index = -1;  // -1: the whole field
};

/// "a.b[2].c" → {a}, {b, 2}, {c}. Empty for an empty path. Does not consult a schema.
std::vector<PathPart> split_path(std::string_view path);

/// A set field (or one element of a repeated field) found by for_each_set_field.
using SetFieldVisitor =
    std::function<void(const std::string& path, const google::protobuf::Message& parent,
                       const google::protobuf::FieldDescriptor* field, int index)>;

/// Calls visit(path, parent, field, index) for every set field of `message` and, recursively,
/// of the messages it holds, in schema order: `path` is dotted from `prefix` ("a.b", "a.c[2]"),
/// `index` the element of a repeated field or -1, and a message field is visited before its own
/// fields.
void for_each_set_field(const google::protobuf::Message& message, const SetFieldVisitor& visit,
                        const std::string& prefix = "");

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
