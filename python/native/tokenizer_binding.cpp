// rota.Tokenizer (encode, decode, vocabulary lookups) and rota.load_tokenizer.
#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "data/tokenizer/open_tokenizer.h"
#include "python/native/arrays.h"
#include "python/native/bindings.h"
#include "python/native/tokenizer_handle.h"

namespace rota::python {

py::array encode_to_numpy(const data::Tokenizer& tokenizer, const std::string& text) {
  std::vector<int64_t> ids;
  {
    py::gil_scoped_release release;
    ids = tokenizer.encode(text);
  }
  return int32_ids(ids);
}

void bind_tokenizer(py::module_& m) {
  py::class_<TokenizerHandle, std::shared_ptr<TokenizerHandle>>(
      m, "Tokenizer", "A Rota tokenizer: text <-> token ids.")
      .def(
          "encode",
          [](const TokenizerHandle& h, const std::string& text) {
            return encode_to_numpy(h.tokenizer(), text);
          },
          py::arg("text"), "Token ids of the text: numpy int32 [n].")
      .def(
          "decode",
          [](const TokenizerHandle& h, const py::object& ids) {
            const std::vector<int64_t> values = id_vector_from_array(ids, "ids");
            return to_str(h.tokenizer().decode(values));
          },
          py::arg("ids"),
          "Text of a sequence of ids (any integer array or list); bytes that are not UTF-8 "
          "become U+FFFD.")
      .def_property_readonly("vocab_size",
                             [](const TokenizerHandle& h) { return h.tokenizer().vocab_size(); })
      .def_property_readonly("kind", [](const TokenizerHandle& h) { return h.tokenizer().kind(); })
      .def("token_to_id", &TokenizerHandle::token_to_id, py::arg("token"),
           "The id whose text (id_to_token) is `token`, or None.")
      .def(
          "id_to_token",
          [](const TokenizerHandle& h, int64_t id) { return to_str(h.tokenizer().token_text(id)); },
          py::arg("id"), "The text of one token (a byte is shown as its character or <0xNN>).")
      .def(
          "save", [](const TokenizerHandle& h, const std::string& dir) { h.tokenizer().save(dir); },
          py::arg("dir"),
          "Writes the tokenizer into a directory (rota.load_tokenizer reads it back).")
      .def("__repr__", [](const TokenizerHandle& h) {
        return "<rota.Tokenizer kind=" + h.tokenizer().kind() +
               " vocab_size=" + std::to_string(h.tokenizer().vocab_size()) + ">";
      });

  m.def(
      "load_tokenizer",
      [](const std::string& path) {
        std::shared_ptr<const data::Tokenizer> tokenizer = data::open_tokenizer(path);
        return std::make_shared<TokenizerHandle>(std::move(tokenizer));
      },
      py::arg("path"),
      "Opens a tokenizer file or directory: a Rota tokenizer directory or tokenizer.json, a "
      "Hugging Face tokenizer.json (or a directory holding one), a SentencePiece .model.");
}

}  // namespace rota::python
