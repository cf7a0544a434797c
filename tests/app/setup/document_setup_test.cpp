// Packed documents of a run: which token ends a document for each combination of
// data.documents, data.document_separator and tokenizer, and the refusals, and that a tokenizer
// Rota builds for source-marked documents gets a <sep>.
#include "app/setup/document_setup.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/setup/tokenizer_setup.h"
#include "data/tokenizer/tokenizer_factory.h"
#include "recipes/loader.h"
#include "tests/support/expect_recipe_error.h"
#include "tests/support/source_tree.h"

namespace rota::app {
namespace ROTA_TEST_FILE_NS {

using data::DocumentBoundary;
using data::SpecialToken;
using rota::testing::expect_recipe_error;

recipes::Recipe recipe(const std::vector<std::string>& overrides) {
  return recipes::load_recipe(std::string(ROTA_SOURCE_DIR) + "/recipes/tests/tiny_causal_lm.txtpb",
                              overrides);
}

// Characters of "a b c\nd e\n" after the special tokens: every character one token.
std::unique_ptr<data::Tokenizer> char_tokenizer(std::vector<SpecialToken> specials) {
  data::TokenizerSpec spec;
  spec.kind = data::TokenizerKind::kChar;
  spec.specials = std::move(specials);
  return data::build_tokenizer(spec, "a b c\nd e\n");
}

TEST(DocumentSettings, NoPackingUnlessAsked) {
  const DocumentSettings settings =
      document_settings(recipe({}), *char_tokenizer({SpecialToken::kEos}));
  EXPECT_FALSE(settings.packed());
  EXPECT_EQ(settings.boundary, DocumentBoundary::kNone);
}

TEST(DocumentSettings, ASeparatorInTheTextIsItsOneToken) {
  const auto tokenizer = char_tokenizer({SpecialToken::kUnk, SpecialToken::kEos});
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"data.document_separator=\"d\""},
        std::vector<std::string>{"data.document_separator=\"d\"",
                                 "data.documents=SEPARATOR_IN_TEXT"}}) {
    const DocumentSettings settings = document_settings(recipe(sets), *tokenizer);
    EXPECT_EQ(settings.boundary, DocumentBoundary::kNone);
    EXPECT_EQ(settings.separator, tokenizer->encode("d").at(0));
  }
}

TEST(DocumentSettings, SourceDocumentsEndWithSepThenEos) {
  const auto both = char_tokenizer({SpecialToken::kUnk, SpecialToken::kEos, SpecialToken::kSep});
  const DocumentSettings with_sep = document_settings(recipe({"data.documents=FILES"}), *both);
  EXPECT_EQ(with_sep.boundary, DocumentBoundary::kFiles);
  EXPECT_EQ(with_sep.separator, both->specials().id(SpecialToken::kSep));
  const auto eos_only = char_tokenizer({SpecialToken::kUnk, SpecialToken::kEos});
  EXPECT_EQ(document_settings(recipe({"data.documents=WIKITEXT_ARTICLES"}), *eos_only).separator,
            eos_only->specials().id(SpecialToken::kEos));
  // A named separator wins over the special tokens.
  EXPECT_EQ(
      document_settings(recipe({"data.documents=RECORDS", "data.document_separator=\"c\""}), *both)
          .separator,
      both->encode("c").at(0));
}

TEST(DocumentSettings, RefusesWhatCannotEndADocument) {
  const auto none = char_tokenizer({SpecialToken::kUnk});
  expect_recipe_error([&] { document_settings(recipe({"data.documents=PARAGRAPHS"}), *none); },
                      "data.documents: the char tokenizer has neither a <sep> nor an <eos> token");
  expect_recipe_error(
      [&] {
        document_settings(recipe({"data.documents=PARAGRAPHS", "data.document_separator=\"a b\""}),
                          *none);
      },
      "'a b' encodes to 3 tokens with this tokenizer; packed documents need a separator that is "
      "exactly one token (e.g. a special token the tokenizer keeps whole, or leave it unset");
}

TEST(DocumentSettings, BuiltTokenizersGetASepForSourceDocuments) {
  for (const char* kind : {"BYTE", "CHAR", "WORD"}) {
    SCOPED_TRACE(kind);
    const std::string tokenizer = std::string("data.tokenizer={kind: ") + kind + "}";
    const data::TokenizerSpec marked =
        tokenizer_spec_from_recipe(recipe({tokenizer, "data.documents=RECORDS"}));
    ASSERT_TRUE(marked.specials.has_value());
    EXPECT_EQ(std::count(marked.specials->begin(), marked.specials->end(), SpecialToken::kSep), 1);
    // Not when a separator is named, nor without source documents.
    for (const std::vector<std::string>& sets :
         {std::vector<std::string>{tokenizer, "data.documents=RECORDS",
                                   "data.document_separator=\"x\""},
          std::vector<std::string>{tokenizer}}) {
      const data::TokenizerSpec plain = tokenizer_spec_from_recipe(recipe(sets));
      EXPECT_EQ(std::count(plain.specials->begin(), plain.specials->end(), SpecialToken::kSep), 0);
    }
  }
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::app
