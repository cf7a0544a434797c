// Linearisation's attention transfer (recipe section `linearize`): the teacher, what trains, the
// loss.
#pragma once

#include <memory>
#include <vector>

#include "framework/autograd/variable.h"
#include "framework/nn/module.h"
#include "framework/tensor/state_dict.h"
#include "models/language_models.h"
#include "recipes/recipe.pb.h"

namespace rota::app {

/// The model options of a `linearize` recipe's teacher (read from its checkpoint's recipe, with
/// `vocab_size` token ids, no dropout), without loading its weights: for the memory check.
models::ModelOptions attention_teacher_options(const recipes::Recipe& recipe, int64_t vocab_size);

/// The teacher of a `linearize` recipe: the causal LM finetune.init_from names, built from its
/// own recipe with `vocab_size` token ids, its weights loaded strictly, frozen, in eval mode.
/// Refuses, naming the checkpoint, a teacher that is not a causal LM with softmax attention in
/// every block, or whose width or depth differs from `student`'s.
std::shared_ptr<models::CausalLm> load_attention_teacher(const recipes::Recipe& recipe,
                                                         int64_t vocab_size,
                                                         const models::CausalLm& student);

/// A grouped-query teacher's key and value projections as a linear attention needs them:
/// "<block>.attn.{k,v}_proj.{weight,bias}" [H_kv·D, …] → [H·D, …], kv head ⌊h·H_kv/H⌋ repeated for
/// query head h (what grouped-query attention computes). Returns the names it changed; nothing
/// when kv_heads is 0 or equals heads.
std::vector<std::string> expand_grouped_kv(StateDict& state, int64_t heads, int64_t kv_heads,
                                           int64_t head_dim);

/// Attention transfer without low-rank adapters: freezes every parameter outside the blocks'
/// attention (names without ".attn."), and with train_projections false also the attention's
/// q/k/v/out projections. Name-based, so a resumed run freezes the same set. Returns how many
/// tensors it froze.
int64_t freeze_all_but_attention(nn::Module& model, bool train_projections);

/// The transfer loss of a batch: the teacher runs on `tokens` [B, N] (no gradient); each
/// student block's attention gets the input the teacher's attention saw in that block, and
/// loss_l = Σ mask · (student_l − teacher_l)² / (Σ mask · E) over [B, N, E] (mask [B, N], 1 at
/// real tokens; undefined: all). Returns the mean over blocks (a scalar with the student's graph)
/// and, in `per_block`, each block's loss.
Variable attention_transfer_loss(const models::CausalLm& teacher, const models::CausalLm& student,
                                 const Tensor& tokens, const Tensor& mask,
                                 std::vector<double>* per_block = nullptr);

}  // namespace rota::app
