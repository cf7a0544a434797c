// Tensors <-> numpy arrays for the bindings: zero-copy results, one-copy id and mask inputs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "framework/tensor/tensor.h"

namespace rota::python {

namespace py = pybind11;

/// A numpy array over the tensor's buffer, without copying when the tensor is contiguous and
/// f32, f64, i32 or i64 (the array owns a reference to the storage through a capsule); other
/// tensors are made contiguous (bf16 converted to f32) first.
py::array to_numpy(const Tensor& tensor);

/// A numpy array that takes over the vector's buffer (no copy).
py::array to_numpy(std::vector<int64_t>&& values);

/// Text as a Python str; bytes that are not UTF-8 (a byte-level tokenizer's partial characters)
/// become U+FFFD, as bytes.decode("utf-8", "replace") does.
py::str to_str(const std::string& text);

/// Token ids as numpy int32 [n] (Rota's vocabularies are far below 2^31).
py::array int32_ids(const std::vector<int64_t>& ids);

/// Token ids: any integer numpy array (or nested list) of rank 1 ([N], taken as [1, N]) or 2
/// ([B, N]), copied once into an i64 tensor of shape [B, N]. `name` names the argument in errors.
Tensor ids_from_array(const py::handle& object, const char* name);

/// Integer values of any rank (e.g. labels [B]) as an i64 tensor of the same shape.
Tensor int_tensor_from_array(const py::handle& object, const char* name);

/// A 0/1 mask of any numeric or bool dtype as an f32 tensor of the same shape.
Tensor mask_from_array(const py::handle& object, const char* name);

/// Ids of a rank-1 integer array or list as a vector.
std::vector<int64_t> id_vector_from_array(const py::handle& object, const char* name);

}  // namespace rota::python
