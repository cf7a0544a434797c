// Document ends in a split's text: boundary names, the line tests, and the piece builder against
// an independent per-mode list of documents, at every piece size.
#include "data/source/document_pieces.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "framework/base/error.h"

namespace rota::data {
namespace ROTA_TEST_FILE_NS {

struct Piece {
  std::string text;
  bool ends_document = false;
  bool operator==(const Piece&) const = default;
};

// A unit list fed as records, each file's units followed by end_file.
struct Input {
  std::vector<std::vector<std::string>> files;
};

std::vector<Piece> cut(DocumentBoundary boundary, const Input& input, size_t max_piece_bytes) {
  std::vector<Piece> pieces;
  DocumentPieceBuilder builder(boundary, max_piece_bytes, [&](std::string_view text, bool ends) {
    pieces.push_back({std::string(text), ends});
  });
  for (const std::vector<std::string>& file : input.files) {
    for (const std::string& unit : file) {
      builder.add(unit);
      builder.end_record();
    }
    builder.end_file();
  }
  builder.finish();
  return pieces;
}

// The documents, each the text of its pieces joined, read off the builder's output.
std::vector<std::string> documents_of(const std::vector<Piece>& pieces, std::string* rest) {
  std::vector<std::string> documents;
  std::string open;
  for (const Piece& piece : pieces) {
    open += piece.text;
    if (piece.ends_document) {
      documents.push_back(open);
      open.clear();
    }
  }
  *rest = open;
  return documents;
}

bool blank(const std::string& unit) {
  return unit.find_first_not_of(" \t\r\n") == std::string::npos;
}

// The reference: where each mode starts a new document, written out plainly. A document is
// closed only when it has a non-blank unit; blank units then wait for the next one.
std::vector<std::string> expected_documents(DocumentBoundary boundary, const Input& input,
                                            std::string* rest) {
  std::vector<std::string> documents;
  std::string open;
  bool content = false;
  bool last_blank = false;
  const auto close = [&] {
    if (!content) return;
    documents.push_back(open);
    open.clear();
    content = false;
  };
  for (const std::vector<std::string>& file : input.files) {
    for (const std::string& unit : file) {
      if (unit.empty()) continue;
      const bool is_blank = blank(unit);
      std::string line = unit;
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      const bool heading = line.size() >= 7 && line.substr(0, 3) == " = " &&
                           line.substr(line.size() - 3) == " = " && line[3] != '=' &&
                           line[3] != ' ';
      if (boundary == DocumentBoundary::kParagraphs && !is_blank && last_blank) close();
      if (boundary == DocumentBoundary::kWikitextArticles && heading) close();
      open += unit;
      content = content || !is_blank;
      last_blank = is_blank;
      if (boundary == DocumentBoundary::kRecords) close();
    }
    if (boundary == DocumentBoundary::kFiles) close();
  }
  if (boundary != DocumentBoundary::kNone) close();
  *rest = open;
  return documents;
}

TEST(DocumentBoundaryNames, RoundTripAndRejectUnknown) {
  for (DocumentBoundary b :
       {DocumentBoundary::kNone, DocumentBoundary::kRecords, DocumentBoundary::kFiles,
        DocumentBoundary::kParagraphs, DocumentBoundary::kWikitextArticles}) {
    EXPECT_EQ(parse_document_boundary(document_boundary_name(b)), b);
  }
  EXPECT_EQ(parse_document_boundary("wikitext_articles"), DocumentBoundary::kWikitextArticles);
  EXPECT_FALSE(parse_document_boundary("articles").has_value());
  EXPECT_FALSE(parse_document_boundary("").has_value());
}

TEST(DocumentLines, WikitextHeadingsAndBlankLines) {
  EXPECT_TRUE(is_wikitext_article_heading(" = Valkyria Chronicles III = \n"));
  EXPECT_TRUE(is_wikitext_article_heading(" = A = \r\n"));
  EXPECT_TRUE(is_wikitext_article_heading(" = A = "));
  EXPECT_FALSE(is_wikitext_article_heading(" = = Gameplay = = \n"));  // a section
  EXPECT_FALSE(is_wikitext_article_heading(" = = = Plot = = = \n"));
  EXPECT_FALSE(is_wikitext_article_heading(" The game = good = \n"));
  EXPECT_FALSE(is_wikitext_article_heading(" =  = \n"));
  EXPECT_FALSE(is_wikitext_article_heading("= A =\n"));
  EXPECT_TRUE(is_blank_line(" \n"));
  EXPECT_TRUE(is_blank_line("\t \r\n"));
  EXPECT_TRUE(is_blank_line(""));
  EXPECT_FALSE(is_blank_line(" x \n"));
}

TEST(DocumentPieces, EachModeEndsTheDocumentsItNames) {
  const Input input{{{"a\n", "b\n", "\n", " \n", "c\n"}, {"d\n", "\n"}}};
  using P = std::vector<Piece>;
  EXPECT_EQ(cut(DocumentBoundary::kNone, input, 100), (P{{"a\nb\n\n \nc\nd\n\n", false}}));
  // Blank records join the next record's document; the trailing blank one ends none.
  EXPECT_EQ(cut(DocumentBoundary::kRecords, input, 100),
            (P{{"a\n", true}, {"b\n", true}, {"\n \nc\n", true}, {"d\n", true}, {"\n", false}}));
  EXPECT_EQ(cut(DocumentBoundary::kFiles, input, 100),
            (P{{"a\nb\n\n \nc\n", true}, {"d\n\n", true}}));
  // A paragraph keeps the blank lines after it.
  EXPECT_EQ(cut(DocumentBoundary::kParagraphs, input, 100),
            (P{{"a\nb\n\n \n", true}, {"c\nd\n\n", true}}));
}

TEST(DocumentPieces, WikitextArticlesKeepTheirSections) {
  const Input input{{{" \n", " = First = \n", " \n", "x\n", " = = Part = = \n", "y\n", " \n",
                      " = Second = \n", "z\n"}}};
  using P = std::vector<Piece>;
  EXPECT_EQ(
      cut(DocumentBoundary::kWikitextArticles, input, 1000),
      (P{{" \n = First = \n \nx\n = = Part = = \ny\n \n", true}, {" = Second = \nz\n", true}}));
}

TEST(DocumentPieces, LongDocumentsSpanPiecesAndOnlyTheirLastEndsThem) {
  const Input input{{{"aaaa\n", "bb\n", "cccccccc\n"}, {"d\n"}}};
  using P = std::vector<Piece>;
  EXPECT_EQ(cut(DocumentBoundary::kFiles, input, 8),
            (P{{"aaaa\nbb\n", false}, {"cccccccc\n", true}, {"d\n", true}}));
}

// Random units of every kind (text, blank, headings, sections, empty), any piece size: the
// pieces join to the units, stay within the size unless one unit is longer, never hold two
// documents' text, and the documents they mark are the reference's.
TEST(DocumentPieces, MatchTheReferenceOnRandomInput) {
  const std::vector<std::string> kinds = {
      "word\n",        "a longer line of text\n", "\n", " \n",
      " = Title = \n", " = = Section = = \n",     "",   "no line break"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    Input input;
    const int files = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < files; ++f) {
      std::vector<std::string> units;
      const int n = static_cast<int>(rng() % 9);
      for (int u = 0; u < n; ++u) units.push_back(kinds[rng() % kinds.size()]);
      input.files.push_back(units);
    }
    const size_t max_piece = 1 + rng() % 40;
    for (DocumentBoundary boundary :
         {DocumentBoundary::kNone, DocumentBoundary::kRecords, DocumentBoundary::kFiles,
          DocumentBoundary::kParagraphs, DocumentBoundary::kWikitextArticles}) {
      SCOPED_TRACE(std::string(document_boundary_name(boundary)) + " trial " +
                   std::to_string(trial));
      const std::vector<Piece> pieces = cut(boundary, input, max_piece);
      std::string joined, units_joined;
      for (const Piece& piece : pieces) {
        EXPECT_FALSE(piece.text.empty());
        joined += piece.text;
      }
      size_t longest_unit = 0;
      for (const auto& file : input.files) {
        for (const std::string& unit : file) {
          units_joined += unit;
          longest_unit = std::max(longest_unit, unit.size());
        }
      }
      EXPECT_EQ(joined, units_joined);
      for (const Piece& piece : pieces)
        EXPECT_LE(piece.text.size(), std::max(max_piece, longest_unit));
      std::string rest, expected_rest;
      EXPECT_EQ(documents_of(pieces, &rest), expected_documents(boundary, input, &expected_rest));
      EXPECT_EQ(rest, expected_rest);
    }
  }
}

TEST(DocumentPieces, NeedsAPieceSize) {
  EXPECT_THROW(DocumentPieceBuilder(DocumentBoundary::kRecords, 0, [](std::string_view, bool) {}),
               Error);
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::data
