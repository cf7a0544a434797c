// rota.train: `rota train` in-process, with a per-step Python callback and Ctrl-C as in the CLI.
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "app/run/train_run.h"
#include "python/native/bindings.h"

namespace rota::python {

bool is_recipe_text(const py::object& recipe) {
  if (!py::isinstance<py::str>(recipe)) return false;
  const std::string text = recipe.cast<std::string>();
  if (py::module_::import("os.path").attr("isfile")(recipe).cast<bool>()) return false;
  return text.find_first_of("\n{:") != std::string::npos;
}

std::string path_text(const py::object& path) {
  return py::str(py::module_::import("os").attr("fspath")(path)).cast<std::string>();
}

namespace {

py::dict step_info(const train::StepReport& report) {
  py::dict info;
  info["step"] = report.step;
  info["total_steps"] = report.total_steps;
  info["loss"] = report.loss;
  info["lr"] = report.lr;
  info["grad_norm"] = report.grad_norm;
  info["tokens"] = report.tokens;
  info["tokens_seen"] = report.tokens_seen;
  info["step_time_s"] = report.step_seconds;
  info["tokens_per_s"] = report.tokens_per_s;
  if (report.eval) {
    py::dict eval;
    for (const auto& [name, value] : *report.eval) eval[py::str(name)] = value;
    info["eval"] = eval;
  } else {
    info["eval"] = py::none();
  }
  return info;
}

py::object train(const py::object& recipe, const std::vector<std::string>& overrides,
                 const py::object& out, bool resume, const py::object& callback,
                 const py::object& seed) {
  app::TrainRequest request;
  if (is_recipe_text(recipe)) {
    request.recipe_text = recipe.cast<std::string>();
    request.recipe = "recipe.txtpb";  // messages and the default run name (runs/<name>)
  } else {
    request.recipe = path_text(recipe);
  }
  request.overrides = overrides;
  if (!seed.is_none())
    request.overrides.push_back("train.seed=" + py::str(seed).cast<std::string>());
  if (!out.is_none()) {
    request.out = path_text(out);
  }
  request.resume = resume;
  // The callback's exception, kept until the run has stopped cleanly.
  std::optional<py::error_already_set> raised;
  if (!callback.is_none()) {
    request.on_step = [&](const train::StepReport& report) {
      py::gil_scoped_acquire gil;
      try {
        const py::object answer = callback(step_info(report));
        return answer.is_none() || answer.cast<bool>();
      } catch (py::error_already_set& e) {
        raised.emplace(std::move(e));
        return false;
      }
    };
  }
  app::TrainResult result;
  {
    // The trainer installs its SIGINT/SIGTERM handlers for the run, in place of Python's: a
    // Ctrl-C stops at the next step boundary with a checkpoint, as in the CLI.
    py::gil_scoped_release release;
    result = app::train_recipe(request);
  }
  if (raised) throw std::move(*raised);
  if (result.outcome.signal == SIGINT) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
  if (result.outcome.signal != 0) {
    // SIGTERM: the run is saved; now the signal's own action (Python's, usually to exit).
    std::raise(result.outcome.signal);
  }
  return py::module_::import("rota._native").attr("load")(result.run_dir.string());
}

}  // namespace

void bind_train(py::module_& m) {
  m.def(
      "train", &train, py::arg("recipe"), py::arg("overrides") = std::vector<std::string>{},
      py::arg("out") = py::none(), py::arg("resume") = false, py::arg("callback") = py::none(),
      py::arg("seed") = py::none(),
      "Trains a recipe (a file or its text) as `rota train` does and returns the run (rota.Run).");
}

}  // namespace rota::python
