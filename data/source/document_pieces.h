// Where a source's documents end (data.documents) and the pieces of text cut at those ends.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace rota::data {

/// What a document is when the data source marks them itself.
enum class DocumentBoundary {
  kNone,              // the source marks no documents
  kRecords,           // every record: a record of a JSONL/CSV/TSV file, a line of a text file
  kFiles,             // every file
  kParagraphs,        // lines up to a blank line: a document ends before a non-blank line that
                      // follows one or more blank lines (the blank lines end the document)
  kWikitextArticles,  // WikiText articles: a document ends before each top-level heading line
                      // " = Title = " (subheadings " = = Section = = " do not end one)
};

/// "none", "records", "files", "paragraphs", "wikitext_articles".
const char* document_boundary_name(DocumentBoundary boundary);
/// The boundary of that name, or nullopt.
std::optional<DocumentBoundary> parse_document_boundary(std::string_view name);

/// True when a line holds only spaces, tabs and line breaks (or nothing).
bool is_blank_line(std::string_view line);
/// True when a line is a WikiText top-level heading: " = " + a title not starting with '=' +
/// " = ", then the line break.
bool is_wikitext_article_heading(std::string_view line);

/// Gathers units of a split's text (lines, or records' text) in order into pieces of at most
/// max_piece_bytes, like PieceBuilder, and cuts a piece wherever a document ends, flagging it.
/// A piece is the longest run of consecutive units of one document that fits, or one longer
/// unit alone. The pieces joined are the units joined: documents change no text.
///
/// A document ends only once it holds a non-blank unit; blank units before that belong to the
/// document that follows them (so a split's leading blank lines, or blank records between
/// records, start the next document instead of forming one). Blank units after the split's
/// last document end are handed on in a last piece that ends no document.
class DocumentPieceBuilder {
 public:
  using Visit = std::function<void(std::string_view piece, bool ends_document)>;
  DocumentPieceBuilder(DocumentBoundary boundary, size_t max_piece_bytes, Visit visit);
  /// The next unit (kParagraphs and kWikitextArticles end a document before it when it starts
  /// a new one).
  void add(std::string_view unit);
  /// The unit just added was a whole record (kRecords: a document ends).
  void end_record();
  /// The units of a file ended (kFiles: a document ends).
  void end_file();
  /// The split ended: its last document ends, and every unit has been handed on.
  void finish();

 private:
  void end_document();
  void flush(bool ends_document);

  DocumentBoundary boundary_;
  size_t max_;
  Visit visit_;
  std::string piece_;
  bool has_content_ = false;  // the open document holds a non-blank unit
  bool last_blank_ = false;   // the last unit added was blank
};

}  // namespace rota::data
