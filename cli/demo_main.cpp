// Built-in demo (the main job until `rota train` exists): a small character-level causal
// linear-attention LM with LRPE (Type 2 + learnable Householder) trained on Tiny Shakespeare.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/ops/elementwise.h"
#include "framework/autograd/ops/loss.h"
#include "framework/autograd/ops/matmul.h"
#include "framework/backend/parallel.h"
#include "framework/nn/attention/linear_attention.h"
#include "framework/nn/embedding.h"
#include "framework/nn/feed_forward.h"
#include "framework/nn/norm.h"
#include "framework/optim/adam.h"
#include "framework/optim/clip.h"
#include "framework/optim/schedule.h"

namespace rota {
namespace {

constexpr const char* kDatasetFile = "tinyshakespeare/input.txt";
constexpr const char* kDatasetUrl =
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt";

// Finds the dataset on the search path: $ROTA_DATA, ~/.cache/rota/data, ../shared/data.
std::string find_dataset() {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("ROTA_DATA")) roots.push_back(env);
  if (const char* home = std::getenv("HOME"))
    roots.push_back(std::string(home) + "/.cache/rota/data");
  roots.push_back("../shared/data");
  for (const auto& root : roots) {
    const std::string path = root + "/" + kDatasetFile;
    if (std::filesystem::exists(path)) return path;
  }
  std::string where;
  for (const auto& root : roots) where += "\n  " + root + "/" + kDatasetFile;
  fail(
      "demo: Tiny Shakespeare not found. Looked in:{}\nDownload it with:\n  mkdir -p "
      "~/.cache/rota/data/tinyshakespeare && curl -o "
      "~/.cache/rota/data/tinyshakespeare/input.txt {}",
      where, kDatasetUrl);
}

// Pre-LN block: x + attn(LN(x)), then x + ffn(LN(x)).
class Block : public nn::Module {
 public:
  Block(int64_t dim, int64_t heads, Generator& gen) {
    nn::LinearAttentionOptions a;
    a.dim = dim;
    a.heads = heads;
    a.lrpe = nn::LrpeOptions{};  // Type 2, adjacent pairs, learnable θ and Householder P
    a.init_std = 0.02;
    ln1_ = register_module("ln1", std::make_shared<nn::LayerNorm>(nn::NormOptions{dim}));
    attn_ = register_module("attn", std::make_shared<nn::LinearAttention>(a, gen));
    ln2_ = register_module("ln2", std::make_shared<nn::LayerNorm>(nn::NormOptions{dim}));
    nn::FeedForwardOptions f;
    f.dim = dim;
    f.hidden_dim = 4 * dim;
    f.init_std = 0.02;
    ffn_ = register_module("ffn", std::make_shared<nn::FeedForward>(f, gen, nullptr));
  }
  Variable forward(const Variable& x) const {
    const Variable h = x + attn_->forward(ln1_->forward(x));
    return h + ffn_->forward(ln2_->forward(h));
  }

 private:
  std::shared_ptr<nn::LayerNorm> ln1_, ln2_;
  std::shared_ptr<nn::LinearAttention> attn_;
  std::shared_ptr<nn::FeedForward> ffn_;
};

class CharLm : public nn::Module {
 public:
  CharLm(int64_t vocab, int64_t dim, int64_t heads, int64_t layers, Generator& gen) {
    embed_ = register_module(
        "embed",
        std::make_shared<nn::Embedding>(nn::EmbeddingOptions{vocab, dim, std::nullopt, 0.02}, gen));
    for (int64_t i = 0; i < layers; ++i) {
      blocks_.push_back(
          register_module("block" + std::to_string(i), std::make_shared<Block>(dim, heads, gen)));
    }
    ln_f_ = register_module("ln_f", std::make_shared<nn::LayerNorm>(nn::NormOptions{dim}));
  }
  // ids: [B, T] → logits [B, T, V] through the tied embedding.
  Variable forward(const Tensor& ids) const {
    Variable x = embed_->forward(ids);
    for (const auto& b : blocks_) x = b->forward(x);
    return matmul(ln_f_->forward(x), embed_->weight(), false, true);
  }

 private:
  std::shared_ptr<nn::Embedding> embed_;
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<nn::LayerNorm> ln_f_;
};

int run() {
  const int threads = backend::init_runtime();
  const std::string path = find_dataset();
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::map<char, int64_t> index;
  for (char c : text) index.emplace(c, 0);
  std::vector<char> chars;
  for (auto& [c, i] : index) {
    i = static_cast<int64_t>(chars.size());
    chars.push_back(c);
  }
  std::vector<int64_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) tokens[i] = index[text[i]];
  const int64_t split = static_cast<int64_t>(tokens.size() * 9 / 10);
  fmt::print("demo: {} characters from {} ({} distinct), {} OpenMP threads\n", text.size(), path,
             chars.size(), threads);

  const int64_t vocab = static_cast<int64_t>(chars.size());
  const int64_t batch = 16, seq = 128, steps = 300;
  Generator gen(1234);
  CharLm model(vocab, 128, 4, 2, gen);
  optim::AdamW opt(model.parameters(), optim::AdamOptions{1e-3, 0.01, 0.9, 0.99, 1e-8, true});
  auto schedule = optim::make_schedule({optim::ScheduleName::kCosine, 2e-3, 2e-4, 30, 0.0, steps});
  fmt::print("demo: {} parameters; training {} steps of {}x{} tokens\n", model.num_parameters(),
             steps, batch, seq);

  auto make_batch = [&](int64_t begin, int64_t end, Generator& g, Tensor& x, Tensor& y) {
    x = Tensor::empty({batch, seq}, DType::kI64);
    y = Tensor::empty({batch, seq}, DType::kI64);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t start = begin + static_cast<int64_t>(g.next_below(end - begin - seq - 1));
      for (int64_t t = 0; t < seq; ++t) {
        x.data<int64_t>()[b * seq + t] = tokens[start + t];
        y.data<int64_t>()[b * seq + t] = tokens[start + t + 1];
      }
    }
  };
  Generator data_gen(7);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= steps; ++step) {
    Tensor x, y;
    make_batch(0, split, data_gen, x, y);
    opt.set_lr(schedule->lr(step));
    model.zero_grad();
    const Variable loss = cross_entropy(model.forward(x), y);
    loss.backward();
    const double norm = optim::clip_grad_norm(model.parameters(), 1.0);
    opt.step();
    if (step == 1 || step % 25 == 0) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print("step {:4d}/{} | loss {:.4f} | grad norm {:.3f} | lr {:.2e} | {:.0f} tok/s\n",
                 step, steps, loss.item(), norm, schedule->lr(step),
                 static_cast<double>(step * batch * seq) / secs);
    }
  }
  // Validation loss on held-out text.
  NoGradGuard no_grad;
  model.eval();
  Generator val_gen(99);
  double val = 0;
  for (int i = 0; i < 8; ++i) {
    Tensor x, y;
    make_batch(split, static_cast<int64_t>(tokens.size()), val_gen, x, y);
    val += cross_entropy(model.forward(x), y).item() / 8;
  }
  fmt::print("validation loss {:.4f} nats/char\n", val);
  return 0;
}

}  // namespace
}  // namespace rota

int main() {
  try {
    return rota::run();
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
