// verl::tokenizer::Tokenizer on hostile input (issue 21: bugs 6, 9, 11, 12 and the escaping of
// untrusted text): every bad tokenizer.json ends in a typed verl error that names the file and
// the field, never nlohmann's own exception, a stack overflow or a huge allocation; encode/decode
// of arbitrary bytes and ids give typed errors or well-defined results.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/remove_tree.h"
#include "core/untrusted.h"
#include "error_text.h"
#include "verl/core/error.h"
#include "verl/tokenizer/tokenizer.h"

namespace {

using verl::tokenizer::Tokenizer;
using Ids = std::vector<std::int32_t>;
using nlohmann::json;

const char* kQwen3Dir = VERL_SOURCE_DIR "/tests/fixtures/qwen3-tokenizer";  // the repository's own fixture

// A byte-level BPE that uses every component the reader supports: NFC in a Sequence normalizer,
// Split + ByteLevel in a Sequence pre-tokenizer, ByteLevel + TemplateProcessing in a Sequence
// post-processor (Llama-3's), flagged added tokens. Vocab a b c ab abc Ġ Ġa; "<s>" is added (id 7).
// Expected ids below are HF tokenizers 0.23.3's for the same file.
json rich_tokenizer() {
  return json::parse(R"({
    "version": "1.0",
    "added_tokens": [
      {"id": 7, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
      {"id": 8, "content": "cc", "single_word": true, "lstrip": true, "rstrip": true, "normalized": true, "special": false}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
    "post_processor": {"type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [7], "tokens": ["<s>"]}}}]},
    "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": "a", "continuing_subword_prefix": null,
      "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
      "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "Ġ": 5, "Ġa": 6},
      "merges": [["a", "b"], ["ab", "c"], ["Ġ", "a"]]}})");
}

// The same with RobertaProcessing as the post-processor.
json roberta_tokenizer() {
  json doc = rich_tokenizer();
  doc["post_processor"] = json::parse(R"({"type": "RobertaProcessing", "sep": ["c", 2], "cls": ["a", 0],
    "trim_offsets": true, "add_prefix_space": false})");
  return doc;
}

// The outcome of loading `text`: "" if it loads; else the message of a verl::CheckpointError or
// verl::InvalidArgument; any other exception fails the test with its message.
std::string load_outcome(const std::string& text) {
  try {
    Tokenizer::from_json(text);
    return "";
  } catch (const verl::CheckpointError& e) {
    return e.what();
  } catch (const verl::InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("a library exception escaped: " << e.what());
  }
  return "";
}

// "[[[...[1]...]]]" nested `depth` deep.
std::string nested_array(std::size_t depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); }

// A post-processor (or normalizer / pre-tokenizer) of `depth` Sequences around `leaf`.
std::string nested_sequence(std::size_t depth, const std::string& list_key, const std::string& leaf) {
  std::string out;
  out.reserve(depth * (list_key.size() + 32) + leaf.size());
  for (std::size_t i = 0; i < depth; ++i) out += R"({"type": "Sequence", ")" + list_key + R"(": [)";
  out += leaf;
  for (std::size_t i = 0; i < depth; ++i) out += "]}";
  return out;
}

std::string with(json doc, const json::json_pointer& at, const json& value) {
  doc[at] = value;
  return doc.dump();
}

std::string with_raw(const std::string& field, const std::string& raw_json) {
  // Splices raw JSON text (which nlohmann could not hold, e.g. 1e400 or 60,000 levels) in place
  // of a top-level field of the rich tokenizer.
  json doc = rich_tokenizer();
  doc[field] = "@@RAW@@";
  std::string text = doc.dump();
  const std::size_t at = text.find("\"@@RAW@@\"");
  REQUIRE(at != std::string::npos);
  return text.replace(at, 9, raw_json);
}

// Every node of `doc` as a JSON pointer (containers included).
void collect_pointers(const json& node, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) collect_pointers(value, at / key, out);
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) collect_pointers(node[i], at / i, out);
  }
}

}  // namespace

TEST_CASE("tokenizer untrusted: the rich fixture loads and tokenizes") {
  const Tokenizer tok = Tokenizer::from_json(rich_tokenizer().dump());
  CHECK(tok.encode("abc") == Ids{7, 4});  // <s> from the template
  CHECK(tok.encode("abc", false) == Ids{4});
  CHECK(tok.encode("e\xCC\x81" "ab") == Ids{7, 0, 0, 3});  // é (NFC) is not in the vocab: unk "a" per byte
  CHECK(tok.decode({7, 4}, true) == "abc");
  CHECK(tok.decode({7, 4}) == "<s>abc");
  CHECK(Tokenizer::from_json(roberta_tokenizer().dump()).encode("abc") == Ids{0, 4, 2});
}

TEST_CASE("tokenizer untrusted: bug 6, TemplateProcessing fields of the wrong type") {
  const json::json_pointer template_at("/post_processor/processors/1");
  const json doc = rich_tokenizer();
  // The fuzzer's inputs: a non-string SpecialToken.id, non-integer ids.
  std::string message = load_outcome(with(doc, template_at / "single" / 0 / "SpecialToken" / "id", 5));
  CHECK_THAT(message, Catch::Contains("<tokenizer.json>") &&
                          Catch::Contains("post_processor.processors[1].single[0].SpecialToken.id must be a string") &&
                          Catch::Contains("the number 5"));
  CHECK_THROWS_AS(Tokenizer::from_json(with(doc, template_at / "single" / 0 / "SpecialToken" / "id", 5)),
                  verl::CheckpointError);
  message = load_outcome(with(doc, template_at / "special_tokens" / "<s>" / "ids" / 0, "7"));
  CHECK_THAT(message, Catch::Contains("<tokenizer.json>") &&
                          Catch::Contains("post_processor.processors[1].special_tokens['<s>'].ids[0]") &&
                          Catch::Contains("the string \"7\""));
  for (const json& bad_id : {json(1.5), json(-1), json(std::int64_t{1} << 40), json(nullptr), json::array()}) {
    INFO(bad_id.dump());
    CHECK_THROWS_AS(Tokenizer::from_json(with(doc, template_at / "special_tokens" / "<s>" / "ids" / 0, bad_id)),
                    verl::CheckpointError);
  }
  CHECK_THAT(load_outcome(with(doc, template_at / "special_tokens" / "<s>" / "ids", "7")),
             Catch::Contains("special_tokens['<s>'].ids must be an array"));
  CHECK_THAT(load_outcome(with(doc, template_at / "special_tokens" / "<s>", 7)),
             Catch::Contains("post_processor.processors[1].special_tokens['<s>'] must be an object, got the number 7"));
  CHECK_THAT(load_outcome(with(doc, template_at / "special_tokens", json::array())),
             Catch::Contains("post_processor.processors[1].special_tokens must be an object"));
  CHECK_THAT(load_outcome(with(doc, template_at / "single" / 0, 3)),
             Catch::Contains("post_processor.processors[1].single[0] must be {\"Sequence\": ...} or {\"SpecialToken\": ...}"));
  CHECK_THAT(load_outcome(with(doc, template_at / "single" / 0 / "SpecialToken", "<s>")),
             Catch::Contains("post_processor.processors[1].single[0].SpecialToken must be an object"));
  CHECK_THAT(load_outcome(with(doc, template_at / "single" / 0 / "SpecialToken" / "id", "<t>")),
             Catch::Contains("special_tokens has no entry '<t>'"));
  // RobertaProcessing's [token, id] pairs.
  const json roberta = roberta_tokenizer();
  CHECK_THAT(load_outcome(with(roberta, json::json_pointer("/post_processor/cls"), json::array({"a", "0"}))),
             Catch::Contains("<tokenizer.json>: post_processor.cls must be [token, id]"));
  CHECK_THAT(load_outcome(with(roberta, json::json_pointer("/post_processor/sep/1"), -2)),
             Catch::Contains("post_processor.sep must be [token, id] with an id in [0, 2^31), got an array of 2 items"));
}

TEST_CASE("tokenizer untrusted: every field replaced by a value of another type gives a typed error") {
  // Each node of the rich fixture in turn replaced by each of these: the load either succeeds (a
  // value HF would accept there too) or throws CheckpointError / InvalidArgument naming the file.
  // Before the fix several of these escaped as nlohmann's type_error (302, 305) or were
  // undefined (const operator[] on a missing key).
  const json replacements[] = {json(5),        json(-1),           json(1.5),       json("x"),
                               json(nullptr),  json(true),         json::array(),   json::object(),
                               json(1e300),    json(std::uint64_t{1} << 63), json::array({1, "a", nullptr}),
                               json::parse(nested_array(100))};
  std::size_t loads = 0, refused = 0;
  for (const json& doc : {rich_tokenizer(), roberta_tokenizer()}) {
  std::vector<json::json_pointer> pointers;
  collect_pointers(doc, json::json_pointer(), pointers);
  REQUIRE(pointers.size() > 70);
  for (const auto& at : pointers) {
    if (at.empty()) continue;
    for (const json& value : replacements) {
      INFO(at.to_string() << " = " << value.dump().substr(0, 40));
      const std::string message = load_outcome(with(doc, at, value));
      ++loads;
      if (!message.empty()) {
        ++refused;
        CHECK_THAT(message, Catch::StartsWith("<tokenizer.json>: "));
        CHECK(message.size() < 1200);  // bounded: never a dump of the value
      }
    }
    // The field removed altogether.
    json without = doc;
    const json::json_pointer parent = at.parent_pointer();
    if (without[parent].is_object()) {
      without[parent].erase(at.back());
      INFO("removed " << at.to_string());
      const std::string message = load_outcome(without.dump());
      if (!message.empty()) CHECK_THAT(message, Catch::StartsWith("<tokenizer.json>: "));
    }
  }
  }
  CHECK(refused > loads / 4);  // the sweep really exercises the checks
}

TEST_CASE("tokenizer untrusted: bug 9, deep nesting is refused without recursion") {
  // The fuzzer's input: a post_processor of 60,000 nested Sequences (it overflowed the stack while
  // being copied and parsed recursively).
  const std::string deep_post = with_raw("post_processor", nested_sequence(60000, "processors", "null"));
  std::string message = load_outcome(deep_post);
  CHECK_THAT(message, Catch::StartsWith("<tokenizer.json>: malformed JSON: nesting deeper than 128 levels"));
  // The same through a file: the message names the file.
  const auto dir = std::filesystem::temp_directory_path() / ("verl_tok_untrusted_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << deep_post;
  CHECK_THROWS_AS(Tokenizer::from_file(dir.string()), verl::CheckpointError);
  CHECK_THAT(error_of([&] { Tokenizer::from_file(dir.string()); }),
             Catch::Contains((dir / "tokenizer.json").string()) && Catch::Contains("nesting deeper than 128"));
  verl::remove_tree(dir);

  // A deep merges entry (it was dumped recursively into the message), too deep and within the
  // JSON limit: the message describes the value in a few words.
  json doc = rich_tokenizer();
  doc["model"]["merges"] = "@@";
  std::string text = doc.dump();
  const std::string deep_merges = text.replace(text.find("\"@@\""), 4, nested_array(100001));
  CHECK_THAT(load_outcome(deep_merges), Catch::Contains("nesting deeper than 128 levels"));
  doc["model"]["merges"] = json::array({json::parse(nested_array(120))});
  message = load_outcome(doc.dump());
  CHECK_THAT(message, Catch::Contains("model.merges[0] must be") && Catch::Contains("got an array of 1 items"));
  CHECK(message.size() < 300);

  // Deep JSON elsewhere: other fields, strings holding brackets (not nesting), objects.
  CHECK_THAT(load_outcome(with_raw("decoder", nested_array(200))), Catch::Contains("nesting deeper than 128"));
  CHECK_THAT(load_outcome(with_raw("decoder", std::string(129, '[') + std::string(129, ']'))),
             Catch::Contains("nesting deeper than 128"));
  CHECK(load_outcome(with_raw("version", std::string("\"").append(1000, '[').append("\\\"").append(1000, '{').append("\""))).empty());
  std::string deep_object;
  for (int i = 0; i < 5000; ++i) deep_object += R"({"a": )";
  deep_object.append("1").append(5000, '}');
  CHECK_THAT(load_outcome(with_raw("truncation", deep_object)), Catch::Contains("nesting deeper than 128"));
}

TEST_CASE("tokenizer untrusted: Sequence nesting is bounded, with the path built only for the message") {
  // Within the JSON depth limit but deeper than any real file: refused, naming the file, the path
  // and the depth.
  const std::string leaf = R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true})";
  std::string message = load_outcome(with_raw("post_processor", nested_sequence(17, "processors", leaf)));
  CHECK_THAT(message, Catch::StartsWith("<tokenizer.json>: post_processor.processors[0]") &&
                          Catch::Contains("nests Sequences 17 levels deep (at most 16"));
  CHECK_THROWS_AS(Tokenizer::from_json(with_raw("post_processor", nested_sequence(17, "processors", leaf))),
                  verl::CheckpointError);
  message = load_outcome(with_raw("normalizer", nested_sequence(20, "normalizers", R"({"type": "NFC"})")));
  CHECK_THAT(message, Catch::Contains("normalizer.normalizers[0]") && Catch::Contains("nests Sequences 17 levels deep"));
  message = load_outcome(with_raw("pre_tokenizer", nested_sequence(30, "pretokenizers", leaf)));
  CHECK_THAT(message, Catch::Contains("pre_tokenizer.pretokenizers[0]") && Catch::Contains("nests Sequences 17 levels deep"));
  // 16 levels load and behave as one.
  const Tokenizer sixteen = Tokenizer::from_json(with_raw("normalizer", nested_sequence(16, "normalizers", R"({"type": "NFC"})")));
  CHECK(sixteen.encode("e\xCC\x81" "ab") == Ids{7, 0, 0, 3});
  CHECK(Tokenizer::from_json(with_raw("pre_tokenizer", nested_sequence(16, "pretokenizers", leaf))).encode("ab a") ==
        Ids{7, 5, 3, 6});
  // The path of a bad leaf three levels down, assembled when the error is raised.
  const std::string bad_leaf = R"({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "Sequence", "processors": [
    {"type": "Sequence", "processors": [{"type": 7}]}]}]})";
  CHECK_THAT(load_outcome(with_raw("post_processor", bad_leaf)),
             Catch::Contains("<tokenizer.json>: post_processor.processors[1].processors[0].processors[0].type must be a "
                             "string, got the number 7"));
}

TEST_CASE("tokenizer untrusted: a long post-processor Sequence costs linear time per encode") {
  // 50,000 BertProcessing steps, each wrapping the text in cls/sep: the steps were applied per
  // encode by inserting at the front, quadratic in their number (seconds per call); now they are
  // folded into one prefix and suffix at load time.
  constexpr std::size_t kSteps = 50000;
  std::string steps = R"({"type": "Sequence", "processors": [)";
  for (std::size_t i = 0; i < kSteps; ++i) steps += std::string(i ? ", " : "") + R"({"type": "BertProcessing", "cls": ["a", 0], "sep": ["c", 2]})";
  steps += "]}";
  const Tokenizer tok = Tokenizer::from_json(with_raw("post_processor", steps));
  const auto start = std::chrono::steady_clock::now();
  Ids ids;
  for (int i = 0; i < 5; ++i) ids = tok.encode("abc");
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1.0);
  REQUIRE(ids.size() == 2 * kSteps + 1);
  CHECK(std::count(ids.begin(), ids.begin() + kSteps, 0) == static_cast<std::ptrdiff_t>(kSteps));
  CHECK(ids[kSteps] == 4);
  CHECK(std::count(ids.begin() + kSteps + 1, ids.end(), 2) == static_cast<std::ptrdiff_t>(kSteps));
  CHECK(tok.encode("abc", false) == Ids{4});
  // HF tokenizers 0.23.3 gives the same for three Bert steps: [0, 0, 0, 4, 2, 2, 2].
  const std::string three = R"({"type": "Sequence", "processors": [{"type": "BertProcessing", "cls": ["a", 0], "sep": ["c", 2]},
    {"type": "BertProcessing", "cls": ["a", 0], "sep": ["c", 2]}, {"type": "BertProcessing", "cls": ["a", 0], "sep": ["c", 2]}]})";
  CHECK(Tokenizer::from_json(with_raw("post_processor", three)).encode("abc") == Ids{0, 0, 0, 4, 2, 2, 2});
}

TEST_CASE("tokenizer untrusted: bug 11, numbers out of range are typed errors naming the file") {
  for (const char* literal : {"1e400", "-1e400", "1E+99999"}) {
    INFO(literal);
    const std::string text = with_raw("version", literal);
    CHECK_THROWS_AS(Tokenizer::from_json(text), verl::CheckpointError);
    CHECK_THAT(load_outcome(text), Catch::StartsWith("<tokenizer.json>: malformed JSON") && Catch::Contains("1"));
  }
  // In the config file too.
  CHECK_THROWS_AS(Tokenizer::from_json(rich_tokenizer().dump(), R"({"model_max_length": 1e400})"), verl::CheckpointError);
  CHECK_THAT(error_of([] { Tokenizer::from_json(rich_tokenizer().dump(), R"({"model_max_length": 1e400})"); }),
             Catch::Contains("<tokenizer_config.json>"));
  // A large but finite number where an id belongs is refused as an id, not truncated.
  json doc = rich_tokenizer();
  doc["model"]["vocab"]["a"] = std::uint64_t{1} << 32;
  CHECK_THAT(load_outcome(doc.dump()), Catch::Contains("model.vocab['a'] must be an id in [0, 268435455]"));
  doc["model"]["vocab"]["a"] = 1e300;
  CHECK_THAT(load_outcome(doc.dump()), Catch::Contains("model.vocab['a']") && Catch::Contains("1e+300"));
}

TEST_CASE("tokenizer untrusted: bug 12, sparse vocab ids do not size a table") {
  // The fuzzer's input: one id of 2^28-1. HF tokenizers 0.23.3 loads this file (its vocab is a
  // hash map) and gives: encode("ab<s>b").ids == [5, 3, 268435455], get_vocab_size() == 4,
  // id_to_token(268435455) == "b", token_to_id("<s>") == 3 (added ids start at the vocab's size).
  const std::string sparse = R"({"added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false,
    "rstrip": false, "normalized": false, "special": true}], "normalizer": null, "pre_tokenizer": null,
    "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 268435455, "ab": 5}, "merges": ["a b"]}})";
  const auto start = std::chrono::steady_clock::now();
  const Tokenizer tok = Tokenizer::from_json(sparse);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 0.5);  // a 2 GB table took seconds to fill
  CHECK(tok.encode("ab<s>b") == Ids{5, 3, 268435455});
  CHECK(tok.vocab_size() == 4);
  CHECK(tok.id_to_token(268435455) == "b");
  CHECK(tok.token_to_id("<s>") == 3);
  CHECK(tok.decode({0, 268435455, 268435454, 5, 3}) == "a b ab <s>");  // no decoder: HF joins with spaces
  // Ids past the accepted range name the token and the file.
  const std::string too_big = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b\nc": 268435456}, "merges": []}})";
  CHECK_THROWS_AS(Tokenizer::from_json(too_big), verl::CheckpointError);
  CHECK_THAT(load_outcome(too_big),
             Catch::Contains("<tokenizer.json>: model.vocab['b\\nc'] must be an id in [0, 268435455], got the number 268435456"));
  CHECK_THAT(load_outcome(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})"),
             Catch::Contains("model.vocab['a']") && Catch::Contains("the number -1"));
}

TEST_CASE("tokenizer untrusted: untrusted strings in messages are escaped and bounded") {
  // A merge that names a token not in the vocab: control characters escaped, length bounded.
  json doc = rich_tokenizer();
  doc["model"]["merges"] = json::array({"a\x01\x7f" + std::string(5000, 'z') + " b"});
  std::string message = load_outcome(doc.dump());
  CHECK_THAT(message, Catch::Contains("model.merges[0] uses 'a\\x01\\x7fzzz") && Catch::Contains("(5003 bytes)"));
  CHECK(message.size() < 500);
  doc = rich_tokenizer();
  doc["model"]["type"] = std::string(3000, 'W') + "\n";
  message = load_outcome(doc.dump());
  CHECK_THAT(message, Catch::Contains("model.type 'WWW") && Catch::Contains("is not supported"));
  CHECK(message.size() < 500);
  doc = rich_tokenizer();
  doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(\t" + std::string(4000, 'x');
  message = load_outcome(doc.dump());
  CHECK_THAT(message, Catch::Contains("pre_tokenizer.pretokenizers[0].pattern: cannot compile regex '(\\t"));
  CHECK(message.size() < 1000);
  // A pattern whose PCRE2 translation would take gigabytes (each \w is kilobytes of ranges).
  std::string huge_pattern;
  for (int i = 0; i < 200000; ++i) huge_pattern += "\\w";
  doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = huge_pattern;
  CHECK_THAT(load_outcome(doc.dump()), Catch::Contains("pre_tokenizer.pretokenizers[0].pattern") &&
                                           Catch::Contains("is too large"));

  // Bytes that are not UTF-8 in the file: a typed error whose message is valid UTF-8.
  std::string text = rich_tokenizer().dump();
  text.replace(text.find("\"1.0\""), 5, "\"1.0\xff\xfe\"");
  message = load_outcome(text);
  CHECK_THAT(message, Catch::StartsWith("<tokenizer.json>: malformed JSON"));
  CHECK(verl::untrusted::is_utf8(message));

  // A chat template file that is not UTF-8 (it reached Python as UnicodeDecodeError).
  const auto dir = std::filesystem::temp_directory_path() / ("verl_tok_untrusted_tpl_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << rich_tokenizer().dump();
  std::ofstream(dir / "chat_template.jinja") << "{{ messages }}\xff";
  CHECK_THROWS_AS(Tokenizer::from_file(dir.string()), verl::CheckpointError);
  message = error_of([&] { Tokenizer::from_file(dir.string()); });
  CHECK_THAT(message, Catch::Contains("chat_template.jinja") && Catch::Contains("not valid UTF-8 (byte 14)"));
  verl::remove_tree(dir);
}

TEST_CASE("tokenizer untrusted: tokenizer_config.json values of odd types do not escape as library errors") {
  const std::string tokenizer = rich_tokenizer().dump();
  // "__type" that is not a string made json::value() throw type_error 302.
  const Tokenizer tok = Tokenizer::from_json(tokenizer, R"({"image_token": {"__type": 5, "content": "c"},
    "eos_token": {"content": 7}, "extra_special_tokens": {"x_token": [1]}, "chat_template": null})");
  CHECK(tok.special_tokens_map().empty());
  for (const char* config : {R"({"chat_template": 5})", R"({"chat_template": [{"name": 1, "template": "t"}]})", "[1]",
                             R"({"a": )", "{\"a\": \"\xff\"}"}) {
    INFO(config);
    CHECK_THROWS_AS(Tokenizer::from_json(tokenizer, config), verl::CheckpointError);
    CHECK(verl::untrusted::is_utf8(error_of([&] { Tokenizer::from_json(tokenizer, config); })));
  }
  CHECK_THAT(error_of([&] { Tokenizer::from_json(tokenizer, nested_array(1001)); }),
             Catch::Contains("<tokenizer_config.json>") && Catch::Contains("nesting deeper than 128"));
}

TEST_CASE("tokenizer untrusted: encode of arbitrary bytes, decode of arbitrary ids") {
  const Tokenizer rich = Tokenizer::from_json(rich_tokenizer().dump());
  std::vector<const Tokenizer*> tokenizers{&rich};
  const Tokenizer qwen3 = Tokenizer::from_file(kQwen3Dir);
  tokenizers.push_back(&qwen3);
  // Invalid UTF-8 of every kind is refused with InvalidArgument naming the byte.
  for (const std::string bad : {"\xff", "a\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ab\xe4\xbd", "\x80", "\xf8\x88\x80\x80\x80"}) {
    for (const Tokenizer* tok : tokenizers) {
      CHECK_THROWS_AS(tok->encode(bad), verl::InvalidArgument);
      CHECK_THAT(error_of([&] { tok->encode(bad); }), Catch::Contains("not valid UTF-8"));
      CHECK_THROWS_AS(tok->encode_batch({"ok", bad}), verl::InvalidArgument);
    }
  }
  // Random text: code points of every UTF-8 length (some strings then get one byte replaced at
  // random). Valid UTF-8 encodes, and its ids survive a decode/encode round trip (decode gives the
  // NFC form of the text, which encodes to the same ids); anything else is refused.
  std::mt19937 rng(21);
  std::uniform_int_distribution<int> byte(0, 255), length(0, 30), pick(0, 7);
  using CodePoints = std::uniform_int_distribution<std::uint32_t>;
  CodePoints cp_of[] = {CodePoints(0x00, 0x7F), CodePoints(0x80, 0x7FF), CodePoints(0x800, 0xFFFF),
                        CodePoints(0x10000, 0x10FFFF)};
  int valid = 0, invalid = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const int n = length(rng);
    for (int i = 0; i < n; ++i) {
      const int kind = pick(rng);
      std::uint32_t cp = cp_of[kind < 4 ? 0 : kind - 4](rng);  // half ASCII
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
      if (cp < 0x80) {
        text.push_back(static_cast<char>(cp));
      } else if (cp < 0x800) {
        text += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
      } else if (cp < 0x10000) {
        text += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                 static_cast<char>(0x80 | (cp & 0x3F))};
      } else {
        text += {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
                 static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
      }
    }
    if (!text.empty() && round % 2 == 1) text[static_cast<std::size_t>(byte(rng)) % text.size()] = static_cast<char>(byte(rng));
    const bool is_valid = verl::untrusted::is_utf8(text);
    (is_valid ? valid : invalid) += 1;
    for (const Tokenizer* tok : tokenizers) {
      INFO("text bytes: " << text.size() << ", round " << round);
      if (is_valid) {
        const Ids ids = tok->encode(text);
        const std::string decoded = tok->decode(ids);
        CHECK(verl::untrusted::is_utf8(decoded));
        // (The rich fixture's unk token stands for every unknown character: no round trip.)
        if (tok != &rich) CHECK(tok->encode(decoded) == ids);
      } else {
        CHECK_THROWS_AS(tok->encode(text), verl::InvalidArgument);
      }
    }
  }
  CHECK(valid > 1000);
  CHECK(invalid > 200);
  // Ids that name no token are skipped, whatever their value; the result is valid UTF-8.
  const Ids odd{-1, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(), 9, 7, 268435455, 4};
  CHECK(rich.decode(odd) == "<s>abc");
  CHECK(rich.decode(odd, true) == "abc");
  std::uniform_int_distribution<std::int32_t> any_id(std::numeric_limits<std::int32_t>::min(),
                                                     std::numeric_limits<std::int32_t>::max());
  std::uniform_int_distribution<std::int32_t> near_id(-5, 151700);
  for (const Tokenizer* tok : tokenizers) {
    for (int round = 0; round < 300; ++round) {
      Ids ids;
      for (int i = 0; i < 20; ++i) ids.push_back(i % 2 ? any_id(rng) : near_id(rng));
      CHECK(verl::untrusted::is_utf8(tok->decode(ids)));
      CHECK(verl::untrusted::is_utf8(tok->decode(ids, true)));
      for (const std::int32_t id : ids) {
        // Both vocabularies are dense: every id below vocab_size() names a token, no other does.
        CHECK(tok->id_to_token(id).has_value() == (id >= 0 && id < static_cast<std::int32_t>(tok->vocab_size())));
      }
    }
  }
}
