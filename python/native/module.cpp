// The rota._native extension module: Rota's runs, tokenizers and training for Python.
#include <pybind11/pybind11.h>

#include "python/native/bindings.h"

#ifndef ROTA_VERSION
#error "ROTA_VERSION must be defined by the build (python/CMakeLists.txt)"
#endif

PYBIND11_MODULE(_native, m) {
  m.doc() = "Rota's C++ library for Python (import rota rather than this module).";
  m.attr("__version__") = ROTA_VERSION;
  rota::python::bind_errors(m);
  rota::python::bind_tokenizer(m);
  rota::python::bind_run(m);
  rota::python::bind_train(m);
  rota::python::bind_batches(m);
}
