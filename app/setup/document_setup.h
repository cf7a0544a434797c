// Packed documents of a run: what ends a document (data.documents) and the token that marks it.
#pragma once

#include <cstdint>

#include "data/source/document_pieces.h"
#include "data/tokenizer/tokenizer.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

struct DocumentSettings {
  /// Documents the data source marks (kNone: none, or the separator is in the text).
  data::DocumentBoundary boundary = data::DocumentBoundary::kNone;
  /// The token that ends every document, −1 without packed documents.
  int64_t separator = -1;
  bool packed() const { return separator >= 0; }
};

/// data.documents as a data boundary (SEPARATOR_IN_TEXT and unset: kNone).
data::DocumentBoundary document_boundary(const recipes::Recipe& recipe);

/// Whether Rota adds <sep> to a tokenizer it builds: the source marks documents and no
/// data.document_separator names the token.
bool documents_need_separator_token(const recipes::Recipe& recipe);

/// The token that ends every document of the run (document_settings' separator, without
/// consulting a prepared directory), −1 without packed documents. Throws recipes::RecipeError
/// as document_settings does.
int64_t document_separator_token(const recipes::Recipe& recipe, const data::Tokenizer& tokenizer);

/// The run's packed documents with this tokenizer. The separator: data.document_separator,
/// which must encode to exactly one token; else, with documents the source marks, the
/// tokenizer's <sep>, else its <eos>. With data.prepared and source-marked documents the
/// prepared directory must have been prepared with the same boundary and separator. Throws
/// recipes::RecipeError naming the field otherwise.
DocumentSettings document_settings(const recipes::Recipe& recipe, const data::Tokenizer& tokenizer);

}  // namespace rota::app
