// `--set` overrides applied through the protobuf reflection API (syntax in overrides.h).
#include "recipes/overrides.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <regex>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include "recipes/field_path.h"
#include "recipes/recipe_error.h"
#include "recipes/text_parse.h"

namespace rota::recipes {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

std::string override_display(std::string_view text) {
  if (!text.empty() && text.front() == kUnsetMark) return "--unset " + std::string(text.substr(1));
  return "--set " + std::string(text);
}

namespace {

/// The override being applied, for error messages.
struct Context {
  std::string_view text;  // the whole override as given
  std::string path;       // dotted path of the field being set
};

[[noreturn]] void fail(const Context& context, const std::string& what) {
  std::string message = override_display(context.text) + ": ";
  if (!context.path.empty()) message += context.path + ": ";
  throw RecipeError(message + what);
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

bool is_identifier(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string quoted(std::string_view value) {
  std::string out = "'";
  out += value;
  out += '\'';
  return out;
}

// ---- scalar values ------------------------------------------------------------------------

/// A finite real number written in full (no trailing characters).
std::optional<double> parse_real(std::string_view value) {
  if (!value.empty() && value.front() == '+') value.remove_prefix(1);
  double result = 0.0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), result);
  if (error != std::errc() || end != value.data() + value.size() || !std::isfinite(result)) {
    return std::nullopt;
  }
  return result;
}

/// An integer in [min, max]: decimal digits, or a real that is a whole number (`1e4`).
template <typename Int>
Int parse_integer(const Context& context, std::string_view value, const char* type_name) {
  std::string_view digits = value;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  if (std::is_unsigned_v<Int> && !digits.empty() && digits.front() == '-') {
    fail(context, quoted(value) + " is negative; a " + type_name + " must be >= 0");
  }
  Int result = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), result);
  if (end == digits.data() + digits.size() && !digits.empty()) {
    if (error == std::errc::result_out_of_range) {
      fail(context, quoted(value) + " is out of range for " + type_name + " [" +
                        std::to_string(std::numeric_limits<Int>::min()) + ", " +
                        std::to_string(std::numeric_limits<Int>::max()) + "]");
    }
    if (error == std::errc()) return result;
  }
  const std::optional<double> real = parse_real(value);
  if (!real || std::floor(*real) != *real) {
    fail(context, quoted(value) + " is not an integer (a " + type_name + " is expected)");
  }
  // 2^63 and 2^64 are exact doubles, so these comparisons are exact.
  if (*real < static_cast<double>(std::numeric_limits<Int>::min()) ||
      *real >= std::ldexp(1.0, std::numeric_limits<Int>::digits)) {
    fail(context, quoted(value) + " is out of range for " + type_name + " [" +
                      std::to_string(std::numeric_limits<Int>::min()) + ", " +
                      std::to_string(std::numeric_limits<Int>::max()) + "]");
  }
  return static_cast<Int>(*real);
}

bool parse_bool(const Context& context, std::string_view value) {
  std::string lowered(value);
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lowered == "true" || lowered == "1") return true;
  if (lowered == "false" || lowered == "0") return false;
  fail(context, quoted(value) + " is not a bool (true or false)");
}

const pb::EnumValueDescriptor* parse_enum(const Context& context, const pb::EnumDescriptor* type,
                                          std::string_view value) {
  if (const auto* exact = type->FindValueByName(std::string(value))) return exact;
  const std::string wanted = upper(value);
  std::vector<std::string> names;
  for (int i = 0; i < type->value_count(); ++i) {
    if (type->value(i)->name() == wanted) return type->value(i);
    names.push_back(type->value(i)->name());
  }
  fail(context,
       "unknown value " + quoted(value) + did_you_mean(value, names) + "; one of " + join(names));
}

/// Parses a text-format message body (without the braces) into a new message of `type`.
std::unique_ptr<pb::Message> parse_message(const Context& context, const pb::Message& prototype,
                                           std::string_view body) {
  std::unique_ptr<pb::Message> message(prototype.New());
  SourceMap source("braces");
  try {
    parse_text(body, source, *message);
  } catch (const RecipeError& error) {
    // "braces:1:7: lrpe.typ: unknown field ..." → "column 7 of the braces: lrpe.typ: ...".
    std::string first(error.what());
    first = first.substr(0, first.find('\n'));
    static const std::regex kLocation(R"re(^braces:(\d+):(\d+): )re");
    std::smatch match;
    if (std::regex_search(first, match, kLocation)) {
      const std::string line = match[1].str() == "1" ? "" : "line " + match[1].str() + ", ";
      first = line + "column " + match[2].str() + " of the braces: " + match.suffix().str();
    }
    fail(context, first);
  }
  return message;
}

/// Sets `field` of `message` to `value`, or appends it when the field is repeated.
void store(const Context& context, pb::Message& message, const FD* field, std::string_view value) {
  const pb::Reflection* reflection = message.GetReflection();
  const bool add = field->is_repeated();
  if (value.empty() && field->cpp_type() != FD::CPPTYPE_STRING) {
    fail(context, "missing value");
  }
  switch (field->cpp_type()) {
    case FD::CPPTYPE_INT32: {
      const auto v = parse_integer<int32_t>(context, value, "int32");
      add ? reflection->AddInt32(&message, field, v) : reflection->SetInt32(&message, field, v);
      return;
    }
    case FD::CPPTYPE_INT64: {
      const auto v = parse_integer<int64_t>(context, value, "int64");
      add ? reflection->AddInt64(&message, field, v) : reflection->SetInt64(&message, field, v);
      return;
    }
    case FD::CPPTYPE_UINT32: {
      const auto v = parse_integer<uint32_t>(context, value, "uint32");
      add ? reflection->AddUInt32(&message, field, v) : reflection->SetUInt32(&message, field, v);
      return;
    }
    case FD::CPPTYPE_UINT64: {
      const auto v = parse_integer<uint64_t>(context, value, "uint64");
      add ? reflection->AddUInt64(&message, field, v) : reflection->SetUInt64(&message, field, v);
      return;
    }
    case FD::CPPTYPE_DOUBLE:
    case FD::CPPTYPE_FLOAT: {
      const std::optional<double> v = parse_real(value);
      if (!v) fail(context, quoted(value) + " is not a finite number");
      if (field->cpp_type() == FD::CPPTYPE_FLOAT) {
        if (std::abs(*v) > std::numeric_limits<float>::max()) {
          fail(context, quoted(value) + " is out of range for float");
        }
        const auto f = static_cast<float>(*v);
        add ? reflection->AddFloat(&message, field, f) : reflection->SetFloat(&message, field, f);
      } else {
        add ? reflection->AddDouble(&message, field, *v)
            : reflection->SetDouble(&message, field, *v);
      }
      return;
    }
    case FD::CPPTYPE_BOOL: {
      const bool v = parse_bool(context, value);
      add ? reflection->AddBool(&message, field, v) : reflection->SetBool(&message, field, v);
      return;
    }
    case FD::CPPTYPE_ENUM: {
      const pb::EnumValueDescriptor* v = parse_enum(context, field->enum_type(), value);
      add ? reflection->AddEnum(&message, field, v) : reflection->SetEnum(&message, field, v);
      return;
    }
    case FD::CPPTYPE_STRING: {
      if (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
        // A quoted string: the text-format parser handles the escapes (and adds to repeated
        // fields, selects oneof members).
        if (value.size() < 2 || value.back() != value.front() ||
            !pb::TextFormat::ParseFieldValueFromString(std::string(value), field, &message)) {
          fail(context, "malformed quoted string " + std::string(value));
        }
        return;
      }
      add ? reflection->AddString(&message, field, std::string(value))
          : reflection->SetString(&message, field, std::string(value));
      return;
    }
    case FD::CPPTYPE_MESSAGE: {
      if (value.size() < 2 || value.front() != '{' || value.back() != '}') {
        fail(context, "is a message; give its text in braces, e.g. " + context.path + "={}");
      }
      const pb::Message& prototype =
          *reflection->GetMessageFactory()->GetPrototype(field->message_type());
      std::unique_ptr<pb::Message> parsed =
          parse_message(context, prototype, value.substr(1, value.size() - 2));
      if (add) {
        reflection->AddMessage(&message, field)->CopyFrom(*parsed);
      } else {
        reflection->ClearField(&message, field);
        reflection->MutableMessage(&message, field)->CopyFrom(*parsed);  // selects a oneof member
      }
      return;
    }
  }
}

/// Splits the inside of `[...]` at top-level commas (outside quotes, braces and brackets).
std::vector<std::string_view> split_list(const Context& context, std::string_view inside) {
  std::vector<std::string_view> items;
  if (trim(inside).empty()) return items;
  int depth = 0;
  char quote = 0;
  size_t begin = 0;
  for (size_t i = 0; i < inside.size(); ++i) {
    const char c = inside[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) fail(context, "unbalanced '" + std::string(1, c) + "' in the list");
    } else if (c == ',' && depth == 0) {
      items.push_back(trim(inside.substr(begin, i - begin)));
      begin = i + 1;
    }
  }
  if (quote != 0 || depth != 0) fail(context, "unterminated quote or bracket in the list");
  items.push_back(trim(inside.substr(begin)));
  for (std::string_view item : items) {
    if (item.empty()) fail(context, "empty element in the list");
  }
  return items;
}

const FD* find_field(const Context& context, const pb::Message& message, const std::string& name) {
  const pb::Descriptor* type = message.GetDescriptor();
  const FD* field = type->FindFieldByName(name);
  if (field == nullptr) {
    const std::vector<std::string> names = field_names(type);
    fail(context, "unknown field '" + name + "'" + did_you_mean(name, names) +
                      "; fields here: " + join(names));
  }
  return field;
}

}  // namespace

/// `--unset PATH`: the field at PATH back to its default (a message field absent); nothing to
/// do where an enclosing message is absent already.
std::string apply_unset(pb::Message& root, std::string_view text) {
  Context context{text, ""};
  const std::string_view path = trim(text.substr(1));
  if (path.empty()) fail(context, "expected a field path");
  pb::Message* message = &root;
  for (size_t begin = 0;;) {
    size_t end = path.find('.', begin);
    if (end == std::string_view::npos) end = path.size();
    const std::string name(path.substr(begin, end - begin));
    if (!is_identifier(name)) fail(context, "malformed field path '" + std::string(path) + "'");
    const FD* field = find_field(context, *message, name);
    context.path += (context.path.empty() ? "" : ".") + name;
    const pb::Reflection* reflection = message->GetReflection();
    if (end == path.size()) {
      reflection->ClearField(message, field);
      return context.path;
    }
    if (field->cpp_type() != FD::CPPTYPE_MESSAGE || field->is_repeated()) {
      fail(context,
           "is not a message, so it has no field '" + std::string(path.substr(end + 1)) + "'");
    }
    if (!reflection->HasField(*message, field)) {
      // Absent already: check the rest of the path against the schema, then nothing to clear.
      const pb::Message& defaults = reflection->GetMessage(*message, field);
      std::unique_ptr<pb::Message> scratch(defaults.New());
      apply_unset(*scratch, "!" + std::string(path.substr(end + 1)));
      return std::string(path);
    }
    message = reflection->MutableMessage(message, field);
    begin = end + 1;
  }
}

std::string apply_override(pb::Message& root, std::string_view text) {
  if (!text.empty() && text.front() == kUnsetMark) return apply_unset(root, text);
  Context context{text, ""};
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos) fail(context, "expected PATH=VALUE (or PATH+=VALUE)");
  const bool append = equals > 0 && text[equals - 1] == '+';
  const std::string_view path = trim(text.substr(0, append ? equals - 1 : equals));
  const std::string_view value = trim(text.substr(equals + 1));
  if (path.empty()) fail(context, "missing field path before '='");

  // Split and check the path first, so a malformed path is reported before any change.
  std::vector<std::string> names;
  for (size_t begin = 0; begin <= path.size();) {
    size_t end = path.find('.', begin);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view name = path.substr(begin, end - begin);
    if (name.find('[') != std::string_view::npos) {
      fail(context,
           "indexing into repeated fields is not supported; replace the whole list "
           "with PATH=[...] or append with PATH+=VALUE");
    }
    if (!is_identifier(name)) fail(context, "malformed field path '" + std::string(path) + "'");
    names.emplace_back(name);
    begin = end + 1;
  }

  pb::Message* message = &root;
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    const FD* field = find_field(context, *message, names[i]);
    context.path += (context.path.empty() ? "" : ".") + names[i];
    if (field->cpp_type() != FD::CPPTYPE_MESSAGE) {
      fail(context, "is a " + std::string(field->type_name()) +
                        ", not a message, so it has no "
                        "field '" +
                        names[i + 1] + "'");
    }
    if (field->is_repeated()) {
      fail(context, "is a repeated message; replace it whole with " + context.path +
                        "=[{...}, ...] or append with " + context.path + "+={...}");
    }
    // Creates the message when absent; a oneof member becomes the selected one.
    message = message->GetReflection()->MutableMessage(message, field);
  }
  const FD* field = find_field(context, *message, names.back());
  context.path += (context.path.empty() ? "" : ".") + names.back();

  if (append) {
    if (!field->is_repeated()) {
      fail(context, "'+=' appends to repeated fields, and this field is not repeated; use '='");
    }
    store(context, *message, field, value);
  } else if (field->is_repeated()) {
    if (value.size() < 2 || value.front() != '[' || value.back() != ']') {
      fail(context, "is a repeated field; replace it with " + context.path +
                        "=[a, b] or append "
                        "with " +
                        context.path + "+=a");
    }
    const std::vector<std::string_view> items =
        split_list(context, value.substr(1, value.size() - 2));
    message->GetReflection()->ClearField(message, field);
    for (std::string_view item : items) store(context, *message, field, item);
  } else {
    store(context, *message, field, value);
  }
  return context.path;
}

}  // namespace rota::recipes
