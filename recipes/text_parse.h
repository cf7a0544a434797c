// Parsing protobuf text format with errors as "file:line:col: field.path: what", and locations.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

namespace rota::recipes {

/// Where the fields of a parsed message were written.
class SourceMap {
 public:
  explicit SourceMap(std::string source_name);
  ~SourceMap();
  SourceMap(SourceMap&&) noexcept;
  SourceMap& operator=(SourceMap&&) noexcept;

  /// The file name (or other label) used in messages.
  const std::string& source_name() const { return source_name_; }

  /// "source:line:col" (1-based) of the field at `path` below a message of type `root` — or of
  /// its nearest ancestor written in the text when the field itself was not (a default, or a
  /// value set by an override); just "source" when nothing on the path was written.
  std::string locate(const google::protobuf::Descriptor* root, std::string_view path) const;

  /// The parser's record of field locations (filled by parse_text).
  google::protobuf::TextFormat::ParseInfoTree* tree() { return tree_.get(); }

 private:
  std::string source_name_;
  std::unique_ptr<google::protobuf::TextFormat::ParseInfoTree> tree_;
};

/// Parses `text` into `message` (which is cleared first), recording field locations in
/// `source`. Unknown fields, a singular field given twice, two members of one oneof, unknown
/// enum names and malformed values are errors. Throws RecipeError with one line per error:
/// `source:line:col: field.path: what` (with a suggestion for misspelt names).
void parse_text(std::string_view text, SourceMap& source, google::protobuf::Message& message);

/// The top-level `version` of `text` read leniently (unknown fields ignored), so that a file
/// from a newer schema can be refused for its version rather than for its new fields. nullopt
/// when the text has no readable version. `type` must have an int32 field named `version`.
std::optional<int> peek_version(std::string_view text, const google::protobuf::Message& type);

/// The dotted path of the message being parsed at 0-based (line, column) of `text`: the field
/// names of the `{` ... `}` blocks open there, e.g. "model.position".
std::string enclosing_path(std::string_view text, int line, int column);
/// The same, also giving in `value_field` the field whose value starts at (line, column): the
/// token before is `name:` (or a list's `[` or `,`); "" elsewhere.
std::string enclosing_path(std::string_view text, int line, int column, std::string& value_field);

}  // namespace rota::recipes
