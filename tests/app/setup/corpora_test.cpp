// The corpus names recipe validation knows agree with the data registry (data/corpus).
#include <gtest/gtest.h>

#include "data/corpus/corpus_registry.h"
#include "recipes/corpora.h"

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

TEST(RecipeCorpora, AgreeWithTheDataRegistry) {
  for (const data::CorpusInfo& info : data::corpus_registry()) {
    SCOPED_TRACE(info.name);
    const KnownCorpus* known = find_corpus(info.name);
    ASSERT_NE(known, nullptr) << "recipes/corpora.cpp lacks a registered corpus";
    EXPECT_EQ(known->tsv, info.format == data::CorpusFormat::kTsv);
    EXPECT_EQ(known->has_valid_split, data::find_corpus_file(info, "valid") != nullptr);
  }
  for (const KnownCorpus& known : known_corpora()) {
    EXPECT_NE(data::find_corpus(known.name), nullptr)
        << known.name << " is not in the data registry";
  }
}

TEST(RecipeCorpora, SourceKinds) {
  Data data;
  data.set_corpus("sst-2");
  EXPECT_TRUE(is_tsv_source(data));
  EXPECT_FALSE(is_text_source(data));
  data.set_corpus("wikitext-2");
  EXPECT_TRUE(is_text_source(data));
  data.set_corpus("unknown");
  EXPECT_FALSE(is_tsv_source(data));
  EXPECT_FALSE(is_text_source(data));
  data.set_tsv_dir("/x");
  EXPECT_TRUE(is_tsv_source(data));
  data.set_text_dir("/x");
  EXPECT_TRUE(is_text_source(data));
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes
