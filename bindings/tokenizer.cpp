// verl._C.Tokenizer and verl._C.render_chatml: the C++ tokenizer (verl/tokenizer/tokenizer.h).
// python/verl/tokenizer.py wraps it with transformers-style names and the Jinja chat template.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "json_cast.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::bindings {
namespace {

// A Python int as a token id: one outside int32 names no token, like any other unknown id
// (decode skips it, id_to_token gives None), instead of failing pybind's int32 conversion with
// "incompatible function arguments". A non-integer still raises TypeError.
std::int32_t id_from_python(py::handle value) {
  const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));  // int, numpy int, bool
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long id = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (id == -1 && PyErr_Occurred()) throw py::error_already_set();
  const bool fits = overflow == 0 && id >= std::numeric_limits<std::int32_t>::min() &&
                    id <= std::numeric_limits<std::int32_t>::max();
  return fits ? static_cast<std::int32_t>(id) : -1;
}

std::vector<std::int32_t> ids_from_python(py::handle ids) {
  std::vector<std::int32_t> out;
  if (PySequence_Check(ids.ptr())) out.reserve(static_cast<std::size_t>(std::max<Py_ssize_t>(0, py::len(ids))));
  for (const py::handle item : py::iter(ids)) out.push_back(id_from_python(item));
  return out;
}

// A str (its UTF-8, or InvalidArgument naming `where` for a lone surrogate) or bytes (as they are); anything else is
// the TypeError pybind gives for a wrong argument type.
std::string text_argument(py::handle text, const std::string& where) {
  if (py::isinstance<py::str>(text)) return utf8_text(text, where);
  if (py::isinstance<py::bytes>(text)) return py::reinterpret_borrow<py::bytes>(text).cast<std::string>();
  throw py::type_error(where + " must be str or bytes, got " + std::string(py::str(py::type::of(text).attr("__name__"))));
}

}  // namespace

void register_tokenizer(py::module_& m) {
  using tokenizer::Tokenizer;
  using Release = py::call_guard<py::gil_scoped_release>;
  py::class_<Tokenizer>(m, "Tokenizer", "A Hugging Face tokenizer.json in C++ (same ids as HF tokenizers).")
      .def_static("from_file", &Tokenizer::from_file, py::arg("path"), Release(),
                  "Loads tokenizer.json (a file, or a directory holding it) and tokenizer_config.json beside it.")
      .def_static("from_json", &Tokenizer::from_json, py::arg("tokenizer_json"), py::arg("tokenizer_config_json") = "",
                  Release())
      // Text is converted here rather than by pybind, whose UnicodeEncodeError for a lone surrogate ("\ud800", a
      // surrogate-escaped byte) named neither the call nor the item. bytes pass as they are (encode checks UTF-8).
      .def(
          "encode",
          [](const Tokenizer& t, py::handle text, bool add_special_tokens) {
            const std::string utf8 = text_argument(text, "Tokenizer.encode: text");
            py::gil_scoped_release release;
            return t.encode(utf8, add_special_tokens);
          },
          py::arg("text"), py::arg("add_special_tokens") = true)
      .def(
          "encode_batch",
          [](const Tokenizer& t, const std::vector<py::handle>& texts, bool add_special_tokens) {
            std::vector<std::string> utf8;
            utf8.reserve(texts.size());
            for (std::size_t i = 0; i < texts.size(); ++i) {
              utf8.push_back(text_argument(texts[i], "Tokenizer.encode_batch: texts[" + std::to_string(i) + "]"));
            }
            py::gil_scoped_release release;
            return t.encode_batch(utf8, add_special_tokens);
          },
          py::arg("texts"), py::arg("add_special_tokens") = true)
      // Ids are read under the GIL, then decoded without it.
      .def(
          "decode",
          [](const Tokenizer& t, py::handle ids, bool skip_special_tokens) {
            const std::vector<std::int32_t> list = ids_from_python(ids);
            py::gil_scoped_release release;
            return t.decode(list, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def(
          "decode_batch",
          [](const Tokenizer& t, py::handle rows, bool skip_special_tokens) {
            std::vector<std::vector<std::int32_t>> lists;
            for (const py::handle row : py::iter(rows)) lists.push_back(ids_from_python(row));
            py::gil_scoped_release release;
            return t.decode_batch(lists, skip_special_tokens);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = false)
      .def("token_to_id", &Tokenizer::token_to_id, py::arg("token"))
      .def(
          "id_to_token", [](const Tokenizer& t, py::handle id) { return t.id_to_token(id_from_python(id)); },
          py::arg("id"))
      .def("vocab_size", &Tokenizer::vocab_size, py::arg("with_added_tokens") = true)
      .def("added_tokens",
           [](const Tokenizer& t) {
             py::list out;
             for (const auto& a : t.added_tokens()) {
               out.append(py::dict(py::arg("id") = a.id, py::arg("content") = a.content, py::arg("single_word") = a.single_word,
                                   py::arg("lstrip") = a.lstrip, py::arg("rstrip") = a.rstrip,
                                   py::arg("normalized") = a.normalized, py::arg("special") = a.special));
             }
             return out;
           })
      .def("special_tokens_map", &Tokenizer::special_tokens_map)
      .def("special_token", &Tokenizer::special_token, py::arg("name"))
      .def_property_readonly("bos_token_id", &Tokenizer::bos_token_id)
      .def_property_readonly("eos_token_id", &Tokenizer::eos_token_id)
      .def_property_readonly("pad_token_id", &Tokenizer::pad_token_id)
      .def("chat_templates", &Tokenizer::chat_templates);

  m.def("render_chatml",
        [](const std::vector<std::pair<std::string, std::string>>& messages, bool add_generation_prompt) {
          std::vector<tokenizer::ChatMessage> chat;
          chat.reserve(messages.size());
          for (const auto& [role, content] : messages) chat.push_back(tokenizer::ChatMessage{role, content});
          return tokenizer::render_chatml(chat, add_generation_prompt);
        },
        py::arg("messages"), py::arg("add_generation_prompt") = false,
        "ChatML as Qwen writes it, from (role, content) pairs.");
}

}  // namespace verl::bindings
