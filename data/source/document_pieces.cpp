// Document ends in a split's text: boundary names, line tests and the piece builder.
#include "data/source/document_pieces.h"

#include <array>
#include <utility>

#include "framework/base/error.h"

namespace rota::data {
namespace {

constexpr std::array<std::pair<DocumentBoundary, const char*>, 5> kNames = {{
    {DocumentBoundary::kNone, "none"},
    {DocumentBoundary::kRecords, "records"},
    {DocumentBoundary::kFiles, "files"},
    {DocumentBoundary::kParagraphs, "paragraphs"},
    {DocumentBoundary::kWikitextArticles, "wikitext_articles"},
}};

std::string_view without_line_break(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

}  // namespace

const char* document_boundary_name(DocumentBoundary boundary) {
  for (const auto& [value, name] : kNames) {
    if (value == boundary) return name;
  }
  return "none";
}

std::optional<DocumentBoundary> parse_document_boundary(std::string_view name) {
  for (const auto& [value, text] : kNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

bool is_blank_line(std::string_view line) {
  for (const char c : line) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  }
  return true;
}

bool is_wikitext_article_heading(std::string_view line) {
  const std::string_view text = without_line_break(line);
  // " = " title " = " with a title of at least one character that does not start with '='.
  if (text.size() < 7 || !text.starts_with(" = ") || !text.ends_with(" = ")) return false;
  return text[3] != '=' && text[3] != ' ';
}

DocumentPieceBuilder::DocumentPieceBuilder(DocumentBoundary boundary, size_t max_piece_bytes,
                                           Visit visit)
    : boundary_(boundary), max_(max_piece_bytes), visit_(std::move(visit)) {
  ROTA_CHECK(max_piece_bytes > 0, "data: document pieces need max_piece_bytes > 0");
}

void DocumentPieceBuilder::add(std::string_view unit) {
  if (unit.empty()) return;
  const bool blank = is_blank_line(unit);
  const bool starts_document =
      (boundary_ == DocumentBoundary::kParagraphs && !blank && last_blank_) ||
      (boundary_ == DocumentBoundary::kWikitextArticles && is_wikitext_article_heading(unit));
  if (starts_document) end_document();
  if (!piece_.empty() && piece_.size() + unit.size() > max_) flush(false);
  piece_.append(unit);
  has_content_ = has_content_ || !blank;
  last_blank_ = blank;
}

void DocumentPieceBuilder::end_record() {
  if (boundary_ == DocumentBoundary::kRecords) end_document();
}

void DocumentPieceBuilder::end_file() {
  if (boundary_ == DocumentBoundary::kFiles) end_document();
}

void DocumentPieceBuilder::finish() {
  if (boundary_ != DocumentBoundary::kNone) end_document();
  if (!piece_.empty()) flush(false);
}

void DocumentPieceBuilder::end_document() {
  if (!has_content_) return;
  // A unit was added since the last flush (every add leaves piece_ non-empty).
  flush(true);
  has_content_ = false;
}

void DocumentPieceBuilder::flush(bool ends_document) {
  visit_(piece_, ends_document);
  piece_.clear();
}

}  // namespace rota::data
