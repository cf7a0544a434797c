// rota.training_batches: a recipe's training batches as `rota train` draws them, as numpy arrays.
#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "app/run/training_batches.h"
#include "python/native/arrays.h"
#include "python/native/bindings.h"

namespace rota::python {
namespace {

using app::TrainingBatches;

// One micro-batch as a dict of the arrays it has: tokens [B, T], targets [B, T] (language
// models), mask [B, T] (masked LM, classifier), labels [B] (classifier), segment_ids [B, T]
// (packed documents), and its epoch.
py::dict batch_dict(const app::TrainingBatch& batch) {
  py::dict out;
  out["tokens"] = to_numpy(batch.tokens);
  if (batch.targets.defined()) out["targets"] = to_numpy(batch.targets);
  if (batch.mask.defined()) out["mask"] = to_numpy(batch.mask);
  if (batch.labels.defined()) out["labels"] = to_numpy(batch.labels);
  if (batch.segment_ids.defined()) out["segment_ids"] = to_numpy(batch.segment_ids);
  out["epoch"] = batch.epoch;
  return out;
}

std::unique_ptr<TrainingBatches> training_batches(const py::object& recipe,
                                                  const std::vector<std::string>& overrides,
                                                  const py::object& resume_from) {
  app::TrainingBatchesRequest request;
  if (is_recipe_text(recipe)) {
    request.recipe_text = recipe.cast<std::string>();
    request.recipe = "recipe.txtpb";
  } else {
    request.recipe = path_text(recipe);
  }
  request.overrides = overrides;
  if (!resume_from.is_none()) request.resume_from = path_text(resume_from);
  py::gil_scoped_release release;
  return std::make_unique<TrainingBatches>(request);
}

}  // namespace

void bind_batches(py::module_& m) {
  py::class_<TrainingBatches>(m, "TrainingBatches",
                              "A recipe's training micro-batches in `rota train`'s order; "
                              "iterate for dicts of numpy arrays.")
      .def("__iter__", [](TrainingBatches& self) -> TrainingBatches& { return self; })
      .def("__next__",
           [](TrainingBatches& self) {
             if (self.done()) throw py::stop_iteration();
             app::TrainingBatch batch;
             {
               py::gil_scoped_release release;
               batch = self.next();
             }
             return batch_dict(batch);
           })
      .def("__len__", [](const TrainingBatches& self) { return self.total() - self.drawn(); })
      .def_property_readonly("total", &TrainingBatches::total,
                             "Micro-batches of the whole run (steps x gradient_accumulation).")
      .def_property_readonly("drawn", &TrainingBatches::drawn,
                             "Micro-batches drawn so far, those before a resume included.")
      .def_property_readonly("micro_batches_per_step", &TrainingBatches::micro_batches_per_step)
      .def(
          "state",
          [](const TrainingBatches& self) {
            const app::TrainingBatchesState state = self.state();
            py::dict out;
            out["micro_batches"] = state.micro_batches;
            out["cursor"] = py::bytes(state.cursor);
            return out;
          },
          "Where the iterator stands: a dict to pass to load_state later (picklable).")
      .def(
          "load_state",
          [](TrainingBatches& self, const py::dict& state) {
            app::TrainingBatchesState restored;
            restored.micro_batches = state["micro_batches"].cast<int64_t>();
            restored.cursor = state["cursor"].cast<std::string>();
            self.restore(restored);
          },
          py::arg("state"), "Continues from a state() of an iterator over the same recipe.");
  m.def("training_batches", &training_batches, py::arg("recipe"),
        py::arg("overrides") = std::vector<std::string>{}, py::arg("resume_from") = py::none(),
        "The training micro-batches of a recipe (a file or its text) in the order `rota train` "
        "draws them; resume_from (a run or checkpoint directory) continues its data cursor.");
}

}  // namespace rota::python
