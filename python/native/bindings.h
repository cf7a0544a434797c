// The parts of the rota._native module, each bound by its own file.
#pragma once

#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "data/tokenizer/tokenizer.h"

namespace rota::python {

namespace py = pybind11;

/// rota.Error (every rota::Error) and rota.RecipeError (a bad recipe or override).
void bind_errors(py::module_& m);
/// rota.Tokenizer and rota.load_tokenizer.
void bind_tokenizer(py::module_& m);
/// The tokenizer's ids of the text as numpy int32 [n] (computed without the GIL).
py::array encode_to_numpy(const data::Tokenizer& tokenizer, const std::string& text);
/// rota.Run and rota.load.
void bind_run(py::module_& m);
/// rota.train.
void bind_train(py::module_& m);
/// rota.training_batches and rota.TrainingBatches.
void bind_batches(py::module_& m);

/// Whether a recipe argument is the recipe's text: a str that names no existing file and looks
/// like recipe text (a newline, brace or colon); otherwise it is a file (str or path object).
bool is_recipe_text(const py::object& recipe);
/// A str or path-like object as a path string (os.fspath).
std::string path_text(const py::object& path);

}  // namespace rota::python
