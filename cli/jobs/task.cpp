// Shared parts of the recipe tasks: seeds, corpus, state capture, tokenizer files.
#include "cli/jobs/task.h"

#include "cli/jobs/tasks.h"
#include "models/registry/model_from_recipe.h"

#include <unistd.h>

#include <filesystem>

#include "data/util/seed.h"
#include "framework/io/atomic_file.h"

namespace fs = std::filesystem;

namespace rota::cli {

RunSeeds::RunSeeds(uint64_t seed)
    : init(data::mix_seed({seed, 1})),
      dropout(data::mix_seed({seed, 2})),
      data(data::mix_seed({seed, 3})),
      masking(data::mix_seed({seed, 4})) {}

Task::Task(TaskInputs inputs)
    : inputs_(std::move(inputs)),
      seeds_(inputs_.recipe.train().seed()),
      dropout_gen_(std::make_shared<Generator>(seeds_.dropout)) {
  ROTA_CHECK(inputs_.tokenizer != nullptr, "task: no tokenizer");
  model_options_ =
      models::model_options_from_recipe(inputs_.recipe, inputs_.tokenizer->vocab_size());
}

Task::~Task() = default;

const data::Corpus& Task::corpus() {
  if (!corpus_) {
    const recipes::Data& d = inputs_.recipe.data();
    const std::string source = d.has_corpus()     ? d.corpus()
                               : d.has_text_dir() ? d.text_dir()
                                                  : d.tsv_dir();
    corpus_ = std::make_unique<data::Corpus>(data::Corpus::open(source, inputs_.data_options));
  }
  return *corpus_;
}

std::string Task::validation_split() {
  for (const char* name : {"valid", "validation", "dev"}) {
    if (corpus().has_split(name)) return name;
  }
  fail("data: corpus '{}' has no validation split (valid.txt / dev.tsv)", corpus().name());
}

int64_t Task::micro_batch_size() const {
  return inputs_.recipe.data().batch_size() / inputs_.recipe.train().gradient_accumulation();
}

train::Metrics Task::evaluate() {
  return evaluate_split(validation_split(), inputs_.recipe.train().eval_batches());
}

void Task::save_state(io::TrainState& state) const {
  const data::LoaderCursor cursor = loader_cursor();
  state.mutable_data_cursor()->set_epoch(cursor.epoch);
  state.mutable_data_cursor()->set_position(cursor.position);
  state.mutable_data_cursor()->set_shard(0);
  state.mutable_data_cursor()->set_num_shards(1);
  io::save_rng_state(state, "dropout", *dropout_gen_);
}

void Task::restore_state(const io::TrainState& state) {
  prepare_training_data();
  restore_loader({state.data_cursor().epoch(), state.data_cursor().position()});
  io::restore_rng_state(state, "dropout", *dropout_gen_);
}

std::map<std::string, std::string> Task::checkpoint_files() const {
  // The tokenizer writes a directory (tokenizer.json and maybe vocab.txt / spm.model); its
  // files go flat into the checkpoint, so load_tokenizer(checkpoint_dir) reads them back.
  const fs::path dir =
      fs::temp_directory_path() / ("rota-tokenizer-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(reinterpret_cast<uintptr_t>(this)));
  fs::remove_all(dir);
  inputs_.tokenizer->save(dir);
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    files[entry.path().filename().string()] = io::read_file(entry.path());
  }
  fs::remove_all(dir);
  return files;
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

}  // namespace rota::cli
