// The field reference of docs/recipes.md generated from recipe.proto, and the comment check.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>

namespace rota::recipes {

/// recipe.proto compiled with its comments (a FileDescriptorSet written at build time).
std::filesystem::path schema_descriptor_set_path();

/// The schema with comments, loaded into its own pool. Throws std::runtime_error when the file
/// is missing or malformed.
class CommentedSchema {
 public:
  explicit CommentedSchema(
      const std::filesystem::path& descriptor_set = schema_descriptor_set_path());
  ~CommentedSchema();
  const google::protobuf::FileDescriptor& file() const { return *file_; }

 private:
  std::unique_ptr<google::protobuf::DescriptorPool> pool_;
  const google::protobuf::FileDescriptor* file_ = nullptr;
};

/// Markdown: one section per message reachable from Recipe and Ablation (by field path), with
/// a table of its fields (type, default, the schema comment, enum values).
std::string schema_reference_markdown(const CommentedSchema& schema);

/// Full names of the messages, fields and enum values that have no comment in recipe.proto.
std::vector<std::string> undocumented_schema_elements(const CommentedSchema& schema);

/// Markers around the generated part of docs/recipes.md.
inline constexpr const char* kReferenceBegin = "<!-- BEGIN GENERATED FIELD REFERENCE -->";
inline constexpr const char* kReferenceEnd = "<!-- END GENERATED FIELD REFERENCE -->";

}  // namespace rota::recipes
