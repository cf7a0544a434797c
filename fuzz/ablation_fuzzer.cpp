// Fuzzes the ablation file reader (recipes::load_ablation) next to a valid base recipe.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "fuzz_support.h"
#include "recipes/ablation.h"
#include "recipes/recipe_error.h"

namespace {

namespace fs = std::filesystem;

// Keeps the harness's own parse quiet.
class Silent : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

// Recipe paths stay inside the work directory: the fuzzer tests the reader, not what a
// hostile path on this machine (/dev/zero) would do.
bool plain_name(const std::string& name) {
  return name.find('/') == std::string::npos && name != "." && name != "..";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = rota::fuzz::as_text(data, size);
  rota::recipes::Ablation parsed;
  google::protobuf::TextFormat::Parser parser;
  Silent silent;
  parser.RecordErrorsTo(&silent);
  if (parser.ParseFromString(std::string(text), &parsed) &&
      (!plain_name(parsed.base()) || !plain_name(parsed.follow_up().recipe()))) {
    return 0;
  }
  static const fs::path dir = [] {
    const fs::path made = rota::fuzz::scratch_dir("ablation");
    rota::fuzz::write_bytes(made / "base.txtpb", rota::fuzz::kSmallRecipe);
    return made;
  }();
  const fs::path file = dir / "ablation.txtpb";
  rota::fuzz::write_bytes(file, text);
  try {
    rota::recipes::load_ablation(file);
  } catch (const rota::recipes::RecipeError&) {
    // The expected outcome for a bad ablation file.
  }
  return 0;
}
