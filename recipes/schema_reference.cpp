// The generated field reference of docs/recipes.md and the "every field has a comment" check.
#include "recipes/schema_reference.h"

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <google/protobuf/descriptor.pb.h>

namespace rota::recipes {

namespace pb = google::protobuf;

namespace {

/// A comment as one line: lines joined with spaces, trimmed; '|' escaped for tables.
std::string one_line(const std::string& comment) {
  std::string out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) {
    const size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos) continue;
    const size_t end = line.find_last_not_of(" \t");
    if (!out.empty()) out += " ";
    out += line.substr(begin, end - begin + 1);
  }
  std::string escaped;
  for (char c : out) {
    if (c == '|') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

template <typename Element>
std::string comment_of(const Element& element) {
  pb::SourceLocation location;
  if (!element.GetSourceLocation(&location)) return "";
  std::string text = one_line(location.leading_comments);
  const std::string trailing = one_line(location.trailing_comments);
  if (!trailing.empty()) text += (text.empty() ? "" : " ") + trailing;
  return text;
}

std::string default_text(const pb::FieldDescriptor& field) {
  if (field.is_repeated() || field.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) return "";
  if (!field.has_default_value()) return "";
  switch (field.cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return "\"" + field.default_value_string() + "\"";
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      return field.default_value_enum()->name();
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return field.default_value_bool() ? "true" : "false";
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
      std::ostringstream out;
      out << field.default_value_double();
      return out.str();
    }
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(field.default_value_int32());
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(field.default_value_int64());
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return std::to_string(field.default_value_uint32());
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(field.default_value_uint64());
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      return std::to_string(field.default_value_float());
    default:
      return "";
  }
}

std::string type_text(const pb::FieldDescriptor& field) {
  std::string type;
  if (field.message_type() != nullptr) {
    type = field.message_type()->name();
  } else if (field.enum_type() != nullptr) {
    type = field.enum_type()->name();
  } else {
    type = field.type_name();
  }
  return field.is_repeated() ? "repeated " + type : type;
}

void describe_message(const pb::Descriptor& type, const std::string& path,
                      std::set<const pb::Descriptor*>& seen, std::string& out) {
  if (!seen.insert(&type).second) return;
  if (path.empty()) {
    out += "### " + type.name() + " (top level)\n\n";
  } else {
    out += "### `" + path + "` (" + type.name() + ")\n\n";
  }
  const std::string about = comment_of(type);
  if (!about.empty()) out += about + "\n\n";
  if (type.field_count() == 0) {
    out += "No fields: its presence is the choice.\n\n";
    return;
  }
  out += "| field | type | default | meaning |\n|---|---|---|---|\n";
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor& field = *type.field(i);
    std::string meaning = comment_of(field);
    if (const pb::OneofDescriptor* oneof = field.real_containing_oneof()) {
      meaning = "*(one of `" + oneof->name() + "`)* " + meaning;
    }
    if (const pb::EnumDescriptor* values = field.enum_type()) {
      meaning += " Values:";
      for (int v = 0; v < values->value_count(); ++v) {
        meaning += (v == 0 ? " `" : "; `") + values->value(v)->name() + "`";
        const std::string value_comment = comment_of(*values->value(v));
        if (!value_comment.empty()) meaning += " " + value_comment;
      }
      meaning += ".";
    }
    const std::string field_path = path.empty() ? field.name() : path + "." + field.name();
    const std::string shown_default = default_text(field);
    out += "| `" + field_path + "` | " + type_text(field) + " | " +
           (shown_default.empty() ? "—" : "`" + shown_default + "`") + " | " + meaning + " |\n";
  }
  out += "\n";
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor& field = *type.field(i);
    if (field.message_type() == nullptr) continue;
    const std::string field_path = path.empty() ? field.name() : path + "." + field.name();
    describe_message(*field.message_type(), field_path, seen, out);
  }
}

void collect_undocumented(const pb::Descriptor& type, std::vector<std::string>& missing) {
  if (comment_of(type).empty()) missing.push_back(type.full_name());
  for (int i = 0; i < type.field_count(); ++i) {
    if (comment_of(*type.field(i)).empty()) missing.push_back(type.field(i)->full_name());
  }
  for (int i = 0; i < type.enum_type_count(); ++i) {
    const pb::EnumDescriptor& values = *type.enum_type(i);
    for (int v = 0; v < values.value_count(); ++v) {
      if (comment_of(*values.value(v)).empty()) missing.push_back(values.value(v)->full_name());
    }
  }
  for (int i = 0; i < type.nested_type_count(); ++i) {
    collect_undocumented(*type.nested_type(i), missing);
  }
}

}  // namespace

std::filesystem::path schema_descriptor_set_path() {
  return ROTA_RECIPE_DESCRIPTOR_SET;
}

CommentedSchema::CommentedSchema(const std::filesystem::path& descriptor_set)
    : pool_(std::make_unique<pb::DescriptorPool>()) {
  std::ifstream in(descriptor_set, std::ios::binary);
  pb::FileDescriptorSet files;
  if (!in || !files.ParseFromIstream(&in) || files.file_size() != 1) {
    throw std::runtime_error(descriptor_set.string() +
                             ": cannot read the recipe schema's descriptor set (build the "
                             "rota_recipe_descriptor_set target)");
  }
  file_ = pool_->BuildFile(files.file(0));
  if (file_ == nullptr) {
    throw std::runtime_error(descriptor_set.string() + ": malformed recipe schema");
  }
}

CommentedSchema::~CommentedSchema() = default;

std::string schema_reference_markdown(const CommentedSchema& schema) {
  std::string out;
  std::set<const pb::Descriptor*> seen;
  const pb::Descriptor* recipe = schema.file().FindMessageTypeByName("Recipe");
  const pb::Descriptor* ablation = schema.file().FindMessageTypeByName("Ablation");
  out += "## Recipe fields\n\n";
  describe_message(*recipe, "", seen, out);
  out += "## Ablation fields\n\n";
  describe_message(*ablation, "", seen, out);
  // The top-level enum (Pairing) appears inside its fields' rows.
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out + "\n";
}

std::vector<std::string> undocumented_schema_elements(const CommentedSchema& schema) {
  std::vector<std::string> missing;
  for (int i = 0; i < schema.file().message_type_count(); ++i) {
    collect_undocumented(*schema.file().message_type(i), missing);
  }
  for (int i = 0; i < schema.file().enum_type_count(); ++i) {
    const pb::EnumDescriptor& values = *schema.file().enum_type(i);
    if (comment_of(values).empty()) missing.push_back(values.full_name());
    for (int v = 0; v < values.value_count(); ++v) {
      if (comment_of(*values.value(v)).empty()) missing.push_back(values.value(v)->full_name());
    }
  }
  return missing;
}

}  // namespace rota::recipes
