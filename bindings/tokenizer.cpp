// verl._C.Tokenizer and verl._C.render_chatml: the C++ tokenizer (verl/tokenizer/tokenizer.h).
// python/verl/tokenizer.py wraps it with transformers-style names and the Jinja chat template.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::bindings {

void register_tokenizer(py::module_& m) {
  using tokenizer::Tokenizer;
  using Release = py::call_guard<py::gil_scoped_release>;
  py::class_<Tokenizer>(m, "Tokenizer", "A Hugging Face tokenizer.json in C++ (same ids as HF tokenizers).")
      .def_static("from_file", &Tokenizer::from_file, py::arg("path"), Release(),
                  "Loads tokenizer.json (a file, or a directory holding it) and tokenizer_config.json beside it.")
      .def_static("from_json", &Tokenizer::from_json, py::arg("tokenizer_json"), py::arg("tokenizer_config_json") = "",
                  Release())
      .def("encode", &Tokenizer::encode, py::arg("text"), py::arg("add_special_tokens") = true, Release())
      .def("encode_batch", &Tokenizer::encode_batch, py::arg("texts"), py::arg("add_special_tokens") = true, Release())
      .def("decode", &Tokenizer::decode, py::arg("ids"), py::arg("skip_special_tokens") = false, Release())
      .def("decode_batch", &Tokenizer::decode_batch, py::arg("ids"), py::arg("skip_special_tokens") = false, Release())
      .def("token_to_id", &Tokenizer::token_to_id, py::arg("token"))
      .def("id_to_token", &Tokenizer::id_to_token, py::arg("id"))
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
