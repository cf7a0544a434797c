// Rota's C++ exceptions as Python exceptions: rota.Error and its subclass rota.RecipeError.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "app/run/error_text.h"
#include "framework/base/error.h"

#include "python/native/bindings.h"
#include "recipes/recipe_error.h"

namespace rota::python {

void bind_errors(py::module_& m) {
  // The exception objects live as long as the module (pybind11's own pattern for them).
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<recipes::RecipeError> recipe_error(m, "RecipeError", error.ptr());
  error.attr("__doc__") = "A failure reported by Rota (its C++ rota::Error), with Rota's message.";
  recipe_error.attr("__doc__") = "A mistake in a recipe or an override (the CLI's exit code 2).";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const recipes::RecipeError& e) {
      PyErr_SetString(recipe_error.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    } catch (const std::filesystem::filesystem_error& e) {
      // A library's failure that reached Python unannotated, in Rota's words.
      PyErr_SetString(error.ptr(), app::error_text(e).c_str());
    } catch (const nlohmann::json::exception& e) {
      PyErr_SetString(error.ptr(), app::error_text(e).c_str());
    }
  });
}

}  // namespace rota::python
