// Tensor <-> numpy conversions (see arrays.h).
#include "python/native/arrays.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "framework/base/error.h"

namespace rota::python {
namespace {

// pybind11 2.10 (Debian 12's) reads a dtype's item size and kind from numpy 1's struct layout,
// which numpy 2 changed: there it reads a wrong item size, and every array it shapes itself
// (strides left empty) gets strides of 0. So this file asks the dtype object for both and gives
// every array it makes its strides.

py::ssize_t item_size(const py::dtype& dtype) {
  return dtype.attr("itemsize").cast<py::ssize_t>();
}

char kind_of(const py::dtype& dtype) {
  return dtype.attr("kind").cast<std::string>().at(0);
}

// Byte strides of a C-contiguous array of `shape` with items of `item` bytes.
std::vector<py::ssize_t> c_strides(const std::vector<py::ssize_t>& shape, py::ssize_t item) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = item;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

// The numpy dtype of a tensor dtype numpy can hold as is.
py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return py::dtype::of<float>();
    case DType::kF64:
      return py::dtype::of<double>();
    case DType::kI32:
      return py::dtype::of<int32_t>();
    case DType::kI64:
      return py::dtype::of<int64_t>();
    default:
      fail("to_numpy: no numpy dtype for {}", dtype_name(dtype));
  }
}

// The array as a C-contiguous array (a copy only when it is not one already).
py::array contiguous_array(const py::handle& object, const char* name) {
  if (py::isinstance<py::str>(object) || py::isinstance<py::bytes>(object)) {
    throw py::type_error(std::string(name) + ": expected an array or a list of numbers, not text");
  }
  py::array array = py::array::ensure(object, py::array::c_style);
  if (!array) {
    PyErr_Clear();
    throw py::type_error(std::string(name) + ": expected an array or a list of numbers");
  }
  return array;
}

// Copies `count` integers of the array's dtype into `out`.
template <typename T>
void copy_integers(const py::array& array, int64_t* out, int64_t count) {
  const T* in = static_cast<const T*>(array.data());
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int64_t>(in[i]);
}

void copy_any_integers(const py::array& array, int64_t* out, const char* name) {
  const int64_t n = static_cast<int64_t>(array.size());
  if (n == 0) return;  // [] is float64 to numpy
  const char kind = kind_of(array.dtype());
  if (kind != 'i' && kind != 'u') {
    throw py::type_error(std::string(name) + ": expected integers, got an array of dtype " +
                         std::string(py::str(array.dtype())));
  }
  switch (item_size(array.dtype()) * (kind == 'u' ? -1 : 1)) {
    case 1:
      return copy_integers<int8_t>(array, out, n);
    case 2:
      return copy_integers<int16_t>(array, out, n);
    case 4:
      return copy_integers<int32_t>(array, out, n);
    case 8:
      return copy_integers<int64_t>(array, out, n);
    case -1:
      return copy_integers<uint8_t>(array, out, n);
    case -2:
      return copy_integers<uint16_t>(array, out, n);
    case -4:
      return copy_integers<uint32_t>(array, out, n);
    case -8:
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t v = static_cast<const uint64_t*>(array.data())[i];
        ROTA_CHECK(v <= static_cast<uint64_t>(INT64_MAX), "{}: id {} is too large", name, v);
        out[i] = static_cast<int64_t>(v);
      }
      return;
    default:
      throw py::type_error(std::string(name) + ": unsupported integer dtype");
  }
}

Shape shape_of(const py::array& array) {
  Shape shape;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) shape.push_back(array.shape(d));
  return shape;
}

}  // namespace

py::array to_numpy(const Tensor& tensor) {
  Tensor t = tensor.dtype() == DType::kBF16 ? tensor.to(DType::kF32) : tensor;
  t = t.contiguous();
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  // The capsule owns a Tensor sharing the storage: the array keeps the buffer alive.
  auto* owner = new Tensor(t);
  py::capsule capsule(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  const py::dtype dtype = numpy_dtype(t.dtype());
  return py::array(dtype, shape, c_strides(shape, item_size(dtype)), owner->raw_data(), capsule);
}

py::array to_numpy(std::vector<int64_t>&& values) {
  auto* owner = new std::vector<int64_t>(std::move(values));
  py::capsule capsule(owner, [](void* p) { delete static_cast<std::vector<int64_t>*>(p); });
  return py::array_t<int64_t>({static_cast<py::ssize_t>(owner->size())},
                              {static_cast<py::ssize_t>(sizeof(int64_t))}, owner->data(), capsule);
}

py::str to_str(const std::string& text) {
  PyObject* decoded =
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

py::array int32_ids(const std::vector<int64_t>& ids) {
  py::array_t<int32_t> out({static_cast<py::ssize_t>(ids.size())},
                           {static_cast<py::ssize_t>(sizeof(int32_t))});
  int32_t* data = out.mutable_data();
  for (size_t i = 0; i < ids.size(); ++i) data[i] = static_cast<int32_t>(ids[i]);
  return out;
}

Tensor int_tensor_from_array(const py::handle& object, const char* name) {
  const py::array array = contiguous_array(object, name);
  Tensor out = Tensor::empty(shape_of(array), DType::kI64);
  copy_any_integers(array, out.data<int64_t>(), name);
  return out;
}

Tensor ids_from_array(const py::handle& object, const char* name) {
  Tensor ids = int_tensor_from_array(object, name);
  if (ids.dim() == 1) ids = ids.view({1, ids.shape()[0]});
  ROTA_CHECK(ids.dim() == 2, "{}: expected [N] or [B, N] ids, got {} dimensions", name, ids.dim());
  ROTA_CHECK(ids.numel() > 0, "{}: no ids", name);
  return ids;
}

Tensor mask_from_array(const py::handle& object, const char* name) {
  const py::array array = contiguous_array(object, name);
  const char kind = kind_of(array.dtype());
  if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f') {
    throw py::type_error(std::string(name) + ": expected numbers, got an array of dtype " +
                         std::string(py::str(array.dtype())));
  }
  const auto floats = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
  Tensor out = Tensor::empty(shape_of(array), DType::kF32);
  std::memcpy(out.data<float>(), floats.data(), out.nbytes());
  return out;
}

std::vector<int64_t> id_vector_from_array(const py::handle& object, const char* name) {
  const py::array array = contiguous_array(object, name);
  ROTA_CHECK(array.ndim() == 1, "{}: expected a list of ids ([N]), got {} dimensions", name,
             array.ndim());
  std::vector<int64_t> ids(static_cast<size_t>(array.size()));
  copy_any_integers(array, ids.data(), name);
  return ids;
}

}  // namespace rota::python
