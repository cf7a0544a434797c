// The schema documents itself: every element has a comment; docs/recipes.md has the reference.
#include <gtest/gtest.h>

#include <filesystem>

#include "recipes/loader.h"
#include "recipes/recipe.pb.h"
#include "recipes/schema_reference.h"
#include "tests/support/source_tree.h"

namespace rota::recipes {
namespace ROTA_TEST_FILE_NS {

TEST(RecipeSchema, EveryElementHasAComment) {
  const CommentedSchema schema;
  const std::vector<std::string> missing = undocumented_schema_elements(schema);
  EXPECT_TRUE(missing.empty()) << "undocumented: " << ::testing::PrintToString(missing);
}

TEST(RecipeSchema, CommentedSchemaIsTheCompiledSchema) {
  // The descriptor set read for comments describes the same schema as the generated code.
  const CommentedSchema schema;
  const google::protobuf::FileDescriptor& compiled = *Recipe::descriptor()->file();
  ASSERT_EQ(schema.file().message_type_count(), compiled.message_type_count());
  for (int i = 0; i < compiled.message_type_count(); ++i) {
    const google::protobuf::Descriptor& a = *compiled.message_type(i);
    const google::protobuf::Descriptor& b = *schema.file().message_type(i);
    EXPECT_EQ(a.full_name(), b.full_name());
    ASSERT_EQ(a.field_count(), b.field_count()) << a.full_name();
    for (int f = 0; f < a.field_count(); ++f) {
      EXPECT_EQ(a.field(f)->name(), b.field(f)->name()) << a.full_name();
      EXPECT_EQ(a.field(f)->number(), b.field(f)->number()) << a.field(f)->full_name();
      EXPECT_EQ(a.field(f)->type(), b.field(f)->type()) << a.field(f)->full_name();
      EXPECT_EQ(a.field(f)->has_default_value(), b.field(f)->has_default_value())
          << a.field(f)->full_name();
    }
  }
}

TEST(RecipeSchema, VersionFieldExists) {
  EXPECT_NE(Recipe::descriptor()->FindFieldByName("version"), nullptr);
  EXPECT_NE(Ablation::descriptor()->FindFieldByName("version"), nullptr);
}

TEST(RecipeSchema, ReferenceCoversEveryFieldPath) {
  const std::string reference = schema_reference_markdown(CommentedSchema());
  for (const char* path :
       {"`model.position.lrpe.learn_theta`", "`data.mlm.random_fraction`", "`train.sample.top_k`",
        "`finetune.freeze`", "`variant.overrides`", "`follow_up.recipe`",
        "`model.attention.softmax.streaming.left_memory`"}) {
    EXPECT_NE(reference.find(path), std::string::npos) << path;
  }
}

TEST(RecipeSchema, DocsCarryTheCurrentGeneratedReference) {
  const std::string doc =
      read_text_file(std::filesystem::path(ROTA_SOURCE_DIR) / "docs" / "recipes.md");
  const size_t begin = doc.find(kReferenceBegin);
  const size_t end = doc.find(kReferenceEnd);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const size_t body = begin + std::string(kReferenceBegin).size();
  std::string expected = "\n";
  expected += schema_reference_markdown(CommentedSchema());
  EXPECT_EQ(doc.substr(body, end - body), expected)
      << "docs/recipes.md is stale: run `build/recipes/recipes_reference --update docs/recipes.md`";
}

}  // namespace ROTA_TEST_FILE_NS
}  // namespace rota::recipes
