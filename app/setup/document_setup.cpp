// Resolving data.documents and data.document_separator against the tokenizer and prepared data.
#include "app/setup/document_setup.h"

#include <optional>
#include <string>
#include <vector>

#include "data/prepared/prepared_corpus.h"
#include "recipes/recipe_error.h"

namespace rota::app {

data::DocumentBoundary document_boundary(const recipes::Recipe& recipe) {
  const recipes::Data& d = recipe.data();
  if (!d.has_documents()) return data::DocumentBoundary::kNone;
  switch (d.documents()) {
    case recipes::Data::SEPARATOR_IN_TEXT:
      return data::DocumentBoundary::kNone;
    case recipes::Data::RECORDS:
      return data::DocumentBoundary::kRecords;
    case recipes::Data::FILES:
      return data::DocumentBoundary::kFiles;
    case recipes::Data::PARAGRAPHS:
      return data::DocumentBoundary::kParagraphs;
    case recipes::Data::WIKITEXT_ARTICLES:
      return data::DocumentBoundary::kWikitextArticles;
  }
  return data::DocumentBoundary::kNone;
}

bool documents_need_separator_token(const recipes::Recipe& recipe) {
  return document_boundary(recipe) != data::DocumentBoundary::kNone &&
         !recipe.data().has_document_separator();
}

int64_t document_separator_token(const recipes::Recipe& recipe, const data::Tokenizer& tokenizer) {
  const recipes::Data& d = recipe.data();
  const data::DocumentBoundary boundary = document_boundary(recipe);
  if (d.has_document_separator()) {
    const std::string& text = d.document_separator();
    const std::vector<int64_t> ids = tokenizer.encode(text);
    if (ids.size() != 1) {
      throw recipes::RecipeError(fmt::format(
          "data.document_separator: '{}' encodes to {} tokens with this tokenizer; packed "
          "documents need a separator that is exactly one token (e.g. a special token the "
          "tokenizer keeps whole{})",
          text, ids.size(),
          boundary == data::DocumentBoundary::kNone
              ? ""
              : ", or leave it unset so the tokenizer's <sep> or <eos> ends the documents"));
    }
    return ids[0];
  }
  if (boundary != data::DocumentBoundary::kNone) {
    const data::SpecialTokens& specials = tokenizer.specials();
    const int64_t separator =
        specials.has(data::SpecialToken::kSep)   ? specials.id(data::SpecialToken::kSep)
        : specials.has(data::SpecialToken::kEos) ? specials.id(data::SpecialToken::kEos)
                                                 : -1;
    if (separator < 0) {
      throw recipes::RecipeError(fmt::format(
          "data.documents: the {} tokenizer has neither a <sep> nor an <eos> token to end each "
          "document with; set data.document_separator to text it encodes to one token that the "
          "data never contains",
          tokenizer.kind()));
    }
    return separator;
  }
  return -1;
}

DocumentSettings document_settings(const recipes::Recipe& recipe,
                                   const data::Tokenizer& tokenizer) {
  const recipes::Data& d = recipe.data();
  DocumentSettings settings;
  settings.boundary = document_boundary(recipe);
  // A prepared directory must hold the documents asked for.
  std::optional<data::PreparedManifest> manifest;
  if (d.has_prepared() && settings.boundary != data::DocumentBoundary::kNone) {
    manifest = data::PreparedCorpus::open(d.prepared()).manifest();
    if (manifest->documents != settings.boundary) {
      throw recipes::RecipeError(fmt::format(
          "data.documents: {}, but the prepared directory {} was prepared with {}; prepare it "
          "again with this data.documents (rota data prepare RECIPE), or leave data.documents "
          "unset",
          recipes::Data::Documents_Name(d.documents()), d.prepared(),
          manifest->documents == data::DocumentBoundary::kNone
              ? std::string("no documents marked")
              : std::string("documents ") + data::document_boundary_name(manifest->documents)));
    }
  }
  settings.separator = document_separator_token(recipe, tokenizer);
  if (manifest) {
    if (manifest->document_end_token != settings.separator) {
      throw recipes::RecipeError(fmt::format(
          "data.document_separator: ends documents with token {}, but the prepared directory {} "
          "ends them with token {}; leave data.document_separator as it was when the directory "
          "was prepared",
          settings.separator, d.prepared(), manifest->document_end_token));
    }
  }
  return settings;
}

}  // namespace rota::app
