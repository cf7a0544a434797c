// Parsing protobuf text format with errors located by file:line:col and field path.
#include "recipes/text_parse.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "recipes/field_path.h"
#include "recipes/recipe_error.h"

namespace rota::recipes {

namespace pb = google::protobuf;

namespace {

/// Keeps every parser error (0-based line and column) instead of printing to stderr.
class CollectingErrors : public pb::io::ErrorCollector {
 public:
  struct Entry {
    int line;
    int column;
    std::string message;
  };
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    entries.push_back({line, column, message});
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  std::vector<Entry> entries;
};

std::string dotted(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

/// The parser's messages about an unknown field and an unknown enum value: the text around
/// their two quoted names.
constexpr std::string_view kUnknownFieldForm[] = {"Message type \"", "\" has no field named \"",
                                                  "\""};
constexpr std::string_view kUnknownEnumForm[] = {"Unknown enumeration value of \"",
                                                 "\" for field \"", "\""};

/// The quoted parts of the first place in `message` that reads form[0] Q1 form[1] Q2 form[2],
/// each Q non-empty and without '"'; nullopt when there is none. (Scanned by hand: std::regex
/// recurses per character and overflows the stack on a long identifier.)
template <size_t kPieces>
std::optional<std::vector<std::string>> quoted_parts(std::string_view message,
                                                     const std::string_view (&form)[kPieces]) {
  for (size_t start = message.find(form[0]); start != std::string_view::npos;
       start = message.find(form[0], start + 1)) {
    std::vector<std::string> parts;
    size_t at = start + form[0].size();
    for (size_t piece = 1; piece < kPieces; ++piece) {
      const size_t end = message.find('"', at);
      if (end == std::string_view::npos || end == at ||
          message.substr(end, form[piece].size()) != form[piece]) {
        break;
      }
      parts.emplace_back(message.substr(at, end - at));
      at = end + form[piece].size();
    }
    if (parts.size() == kPieces - 1) return parts;
  }
  return std::nullopt;
}

/// A name as error messages show it: whole up to 64 characters, else its start and its length.
std::string shown(const std::string& name) {
  constexpr size_t kShown = 64;
  if (name.size() <= kShown) return name;
  return name.substr(0, kShown) + "... (" + std::to_string(name.size()) + " characters)";
}

/// Rewrites the parser's unknown-field and unknown-enum messages into "path: what (did you
/// mean ...)"; other messages are prefixed with the path of the field whose value is wrong
/// (`value_field`, after `name:`), else of the enclosing block.
std::string explain(const std::string& path, const std::string& message, const pb::Descriptor* root,
                    const std::string& value_field) {
  if (const auto match = quoted_parts(message, kUnknownFieldForm)) {
    const std::string& type_name = (*match)[0];
    const std::string& field = (*match)[1];
    const pb::Descriptor* type =
        pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
    std::string text = dotted(path, shown(field)) + ": unknown field";
    if (type != nullptr) {
      const std::vector<std::string> names = field_names(type);
      text += did_you_mean(field, names);
      text += "; " + (path.empty() ? std::string("the top level") : path) + " has " + join(names);
    }
    return text;
  }
  if (const auto match = quoted_parts(message, kUnknownEnumForm)) {
    const std::string& value = (*match)[0];
    const std::string& field_name = (*match)[1];
    const pb::Descriptor* type = message_type_at(root, path);
    const pb::FieldDescriptor* field =
        type == nullptr ? nullptr : type->FindFieldByName(field_name);
    std::string text = dotted(path, shown(field_name)) + ": unknown value '" + shown(value) + "'";
    if (field != nullptr && field->enum_type() != nullptr) {
      std::vector<std::string> values;
      for (int i = 0; i < field->enum_type()->value_count(); ++i) {
        values.push_back(field->enum_type()->value(i)->name());
      }
      text += did_you_mean(value, values) + "; one of " + join(values);
    }
    return text;
  }
  const std::string where = value_field.empty() ? path : dotted(path, shown(value_field));
  return where.empty() ? message : where + ": " + message;
}

/// The identifier an unknown-field or unknown-enum message complains about.
std::optional<std::string> offending_name(const std::string& message) {
  if (const auto match = quoted_parts(message, kUnknownFieldForm)) return (*match)[1];
  if (const auto match = quoted_parts(message, kUnknownEnumForm)) return (*match)[0];
  return std::nullopt;
}

/// The deepest nesting of messages and lists a text may have. Recipes nest a few levels;
/// protobuf's parser recurses once per level (without a limit while it skips unknown fields),
/// so a deeper text is refused before it is parsed.
constexpr int kMaxNesting = 32;

/// The 0-based (line, column) of the first `{`, `<` or `[` that opens level kMaxNesting + 1;
/// nullopt when the text stays within the limit. Braces inside strings and comments do not
/// count.
std::optional<std::pair<int, int>> first_too_deep(std::string_view text) {
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  CollectingErrors ignored;
  pb::io::Tokenizer tokenizer(&input, &ignored);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  int depth = 0;
  while (tokenizer.Next()) {
    const pb::io::Tokenizer::Token& token = tokenizer.current();
    if (token.type != pb::io::Tokenizer::TYPE_SYMBOL) continue;
    if (token.text == "{" || token.text == "<" || token.text == "[") {
      if (++depth > kMaxNesting) return std::make_pair(token.line, token.column);
    } else if (token.text == "}" || token.text == ">" || token.text == "]") {
      depth = std::max(0, depth - 1);
    }
  }
  return std::nullopt;
}

/// The 0-based (line, column) of the last token equal to `wanted` before (line, column).
std::optional<std::pair<int, int>> last_token_before(std::string_view text, int line, int column,
                                                     const std::string& wanted) {
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  CollectingErrors ignored;
  pb::io::Tokenizer tokenizer(&input, &ignored);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  std::optional<std::pair<int, int>> found;
  while (tokenizer.Next()) {
    const pb::io::Tokenizer::Token& token = tokenizer.current();
    if (token.line > line || (token.line == line && token.column >= column)) break;
    if (token.text == wanted) found = std::make_pair(token.line, token.column);
  }
  return found;
}

}  // namespace

SourceMap::SourceMap(std::string source_name)
    : source_name_(std::move(source_name)),
      tree_(std::make_unique<pb::TextFormat::ParseInfoTree>()) {}
SourceMap::~SourceMap() = default;
SourceMap::SourceMap(SourceMap&&) noexcept = default;
SourceMap& SourceMap::operator=(SourceMap&&) noexcept = default;

std::string SourceMap::locate(const pb::Descriptor* root, std::string_view path) const {
  const pb::TextFormat::ParseInfoTree* tree = tree_.get();
  const pb::Descriptor* type = root;
  pb::TextFormat::ParseLocation best;  // line -1: nothing found yet
  for (const PathPart& part : split_path(path)) {
    if (tree == nullptr || type == nullptr) break;
    const pb::FieldDescriptor* field = type->FindFieldByName(part.name);
    if (field == nullptr) break;
    const int index = field->is_repeated() ? std::max(part.index, 0) : -1;
    pb::TextFormat::ParseLocation here = tree->GetLocation(field, index);
    // A list (`seeds: [1, 2]`) is recorded once, not per element: use the nearest earlier
    // recorded occurrence of the field.
    for (int earlier = index - 1; here.line < 0 && earlier >= 0; --earlier) {
      here = tree->GetLocation(field, earlier);
    }
    if (here.line < 0) break;
    best = here;
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) break;
    tree = tree->GetTreeForNested(field, index);
    type = field->message_type();
  }
  if (best.line < 0) return source_name_;
  return source_name_ + ":" + std::to_string(best.line + 1) + ":" + std::to_string(best.column + 1);
}

/// The field names of the blocks open at (line, column), and in `value_field` the field whose
/// value starts there (the token before is `name:` or a list's `[`/`,`), else "".
std::string enclosing_path(std::string_view text, int line, int column, std::string& value_field) {
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  CollectingErrors ignored;
  pb::io::Tokenizer tokenizer(&input, &ignored);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);  // text format uses '#'
  std::vector<std::string> open;  // field names of the open blocks
  std::string last_identifier;    // the most recent field name
  std::string list_field;         // the field of an open `name: [ ... ]` list
  std::string previous;
  while (tokenizer.Next()) {
    const pb::io::Tokenizer::Token& token = tokenizer.current();
    if (token.line > line || (token.line == line && token.column >= column)) break;
    if (token.type == pb::io::Tokenizer::TYPE_IDENTIFIER) {
      last_identifier = token.text;
    } else if (token.text == "{" || token.text == "<") {
      const bool list_element = (previous == "[" || previous == ",") && !list_field.empty();
      open.push_back(list_element ? list_field : last_identifier);
    } else if (token.text == "}" || token.text == ">") {
      if (!open.empty()) open.pop_back();
    } else if (token.text == "[") {
      list_field = last_identifier;
    } else if (token.text == "]") {
      list_field.clear();
    }
    previous = token.text;
  }
  value_field.clear();
  if (previous == ":") {
    value_field = last_identifier;
  } else if ((previous == "[" || previous == ",") && !list_field.empty()) {
    value_field = list_field;
  }
  return join(open, ".");
}

std::string enclosing_path(std::string_view text, int line, int column) {
  std::string value_field;
  return enclosing_path(text, line, column, value_field);
}

void parse_text(std::string_view text, SourceMap& source, pb::Message& message) {
  message.Clear();
  if (const auto deep = first_too_deep(text)) {
    throw RecipeError(source.source_name() + ":" + std::to_string(deep->first + 1) + ":" +
                      std::to_string(deep->second + 1) + ": nested more than " +
                      std::to_string(kMaxNesting) +
                      " levels deep (a recipe nests a few levels; this is not one)");
  }
  CollectingErrors errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(source.tree());
  const bool ok = parser.ParseFromString(std::string(text), &message);
  if (ok && errors.entries.empty()) return;
  std::string report;
  for (CollectingErrors::Entry error : errors.entries) {
    std::string where = source.source_name();
    std::string path;
    std::string value_field;
    if (error.line >= 0) {
      // The parser reports an unknown name at the token after it; point at the name itself.
      if (const std::optional<std::string> name = offending_name(error.message)) {
        if (const auto found = last_token_before(text, error.line, error.column, *name)) {
          error.line = found->first;
          error.column = found->second;
        }
      }
      where += ':';
      where += std::to_string(error.line + 1);
      where += ':';
      where += std::to_string(error.column + 1);
      path = enclosing_path(text, error.line, error.column, value_field);
    }
    if (!report.empty()) report += "\n";
    report += where + ": " + explain(path, error.message, message.GetDescriptor(), value_field);
  }
  if (report.empty()) report = source.source_name() + ": cannot parse the text";
  throw RecipeError(report);
}

std::optional<int> peek_version(std::string_view text, const pb::Message& type) {
  if (first_too_deep(text)) return std::nullopt;
  std::unique_ptr<pb::Message> message(type.New());
  CollectingErrors errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);
  if (!parser.ParseFromString(std::string(text), message.get())) return std::nullopt;
  const pb::FieldDescriptor* field = message->GetDescriptor()->FindFieldByName("version");
  const pb::Reflection* reflection = message->GetReflection();
  if (field == nullptr || !reflection->HasField(*message, field)) return std::nullopt;
  return reflection->GetInt32(*message, field);
}

}  // namespace rota::recipes
