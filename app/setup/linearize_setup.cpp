// Linearisation's attention transfer (see linearize_setup.h).
#include "app/setup/linearize_setup.h"

#include "app/setup/lora_setup.h"
#include "app/setup/model_setup.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/reduce.h"
#include "framework/autograd/ops/shape.h"
#include "framework/base/error.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_paths.h"
#include "framework/nn/lora.h"
#include "recipes/loader.h"

namespace rota::app {

models::ModelOptions attention_teacher_options(const recipes::Recipe& recipe, int64_t vocab_size) {
  const std::filesystem::path source = io::resolve_checkpoint(recipe.finetune().init_from());
  const std::filesystem::path file = source / io::kRecipeFile;
  const recipes::Recipe teacher_recipe =
      recipes::load_recipe_text(recipes::read_text_file(file), file.string());
  models::ModelOptions options = model_options_from_recipe(teacher_recipe, vocab_size);
  // The teacher only ever runs in eval mode: no dropout stream.
  options.dropout = 0.0;
  options.softmax.dropout = 0.0;
  if (options.hybrid) options.hybrid->softmax.dropout = 0.0;
  return options;
}

std::shared_ptr<models::CausalLm> load_attention_teacher(const recipes::Recipe& recipe,
                                                         int64_t vocab_size,
                                                         const models::CausalLm& student) {
  const std::filesystem::path source = io::resolve_checkpoint(recipe.finetune().init_from());
  const io::Checkpoint checkpoint = io::load_checkpoint(source);
  const recipes::Recipe teacher_recipe =
      recipes::load_recipe_text(checkpoint.recipe_text, (source / io::kRecipeFile).string());
  const recipes::Model& m = teacher_recipe.model();
  ROTA_CHECK(
      m.kind() == recipes::Model::CAUSAL_LM && m.attention().has_softmax() && !m.has_hybrid(),
      "linearize: the teacher {} must be a causal LM with softmax attention in every "
      "block (it is what the linear attention learns to imitate)",
      source.string());
  const models::ModelOptions options = attention_teacher_options(recipe, vocab_size);
  Generator init_gen(0);  // every tensor is loaded below
  auto teacher = std::make_shared<models::CausalLm>(options, init_gen, nullptr);
  const models::Encoder& t = teacher->encoder();
  const models::Encoder& s = student.encoder();
  ROTA_CHECK(t.num_blocks() == s.num_blocks() && t.options().dim == s.options().dim,
             "linearize: the teacher {} has {} blocks of width {}, the student {} of width {}",
             source.string(), t.num_blocks(), t.options().dim, s.num_blocks(), s.options().dim);
  for (int64_t i = 0; i < s.num_blocks(); ++i) {
    ROTA_CHECK(!s.block(i).is_softmax(), "linearize: the student's block {} is softmax", i);
  }
  StateDict weights = checkpoint.model;
  if (nn::has_lora_adapters(weights)) {
    // A teacher fine-tuned with low-rank adapters: the model it computes is the merged one.
    ROTA_CHECK(teacher_recipe.has_finetune() && teacher_recipe.finetune().has_lora(),
               "linearize: the teacher {} holds low-rank adapters but its recipe has no "
               "finetune.lora to say their scale",
               source.string());
    nn::merge_lora_adapters(weights,
                            lora_options_from_recipe(teacher_recipe.finetune().lora()).scale());
  }
  teacher->load_state_dict(weights, /*strict=*/true);
  for (auto& [name, param] : teacher->named_parameters()) Variable(param).set_requires_grad(false);
  teacher->eval();
  return teacher;
}

std::vector<std::string> expand_grouped_kv(StateDict& state, int64_t heads, int64_t kv_heads,
                                           int64_t head_dim) {
  if (kv_heads <= 0 || kv_heads == heads) return {};
  ROTA_CHECK(kv_heads < heads && heads % kv_heads == 0,
             "linearize: {} query heads do not group over {} key/value heads", heads, kv_heads);
  const int64_t group = heads / kv_heads;
  std::vector<std::string> changed;
  StateDict out;
  for (const auto& [name, tensor] : state) {
    const bool kv = name.find(".attn.k_proj.") != std::string::npos ||
                    name.find(".attn.v_proj.") != std::string::npos;
    if (!kv) {
      out.insert(name, tensor);
      continue;
    }
    ROTA_CHECK(tensor.dim() >= 1 && tensor.size(0) == kv_heads * head_dim,
               "linearize: {} has {} rows, expected {} key/value heads of {}", name, tensor.size(0),
               kv_heads, head_dim);
    // [H_kv·D, ...] → [H_kv, 1, D, ...] → [H_kv, G, D, ...] → [H·D, ...]: query head h reads
    // kv head ⌊h/G⌋, as grouped-query attention does.
    const std::vector<double> values = tensor.to_double_vector();
    const int64_t row = tensor.numel() / tensor.size(0);
    std::vector<double> expanded;
    expanded.reserve(values.size() * group);
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t source_head = h / group;
      const auto begin = values.begin() + source_head * head_dim * row;
      expanded.insert(expanded.end(), begin, begin + head_dim * row);
    }
    Shape shape = tensor.shape();
    shape[0] = heads * head_dim;
    out.insert(name, tensor_from(expanded, shape, tensor.dtype()));
    changed.push_back(name);
  }
  state = std::move(out);
  return changed;
}

int64_t freeze_all_but_attention(nn::Module& model, bool train_projections) {
  int64_t frozen = 0;
  for (auto& [name, param] : model.named_parameters()) {
    const size_t attn = name.find(".attn.");
    bool trains = attn != std::string::npos;
    if (trains && !train_projections) {
      const std::string rest = name.substr(attn + 6);
      for (const char* proj : {"q_proj.", "k_proj.", "v_proj.", "out_proj."}) {
        if (rest.rfind(proj, 0) == 0) trains = false;
      }
    }
    if (!trains && param.requires_grad()) {
      Variable(param).set_requires_grad(false);
      ++frozen;
    }
  }
  return frozen;
}

Variable attention_transfer_loss(const models::CausalLm& teacher, const models::CausalLm& student,
                                 const Tensor& tokens, const Tensor& mask,
                                 std::vector<double>* per_block) {
  std::vector<models::TransformerBlock::AttentionIO> io;
  {
    NoGradGuard no_grad;
    teacher.encoder().forward_recording(tokens, io);
  }
  const models::Encoder& s = student.encoder();
  ROTA_CHECK(static_cast<int64_t>(io.size()) == s.num_blocks(),
             "linearize: {} teacher blocks for {} student blocks", io.size(), s.num_blocks());
  const int64_t width = s.options().dim;
  const double count = mask.defined() ? sum(Variable(mask)).item() * static_cast<double>(width)
                                      : static_cast<double>(tokens.numel() * width);
  ROTA_CHECK(count > 0, "linearize: a batch without tokens");
  Variable total;
  if (per_block) per_block->clear();
  for (int64_t i = 0; i < s.num_blocks(); ++i) {
    const Variable input(io[i].input.data());  // the teacher's, as a constant
    const Variable target(io[i].output.data());
    const Variable diff = s.block(i).attention_sublayer(input) - target;  // [B, N, E]
    Variable squared = square(diff);
    if (mask.defined()) {
      // [B, N, 1]: which positions count (all, in training).
      squared = squared * Variable(unsqueeze(Variable(mask.to(diff.dtype())), -1).data());
    }
    const Variable loss = sum(squared) * (1.0 / count);
    if (per_block) per_block->push_back(loss.item());
    total = total.defined() ? total + loss : loss;
  }
  return total * (1.0 / static_cast<double>(s.num_blocks()));
}

}  // namespace rota::app
