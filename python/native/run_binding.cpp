// rota.Run (a trained run: logits, gradients, generation, evaluation) and rota.load.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "data/dataset/batch.h"
#include "python/native/arrays.h"
#include "python/native/bindings.h"
#include "python/native/loaded_run.h"
#include "python/native/tokenizer_handle.h"

namespace rota::python {
namespace {

// What Python holds: the run, and its tokenizer as a rota.Tokenizer (sharing the run).
struct RunHandle {
  std::shared_ptr<LoadedRun> run;
  std::shared_ptr<TokenizerHandle> tokenizer;
};

std::shared_ptr<RunHandle> load(const std::string& path) {
  std::shared_ptr<LoadedRun> run;
  {
    py::gil_scoped_release release;
    run = std::make_shared<LoadedRun>(path);
  }
  // The tokenizer lives in the run: the aliasing pointer keeps the run alive.
  std::shared_ptr<const data::Tokenizer> tokenizer(run, &run->tokenizer());
  return std::make_shared<RunHandle>(RunHandle{run, std::make_shared<TokenizerHandle>(tokenizer)});
}

Tensor optional_ids(const py::object& object, const char* name) {
  return object.is_none() ? Tensor() : ids_from_array(object, name);
}
Tensor optional_mask(const py::object& object, const char* name) {
  return object.is_none() ? Tensor() : mask_from_array(object, name);
}

// The prompt's ids: a string encoded as `rota generate` encodes --prompt, or ids as given.
std::vector<int64_t> prompt_ids(const LoadedRun& run, const py::object& prompt) {
  if (py::isinstance<py::str>(prompt)) return run.prompt_ids(prompt.cast<std::string>());
  return id_vector_from_array(prompt, "prompt");
}

// A list or tuple of prompts (each a string or ids), as opposed to one prompt given as ids.
bool is_prompt_list(const py::object& prompt) {
  if (!py::isinstance<py::list>(prompt) && !py::isinstance<py::tuple>(prompt)) return false;
  const py::sequence items = prompt.cast<py::sequence>();
  if (items.size() == 0) return false;
  for (const py::handle item : items) {
    if (!py::isinstance<py::str>(item) && !py::isinstance<py::list>(item) &&
        !py::isinstance<py::tuple>(item) && !py::isinstance<py::array>(item)) {
      return false;
    }
  }
  return true;
}

// stop=None, a string or a list of strings.
std::vector<std::string> stop_strings(const py::object& stop) {
  if (stop.is_none()) return {};
  if (py::isinstance<py::str>(stop)) return {stop.cast<std::string>()};
  return stop.cast<std::vector<std::string>>();
}

struct Generated {
  std::vector<app::GeneratedText> rows;
  bool several_prompts = false;
  int64_t samples = 1;
};

Generated generate_rows(LoadedRun& run, const py::object& prompt, int64_t max_tokens,
                        double temperature, int64_t top_k, uint64_t seed, double top_p,
                        double repetition_penalty, const py::object& stop, bool stop_at_eos,
                        int64_t num_samples) {
  Generated out;
  std::vector<std::vector<int64_t>> prompts;
  out.several_prompts = is_prompt_list(prompt);
  if (out.several_prompts) {
    for (const py::handle item : prompt.cast<py::sequence>()) {
      prompts.push_back(prompt_ids(run, py::reinterpret_borrow<py::object>(item)));
    }
  } else {
    prompts.push_back(prompt_ids(run, prompt));
  }
  app::TextGenerationOptions options;
  options.sampling.tokens = max_tokens;
  options.sampling.temperature = temperature;
  options.sampling.top_k = top_k;
  options.sampling.top_p = top_p;
  options.sampling.repetition_penalty = repetition_penalty;
  options.sampling.seed = seed;
  options.samples = num_samples;
  options.stops = stop_strings(stop);
  options.stop_at_eos = stop_at_eos;
  out.samples = num_samples;
  py::gil_scoped_release release;
  out.rows = run.generate(prompts, options);
  return out;
}

// One value per row, shaped as the call asked: one prompt and one sample give the value itself;
// several samples a list of them; several prompts a list with an entry per prompt.
py::object shaped(const Generated& generated, const std::function<py::object(size_t)>& value) {
  auto per_prompt = [&](size_t p) -> py::object {
    if (generated.samples == 1) return value(p);
    py::list samples;
    for (int64_t s = 0; s < generated.samples; ++s)
      samples.append(value(p * generated.samples + s));
    return samples;
  };
  const size_t prompts = generated.rows.size() / static_cast<size_t>(generated.samples);
  if (!generated.several_prompts) return per_prompt(0);
  py::list out;
  for (size_t p = 0; p < prompts; ++p) out.append(per_prompt(p));
  return out;
}

// Counts (tokens, examples, masked_tokens) as ints, the other metrics as floats.
py::dict metrics_dict(const train::Metrics& metrics) {
  py::dict out;
  for (const auto& [name, value] : metrics) {
    if (name == "tokens" || name == "examples" || name == "masked_tokens") {
      out[py::str(name)] = static_cast<int64_t>(value);
    } else {
      out[py::str(name)] = value;
    }
  }
  return out;
}

int64_t optional_count(const py::object& object) {
  return object.is_none() ? 0 : object.cast<int64_t>();
}

}  // namespace

void bind_run(py::module_& m) {
  m.attr("IGNORE_INDEX") = data::kIgnoreIndex;
  py::class_<RunHandle, std::shared_ptr<RunHandle>>(
      m, "Run", "A trained run (or one checkpoint of it), loaded as `rota eval` loads it.")
      .def_property_readonly("path", [](const RunHandle& h) { return h.run->run_dir().string(); })
      .def_property_readonly("checkpoint",
                             [](const RunHandle& h) { return h.run->checkpoint_dir().string(); })
      .def_property_readonly("step", [](const RunHandle& h) { return h.run->step(); })
      .def_property_readonly("recipe_text", [](const RunHandle& h) { return h.run->recipe_text(); })
      .def_property_readonly("kind", [](const RunHandle& h) { return h.run->kind(); })
      .def_property_readonly("vocab_size", [](const RunHandle& h) { return h.run->vocab_size(); })
      .def_property_readonly("labels", [](const RunHandle& h) { return h.run->labels(); })
      .def_property_readonly("num_parameters",
                             [](const RunHandle& h) { return h.run->num_parameters(); })
      .def_property_readonly("tokenizer", [](const RunHandle& h) { return h.tokenizer; })
      .def(
          "state_dict",
          [](RunHandle& h) {
            std::vector<std::pair<std::string, Tensor>> state;
            {
              py::gil_scoped_release release;
              state = h.run->state_dict();
            }
            py::dict out;
            for (const auto& [name, tensor] : state) out[py::str(name)] = to_numpy(tensor);
            return out;
          },
          "Copies of the parameters and buffers, name → numpy array (checkpoint names).")
      .def(
          "logits",
          [](RunHandle& h, const py::object& ids, const py::object& key_mask) {
            const Tensor id_tensor = ids_from_array(ids, "ids");
            const Tensor mask = optional_mask(key_mask, "key_mask");
            Tensor logits;
            {
              py::gil_scoped_release release;
              logits = h.run->logits(id_tensor, mask);
            }
            return to_numpy(logits);
          },
          py::arg("ids"), py::arg("key_mask") = py::none(),
          "Eval-mode logits, float32 [B, N, V] (LMs) or [B, C] (classifiers).")
      .def(
          "loss_and_grads",
          [](RunHandle& h, const py::object& ids, const py::object& targets,
             const py::object& key_mask, const py::object& labels) {
            const Tensor id_tensor = ids_from_array(ids, "ids");
            const Tensor target_tensor = optional_ids(targets, "targets");
            const Tensor mask = optional_mask(key_mask, "key_mask");
            const Tensor label_tensor =
                labels.is_none() ? Tensor() : int_tensor_from_array(labels, "labels");
            LossAndGrads result;
            {
              py::gil_scoped_release release;
              result = h.run->loss_and_grads(id_tensor, target_tensor, mask, label_tensor);
            }
            py::dict grads;
            for (const auto& [name, grad] : result.grads) grads[py::str(name)] = to_numpy(grad);
            return py::make_tuple(result.loss, grads);
          },
          py::arg("ids"), py::arg("targets") = py::none(), py::arg("key_mask") = py::none(),
          py::arg("labels") = py::none(),
          "The training loss of one batch (no dropout, no update) and its gradients.")
      .def(
          "encode",
          [](const RunHandle& h, const std::string& text) {
            return encode_to_numpy(h.run->tokenizer(), text);
          },
          py::arg("text"), "The run's tokenizer's ids of the text: numpy int32 [n].")
      .def(
          "decode",
          [](const RunHandle& h, const py::object& ids) {
            return to_str(h.run->tokenizer().decode(id_vector_from_array(ids, "ids")));
          },
          py::arg("ids"), "Text of a sequence of ids.")
      .def(
          "generate_ids",
          [](RunHandle& h, const py::object& prompt, int64_t max_tokens, double temperature,
             int64_t top_k, uint64_t seed, double top_p, double repetition_penalty,
             const py::object& stop, bool stop_at_eos, int64_t num_samples) {
            const Generated generated =
                generate_rows(*h.run, prompt, max_tokens, temperature, top_k, seed, top_p,
                              repetition_penalty, stop, stop_at_eos, num_samples);
            return shaped(generated, [&](size_t row) -> py::object {
              return to_numpy(std::vector<int64_t>(generated.rows[row].ids));
            });
          },
          py::arg("prompt"), py::arg("max_tokens") = 50, py::arg("temperature") = 1.0,
          py::arg("top_k") = 0, py::arg("seed") = 0, py::kw_only(), py::arg("top_p") = 1.0,
          py::arg("repetition_penalty") = 1.0, py::arg("stop") = py::none(),
          py::arg("stop_at_eos") = false, py::arg("num_samples") = 1,
          "The ids sampled after the prompt (a string or ids), as `rota generate` samples them; "
          "a list of prompts gives a list, num_samples > 1 a list per prompt.")
      .def(
          "generate",
          [](RunHandle& h, const py::object& prompt, int64_t max_tokens, double temperature,
             int64_t top_k, uint64_t seed, double top_p, double repetition_penalty,
             const py::object& stop, bool stop_at_eos, int64_t num_samples) {
            const Generated generated =
                generate_rows(*h.run, prompt, max_tokens, temperature, top_k, seed, top_p,
                              repetition_penalty, stop, stop_at_eos, num_samples);
            return shaped(generated, [&](size_t row) -> py::object {
              return to_str(generated.rows[row].text);
            });
          },
          py::arg("prompt"), py::arg("max_tokens") = 50, py::arg("temperature") = 1.0,
          py::arg("top_k") = 0, py::arg("seed") = 0, py::kw_only(), py::arg("top_p") = 1.0,
          py::arg("repetition_penalty") = 1.0, py::arg("stop") = py::none(),
          py::arg("stop_at_eos") = false, py::arg("num_samples") = 1,
          "What `rota generate` prints (without its final newline): the prompt and its "
          "continuation, cut before a stop string; bytes that are not UTF-8 become U+FFFD. A list "
          "of prompts (strings or ids) gives a list, one entry per prompt, decoded as one batch; "
          "num_samples > 1 makes each entry a list of that many samples.")
      .def(
          "eval",
          [](RunHandle& h, const std::string& requested, const py::object& context,
             const py::object& batches) {
            train::Metrics metrics;
            const int64_t context_length = optional_count(context);
            const int64_t max_batches = optional_count(batches);
            std::string split;
            {
              py::gil_scoped_release release;
              split = h.run->evaluation_split(requested);
              metrics = h.run->evaluate(split, context_length, max_batches);
            }
            py::dict out = metrics_dict(metrics);
            out["split"] = split;
            out["parameters"] = h.run->num_parameters();
            return out;
          },
          py::arg("split") = "test", py::arg("context") = py::none(),
          py::arg("batches") = py::none(), "The metrics `rota eval` reports for a split.")
      .def(
          "eval_batches",
          [](RunHandle& h, const std::string& requested, const py::object& batches) {
            std::vector<app::EvalBatch> found;
            const int64_t max_batches = optional_count(batches);
            {
              py::gil_scoped_release release;
              found = h.run->evaluation_batches(h.run->evaluation_split(requested), max_batches);
            }
            py::list out;
            for (const app::EvalBatch& batch : found) {
              py::dict d;
              d["ids"] = to_numpy(batch.tokens);
              if (batch.targets.defined()) d["targets"] = to_numpy(batch.targets);
              if (batch.mask.defined()) d["key_mask"] = to_numpy(batch.mask);
              if (batch.labels.defined()) d["labels"] = to_numpy(batch.labels);
              out.append(d);
            }
            return out;
          },
          py::arg("split") = "test", py::arg("batches") = py::none(),
          "The batches `rota eval` feeds the model, in order, as dicts of numpy arrays.")
      .def("__repr__", [](const RunHandle& h) {
        return "<rota.Run " + h.run->kind() + " " + h.run->checkpoint_dir().string() + ">";
      });

  m.def("load", &load, py::arg("path"),
        "Opens a run directory (its latest checkpoint) or a checkpoint directory.");
}

}  // namespace rota::python
