// Shared parts of the recipe tasks: seeds, corpus, state capture, tokenizer files.
#include "app/tasks/task.h"

#include <algorithm>
#include <filesystem>

#include "app/setup/data_source_setup.h"
#include "app/setup/model_setup.h"
#include "app/setup/tokenizer_setup.h"
#include "app/tasks/causal_lm_task.h"
#include "app/tasks/classifier_task.h"
#include "app/tasks/lm_token_source.h"
#include "app/tasks/masked_lm_task.h"
#include "data/corpus/symbol_search.h"
#include "data/prepared/prepared_corpus.h"
#include "framework/base/seed_mix.h"
#include "recipes/recipe_error.h"

namespace fs = std::filesystem;

namespace rota::app {
namespace {

// Rank r's dropout seed: rank 0 keeps the single-process seed, so one rank = one process.
uint64_t rank_dropout_seed(uint64_t dropout_seed, int rank) {
  return rank == 0 ? dropout_seed : mix_seed({dropout_seed, static_cast<uint64_t>(rank)});
}

std::string dropout_stream_name(int rank) {
  return rank == 0 ? "dropout" : "dropout.rank" + std::to_string(rank);
}

}  // namespace

std::string batch_split_problem(const recipes::Recipe& recipe, int64_t ranks) {
  const int64_t batch = recipe.data().batch_size();
  const int64_t accumulation = recipe.train().gradient_accumulation();
  if (batch % (accumulation * ranks) == 0) return "";
  return fmt::format(
      "data.batch_size: {} sequences (the global batch) do not split evenly into "
      "train.gradient_accumulation {} x {} ranks; each rank's micro-batch holds batch_size / "
      "(gradient_accumulation x ranks) sequences, so use a multiple of {} or another number of "
      "ranks",
      batch, accumulation, ranks, accumulation * ranks);
}

RunSeeds::RunSeeds(uint64_t seed)
    : init(mix_seed({seed, 1})),
      dropout(mix_seed({seed, 2})),
      data(mix_seed({seed, 3})),
      masking(mix_seed({seed, 4})) {}

Task::Task(TaskInputs inputs) : inputs_(std::move(inputs)), seeds_(inputs_.recipe.train().seed()) {
  ROTA_CHECK(inputs_.tokenizer != nullptr, "task: no tokenizer");
  ROTA_CHECK(inputs_.communicator != nullptr, "task: no communicator");
  const std::string problem = batch_split_problem(inputs_.recipe, communicator().world_size());
  if (!problem.empty()) throw recipes::RecipeError(problem);
  dropout_gen_ =
      std::make_shared<Generator>(rank_dropout_seed(seeds_.dropout, communicator().rank()));
  model_options_ = model_options_from_recipe(inputs_.recipe, inputs_.tokenizer->vocab_size());
  check_model_memory();
  documents_ = document_settings(inputs_.recipe, *inputs_.tokenizer);
}

recipes::RecipeError Task::packed_batches_refusal() const {
  return recipes::RecipeError(
      "evaluation batches: a run with packed documents (data.document_separator, "
      "data.documents) evaluates them, whose document ids separate batches do not carry");
}

void Task::check_batch_memory(const Tensor& tokens) const {
  const int64_t batch = tokens.size(0), width = tokens.size(1);
  if (batch * width <= checked_batch_tokens_) return;
  check_memory_budget(models::inference_memory(model_options_, batch, width), inputs_.memory,
                      inputs_.recipe, "evaluation", batch, width);
  checked_batch_tokens_ = batch * width;
}

void Task::check_model_memory() const {
  const recipes::Recipe& r = inputs_.recipe;
  const int64_t length = r.data().sequence_length();
  if (inputs_.inference) {
    // The weights now; the activations of each evaluation batch when its width is known
    // (check_batch_memory): a window is never wider than the split it comes from.
    check_memory_budget(models::inference_memory(model_options_, 0, length), inputs_.memory, r,
                        "loading the model", 0, length);
    return;
  }
  const int64_t per_step =
      std::max<int64_t>(1, r.train().gradient_accumulation()) * communicator().world_size();
  const int64_t micro_batch = std::max<int64_t>(1, r.data().batch_size() / per_step);
  models::MemoryEstimate estimate = models::training_memory(model_options_, micro_batch, length);
  if (r.has_finetune() && (r.finetune().has_lora() || r.has_linearize())) {
    // Most weights are frozen (adapters, attention transfer): the state of what trains is
    // checked once it is known (check_trained_memory).
    estimate = models::with_trainable_parameters(estimate, 0, 0, model_options_.dtype);
  }
  check_memory_budget(estimate, inputs_.memory, r, "training", micro_batch, length);
}

models::MemoryEstimate Task::trained_memory_estimate() {
  const recipes::Recipe& r = inputs_.recipe;
  const int64_t length = r.data().sequence_length();
  double trainable = 0, all = 0;
  for (const auto& p : model().parameters()) {
    all += static_cast<double>(p.data().numel());
    trainable += p.requires_grad() ? static_cast<double>(p.data().numel()) : 0.0;
  }
  const models::MemoryEstimate full =
      models::training_memory(model_options_, micro_batch_size(), length);
  return models::with_trainable_parameters(full, trainable, all - full.parameters,
                                           model_options_.dtype);
}

void Task::check_trained_memory() {
  const recipes::Recipe& r = inputs_.recipe;
  check_memory_budget(trained_memory_estimate(), inputs_.memory, r, "training", micro_batch_size(),
                      r.data().sequence_length());
}

Task::~Task() = default;

const data::Corpus& Task::corpus() {
  if (!corpus_) {
    ROTA_CHECK(!inputs_.recipe.data().has_prepared(), "data: a prepared corpus ({}) has no text",
               inputs_.recipe.data().prepared());
    corpus_ =
        std::make_unique<data::Corpus>(open_recipe_corpus(inputs_.recipe, inputs_.data_options));
  }
  return *corpus_;
}

std::string Task::validation_split() {
  if (recipe().data().has_prepared()) return prepared_validation_split(recipe().data().prepared());
  for (const char* name : {"valid", "validation", "dev"}) {
    if (corpus().has_split(name)) return name;
  }
  fail("data: corpus '{}' has no validation split (valid.txt / dev.tsv)", corpus().name());
}

std::vector<std::string> Task::split_names() {
  if (recipe().data().has_prepared()) {
    return data::PreparedCorpus::open(recipe().data().prepared()).splits();
  }
  return corpus().splits();
}

std::string Task::evaluation_split_for(const std::string& requested, const std::string& what,
                                       const std::string& split_option) {
  const std::string split = requested.empty() ? "test" : requested;
  if (split == "valid" || split == "validation" || split == "val" || split == "dev") {
    return validation_split();
  }
  const std::vector<std::string> names = split_names();
  if (std::find(names.begin(), names.end(), split) != names.end()) return split;
  std::vector<std::string> others;
  for (const std::string& name : names) {
    if (name != "train") others.push_back(name);
  }
  throw recipes::RecipeError(
      fmt::format("{} has no '{}' split{}: its data has {}; evaluate {} with {}{}", what, split,
                  requested.empty() ? " (the default)" : "", fmt::join(names, ", "),
                  others.empty() ? "the training split" : "another split", split_option,
                  others.empty() ? "train" : others.front()));
}

int64_t Task::steps_per_epoch() {
  return prepare_training_data() / recipe().data().batch_size();
}

int64_t Task::micro_batch_size() const {
  return eval_batch_size() / communicator().world_size();
}

int64_t Task::eval_batch_size() const {
  return inputs_.recipe.data().batch_size() / inputs_.recipe.train().gradient_accumulation();
}

recipes::RecipeError Task::causal_lm_only(const std::string& what) const {
  return recipes::RecipeError(what + " to causal language models (this run is a " +
                              recipes::Model::Kind_Name(recipe().model().kind()) + ")");
}

void Task::set_evaluation_stride(int64_t stride) {
  if (stride != 0) throw causal_lm_only("--stride: sliding evaluation windows apply");
}

std::vector<PositionBucket> Task::evaluate_by_position(const std::string&, int64_t) {
  throw causal_lm_only("--by-position: the loss by position applies");
}

data::WindowSampling Task::training_window_sampling() const {
  data::WindowSampling sampling;
  sampling.random_offsets = recipe().data().window_sampling() == recipes::Data::RANDOM_OFFSETS;
  sampling.seed = mix_seed({seeds_.data, 5});  // its own stream, beside the shuffling's
  return sampling;
}

data::LoaderOptions Task::training_loader_options() const {
  data::LoaderOptions options;
  options.batch_size = micro_batch_size();
  options.shuffle = recipe().data().shuffle();
  options.drop_last = true;
  options.seed = seeds_.data;
  options.rank = communicator().rank();
  options.world_size = communicator().world_size();
  return options;
}

data::LoaderOptions Task::evaluation_loader_options() const {
  data::LoaderOptions options;
  options.batch_size = eval_batch_size();
  options.shuffle = false;
  options.drop_last = false;
  return options;
}

int64_t Task::evaluation_batch_count(const data::BatchLoader& loader, int64_t max_batches) {
  const int64_t batches = loader.batches_per_epoch();
  return max_batches > 0 ? std::min(batches, max_batches) : batches;
}

train::Metrics Task::evaluate() {
  return evaluate_split(validation_split(), inputs_.recipe.train().eval_batches());
}

void Task::save_state(io::TrainState& state) const {
  distributed::Communicator& comm = communicator();
  const data::LoaderCursor cursor =
      loader_ ? loader_->cursor() : data::LoaderCursor{};  // global: the same on every rank
  state.mutable_data_cursor()->set_epoch(cursor.epoch);
  state.mutable_data_cursor()->set_position(cursor.position);
  state.mutable_data_cursor()->set_shard(0);
  state.mutable_data_cursor()->set_num_shards(comm.world_size());
  // Drop the streams of an earlier world size, then store every rank's (gathered: 4 words each).
  auto* streams = state.mutable_rng_states();
  for (int i = streams->size() - 1; i >= 0; --i) {
    if (streams->Get(i).name().rfind("dropout.rank", 0) == 0) streams->DeleteSubrange(i, 1);
  }
  const Generator::State& mine = dropout_gen_->state();
  std::vector<int64_t> words(mine.begin(), mine.end());
  if (comm.world_size() > 1) words = distributed::allgather(comm, words);
  for (int r = 0; r < comm.world_size(); ++r) {
    Generator::State rank_words{};
    for (size_t i = 0; i < rank_words.size(); ++i) {
      rank_words[i] = static_cast<uint64_t>(words[r * rank_words.size() + i]);
    }
    Generator stream;
    stream.set_state(rank_words);
    io::save_rng_state(state, dropout_stream_name(r), stream);
  }
}

void Task::restore_state(const io::TrainState& state) {
  prepare_training_data();
  loader_->restore({state.data_cursor().epoch(), state.data_cursor().position()});
  const int rank = communicator().rank();
  const std::string name = dropout_stream_name(rank);
  for (const auto& entry : state.rng_states()) {
    if (entry.name() == name) return io::restore_rng_state(state, name, *dropout_gen_);
  }
  ROTA_CHECK(rank != 0, "restore_state: the train state has no random stream 'dropout'");
  dropout_gen_->set_state(Generator(mix_seed({seeds_.dropout, static_cast<uint64_t>(rank),
                                              static_cast<uint64_t>(state.step())}))
                              .state());
}

std::map<std::string, std::string> Task::checkpoint_files() const {
  // Flat in the checkpoint, so load_tokenizer(checkpoint_dir) reads them back.
  std::map<std::string, std::string> files = tokenizer_files(*inputs_.tokenizer);
  for (auto& [name, bytes] : data_files()) files[name] = std::move(bytes);
  return files;
}

void Task::load_data() {
  prepare_training_data();
  check_text_splits();
}

void Task::check_text_splits() {
  // A prepared directory's shards were checked (sizes, tokenizer) when training data was made.
  if (recipe().data().has_prepared()) return;
  const data::Corpus& data = corpus();
  if (data.format() != data::CorpusFormat::kText) return;
  if (const data::FileSource* files = data.file_source()) files->check_all();
  const data::Tokenizer& tok = tokenizer();
  const bool can_fail = !tok.specials().has(data::SpecialToken::kUnk) && tok.kind() != "byte";
  struct Enough {};  // stops a scan that has seen what it needs
  const bool registered = data::find_corpus(data.name()) != nullptr;
  for (const std::string& split : data.splits()) {
    // A registered corpus's test file is located (or fetched) only when it is evaluated.
    if (registered && split == "test") continue;
    const bool encode = can_fail && split != "train";
    bool empty = true;
    bool failed = false;
    try {
      data.for_each_text_piece(split, size_t{1} << 20, [&](std::string_view piece) {
        empty = empty && piece.empty();
        if (!encode) throw Enough{};
        try {
          (void)tok.encode(piece);
        } catch (const Error&) {
          failed = true;
          throw Enough{};
        }
      });
    } catch (const Enough&) {
    }
    ROTA_CHECK(!empty, "data: the {} split of '{}' is empty", split, data.name());
    if (!failed) continue;
    const std::optional<data::SymbolLocation> where =
        data::find_symbol(data, split, [&](std::string_view character) {
          try {
            (void)tok.encode(character);
            return false;
          } catch (const Error&) {
            return true;
          }
        });
    if (!where) (void)tok.encode(data.read_text(split));  // the tokenizer's own message
    fail(
        "data: {}: character {} of the {} split is not in the {} tokenizer's vocabulary (built "
        "from the training split), and the tokenizer has no <unk> to map it to. Add the "
        "character to the training data, or give the tokenizer an <unk> (a saved tokenizer with "
        "<unk> in data.tokenizer.path, or a kind that has one: WORD, SENTENCEPIECE_BPE, "
        "SENTENCEPIECE_UNIGRAM, or BYTE, which has no unknown characters)",
        where->where(), data::describe_symbol(where->character), split, tok.kind());
  }
}

std::unique_ptr<Task> make_task(TaskInputs inputs) {
  switch (inputs.recipe.model().kind()) {
    case recipes::Model::CAUSAL_LM:
      return std::make_unique<CausalLmTask>(std::move(inputs));
    case recipes::Model::MASKED_LM:
      return std::make_unique<MaskedLmTask>(std::move(inputs));
    case recipes::Model::CLASSIFIER:
      return std::make_unique<ClassifierTask>(std::move(inputs));
  }
  fail("model.kind: unknown kind {}", static_cast<int>(inputs.recipe.model().kind()));
}

}  // namespace rota::app
