// The table of fields that apply only to some recipes, with the reason shown to the user.
#include "recipes/applicability.h"

#include <functional>
#include <map>

#include "recipes/corpora.h"

namespace rota::recipes {

namespace pb = google::protobuf;

namespace {

using Reason = std::optional<std::string>;
/// A rule: given the recipe and the message holding the field, why the field does not apply.
using Rule = std::function<Reason(const Recipe&, const pb::Message&)>;

template <typename Parent>
Rule rule(std::function<Reason(const Recipe&, const Parent&)> check) {
  return [check](const Recipe& recipe, const pb::Message& parent) {
    return check(recipe, static_cast<const Parent&>(parent));
  };
}

Reason unless(bool applies, const char* reason) {
  return applies ? Reason() : Reason(reason);
}

Reason sentencepiece_only(const Tokenizer& tokenizer) {
  if (tokenizer.has_path()) return "a reused tokenizer (path) is already trained";
  return unless(tokenizer.kind() == Tokenizer::SENTENCEPIECE_BPE ||
                    tokenizer.kind() == Tokenizer::SENTENCEPIECE_UNIGRAM,
                "only SentencePiece kinds are trained with it");
}

// Fields of data.files that only a classifier on JSONL/CSV/TSV records reads.
Reason files_labelled_field(const Recipe& recipe, const Files& files) {
  if (recipe.model().kind() != Model::CLASSIFIER) {
    return "only a CLASSIFIER reads labels and text pairs (language models read text_field)";
  }
  return unless(files.format() != Files::TEXT, "a TEXT file has no fields");
}

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> kRules = {
      {"rota.recipes.Lrpe.learn_theta", rule<Lrpe>([](const Recipe&, const Lrpe& lrpe) {
         return unless(lrpe.type() != 3, "LRPE type 3 (permutation) has no angles θ");
       })},
      {"rota.recipes.Lrpe.theta_base", rule<Lrpe>([](const Recipe&, const Lrpe& lrpe) {
         return unless(lrpe.type() != 3, "LRPE type 3 (permutation) has no angles θ");
       })},
      {"rota.recipes.Lrpe.pairing", rule<Lrpe>([](const Recipe&, const Lrpe& lrpe) {
         return unless(lrpe.type() == 2, "only LRPE type 2 pairs channels into rotations");
       })},
      {"rota.recipes.LinearAttention.denominator_eps",
       rule<LinearAttention>([](const Recipe&, const LinearAttention& linear) {
         return unless(linear.normalization() == LinearAttention::DENOMINATOR,
                       "only used with normalization: DENOMINATOR");
       })},
      {"rota.recipes.LinearAttention.decay",
       rule<LinearAttention>([](const Recipe& recipe, const LinearAttention&) {
         return unless(recipe.model().kind() == Model::CAUSAL_LM,
                       "a decay of the causal state is defined for CAUSAL_LM models only (RetNet "
                       "and TransNormerLLM are decoders)");
       })},
      {"rota.recipes.LinearAttention.gating",
       rule<LinearAttention>([](const Recipe& recipe, const LinearAttention&) {
         return unless(recipe.model().kind() == Model::CAUSAL_LM,
                       "gating of the causal state is defined for CAUSAL_LM models only (GLA and "
                       "Mamba-2 are decoders)");
       })},
      {"rota.recipes.LinearAttention.update_rule",
       rule<LinearAttention>([](const Recipe& recipe, const LinearAttention&) {
         return unless(recipe.model().kind() == Model::CAUSAL_LM,
                       "the update rule of the causal state is for CAUSAL_LM models only "
                       "(DeltaNet is a decoder)");
       })},
      {"rota.recipes.Model.classifier", rule<Model>([](const Recipe&, const Model& model) {
         return unless(model.kind() == Model::CLASSIFIER, "only for kind: CLASSIFIER");
       })},
      {"rota.recipes.Model.tie_embeddings", rule<Model>([](const Recipe&, const Model& model) {
         return unless(model.kind() != Model::CLASSIFIER,
                       "a CLASSIFIER has no vocabulary output to tie to the embeddings");
       })},
      {"rota.recipes.Model.init_std", rule<Model>([](const Recipe&, const Model& model) {
         return unless(model.init_scheme() == Model::NORMAL || model.init_scheme() == Model::GPT2,
                       "only init_scheme NORMAL and GPT2 have a σ (the other schemes scale by "
                       "the layers' widths)");
       })},
      {"rota.recipes.Data.window_sampling", rule<Data>([](const Recipe& recipe, const Data&) {
         if (recipe.train().carry_state()) {
           return Reason("train.carry_state reads the split as contiguous lanes in order");
         }
         return unless(recipe.model().kind() != Model::CLASSIFIER,
                       "a CLASSIFIER's examples are whole texts, not windows of a stream");
       })},
      {"rota.recipes.Data.document_separator", rule<Data>([](const Recipe& recipe, const Data&) {
         return unless(recipe.model().kind() != Model::CLASSIFIER,
                       "a CLASSIFIER's examples are whole texts already, not packed windows");
       })},
      {"rota.recipes.Data.documents", rule<Data>([](const Recipe& recipe, const Data&) {
         return unless(recipe.model().kind() != Model::CLASSIFIER,
                       "a CLASSIFIER's examples are whole texts already, not packed windows");
       })},
      {"rota.recipes.Data.shuffle", rule<Data>([](const Recipe& recipe, const Data&) {
         return unless(!recipe.train().carry_state(),
                       "train.carry_state reads the split as contiguous lanes in order");
       })},
      {"rota.recipes.Data.mlm", rule<Data>([](const Recipe& recipe, const Data&) {
         return unless(recipe.model().kind() == Model::MASKED_LM,
                       "masking is only for kind: MASKED_LM");
       })},
      {"rota.recipes.Data.tsv", rule<Data>([](const Recipe&, const Data& data) {
         const KnownCorpus* corpus = data.has_corpus() ? find_corpus(data.corpus()) : nullptr;
         const bool text = data.has_text_dir() || data.has_files() || data.has_prepared() ||
                           (corpus != nullptr && !corpus->tsv);
         return unless(!text,
                       "TSV columns only apply to TSV data (tsv_dir, sst-2, cola); data.files "
                       "names its fields in text_field, text_pair_field and label_field");
       })},
      {"rota.recipes.Files.valid_fraction", rule<Files>([](const Recipe&, const Files& files) {
         return unless(!files.has_valid(),
                       "valid is given (valid_fraction holds records out of train when it is "
                       "not)");
       })},
      {"rota.recipes.Files.text_field", rule<Files>([](const Recipe&, const Files& files) {
         return unless(files.format() != Files::TEXT,
                       "a TEXT file has no fields (for JSON Lines or CSV set format JSONL, CSV "
                       "or TSV)");
       })},
      {"rota.recipes.Files.text_pair_field", rule<Files>(files_labelled_field)},
      {"rota.recipes.Files.label_field", rule<Files>(files_labelled_field)},
      {"rota.recipes.Files.labels", rule<Files>(files_labelled_field)},
      {"rota.recipes.Tokenizer.vocab_size",
       rule<Tokenizer>([](const Recipe&, const Tokenizer& tokenizer) -> Reason {
         if (tokenizer.has_path()) return "a reused tokenizer (path) keeps its own vocabulary";
         return unless(tokenizer.kind() != Tokenizer::BYTE && tokenizer.kind() != Tokenizer::CHAR,
                       "BYTE and CHAR vocabularies are fixed by the data");
       })},
      {"rota.recipes.Tokenizer.character_coverage",
       rule<Tokenizer>([](const Recipe&, const Tokenizer& tokenizer) {
         return sentencepiece_only(tokenizer);
       })},
      {"rota.recipes.Tokenizer.byte_fallback",
       rule<Tokenizer>([](const Recipe&, const Tokenizer& tokenizer) {
         return sentencepiece_only(tokenizer);
       })},
      {"rota.recipes.Tokenizer.min_freq",
       rule<Tokenizer>([](const Recipe&, const Tokenizer& tokenizer) -> Reason {
         if (tokenizer.has_path()) return "a reused tokenizer (path) keeps its own vocabulary";
         return unless(tokenizer.kind() == Tokenizer::WORD, "only WORD vocabularies use min_freq");
       })},
      {"rota.recipes.Train.sample", rule<Train>([](const Recipe& recipe, const Train&) {
         return unless(recipe.model().kind() == Model::CAUSAL_LM,
                       "only a CAUSAL_LM generates text");
       })},
      {"rota.recipes.Train.segment_length", rule<Train>([](const Recipe& recipe, const Train&) {
         return unless(recipe.model().kind() == Model::CAUSAL_LM,
                       "segments carry the causal attention state forward: CAUSAL_LM only (a "
                       "bidirectional layer's keys come from both sides)");
       })},
      {"rota.recipes.Train.carry_state", rule<Train>([](const Recipe& recipe, const Train&) {
         return unless(recipe.model().kind() == Model::CAUSAL_LM,
                       "the attention state runs forward through a stream: CAUSAL_LM only");
       })},
      {"rota.recipes.Schedule.min_lr", rule<Schedule>([](const Recipe&, const Schedule& schedule) {
         return unless(schedule.kind() != Schedule::CONSTANT,
                       "a CONSTANT schedule has no minimum lr");
       })},
      {"rota.recipes.SoftmaxAttention.window",
       rule<SoftmaxAttention>([](const Recipe& recipe, const SoftmaxAttention&) {
         return unless(recipe.model().kind() == Model::CAUSAL_LM,
                       "a sliding window (the previous W keys) is defined for CAUSAL_LM models "
                       "only");
       })},
      {"rota.recipes.Position.add_sinusoidal",
       rule<Position>([](const Recipe& recipe, const Position& position) -> Reason {
         if (&position != &recipe.model().position()) {
           return "absolute embeddings are added once for the whole stack: set add_sinusoidal "
                  "in model.position";
         }
         switch (position.encoding_case()) {
           case Position::kNone:
             return "NoPE has no positions; for sinusoidal positions use `sinusoidal {}`";
           case Position::kSinusoidal:
             return "the encoding is already sinusoidal";
           case Position::kLearnedAbsolute:
             return "the encoding is already absolute (learned_absolute)";
           default:
             return std::nullopt;
         }
       })},
  };
  return kRules;
}

}  // namespace

std::optional<std::string> inapplicable_reason(const Recipe& recipe, const pb::Message& parent,
                                               const pb::FieldDescriptor& field) {
  const auto& table = rules();
  const auto found = table.find(field.full_name());
  if (found == table.end()) return std::nullopt;
  return found->second(recipe, parent);
}

bool default_withheld(const pb::Message& parent, const pb::FieldDescriptor& field) {
  if (field.full_name() != "rota.recipes.Tokenizer.kind") return false;
  return static_cast<const Tokenizer&>(parent).has_path();
}

}  // namespace rota::recipes
