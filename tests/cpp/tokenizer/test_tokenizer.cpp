// verl::tokenizer::Tokenizer against ids computed once with HF tokenizers 0.23.3 on the Qwen3
// tokenizer fixture, plus small hand-written tokenizer.json files for the loading rules and errors.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/remove_tree.h"
#include "error_text.h"
#include "verl/core/error.h"
#include "verl/tokenizer/tokenizer.h"

namespace {

using verl::tokenizer::Tokenizer;
using Ids = std::vector<std::int32_t>;

// The repository's own fixture (tests/fixtures/README.md): a missing file fails the test, it is never skipped.
const char* kQwen3Dir = VERL_SOURCE_DIR "/tests/fixtures/qwen3-tokenizer";

const Tokenizer& qwen3() {
  static const Tokenizer tok = Tokenizer::from_file(kQwen3Dir);
  return tok;
}

// A tiny byte-level BPE: vocab a, b, c, ab, abc, Ġ plus merges, with the given extra fields.
std::string tiny_json(const std::string& added_tokens = "[]", const std::string& extra_model = "",
                      const std::string& normalizer = "null", const std::string& post = "null",
                      const std::string& merges = R"(["a b", "ab c", "Ġ a"])") {
  return R"({"version": "1.0", "added_tokens": )" + added_tokens + R"(, "normalizer": )" + normalizer +
         R"(, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": )" + post + R"(, "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
    "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false)" + extra_model + R"(,
    "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "Ġ": 5, "Ġa": 6},
    "merges": )" + merges + "}}";
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("verl_tok_test_" + std::to_string(::getpid()) + "_" +
                                                     std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { verl::remove_tree(path); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("tokenizer: Qwen3 ids match HF tokenizers") {
  const Tokenizer& tok = qwen3();
  // Expected ids from tokenizers 0.23.3: Tokenizer.from_file(...).encode(text).ids
  const std::vector<std::pair<std::string, Ids>> cases = {
      {"Hello, world!", {9707, 11, 1879, 0}},
      {"The quick brown fox jumps over the lazy dog.", {785, 3974, 13876, 38835, 34208, 916, 279, 15678, 5562, 13}},
      {"你好，世界！", {108386, 3837, 99489, 6313}},
      {"日本語のテキストです。", {101059, 102819, 15767, 56833, 61803, 70534, 37541, 1773}},
      {"def f(x):\n    return x ** 2\n", {750, 282, 2075, 982, 262, 470, 856, 3070, 220, 17, 198}},
      {"12345678901234567890", {16, 17, 18, 19, 20, 21, 22, 23, 24, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 15}},
      {"emoji 🤗🚀 and  spaces\t\ttab\n\n\nnewlines", {37523, 11162, 97, 245, 145836, 323, 220, 12621, 197, 58149, 1406, 931, 7969}},
      {"I'm can't we'll THEY'RE", {40, 2776, 646, 944, 582, 3278, 62493, 94153}},
      {"   leading and trailing   ", {256, 6388, 323, 27748, 262}},
      {"", {}},
  };
  for (const auto& [text, ids] : cases) {
    INFO(text);
    CHECK(tok.encode(text) == ids);
    CHECK(tok.encode(text, /*add_special_tokens=*/false) == ids);  // Qwen's post-processor adds nothing
  }
}

TEST_CASE("tokenizer: NFC normalization before BPE") {
  // "e" + COMBINING ACUTE ACCENT composes to "é", so both spellings give the one token of "école".
  CHECK(qwen3().encode("e\xCC\x81" "cole") == Ids{134670});
  CHECK(qwen3().encode("\xC3\xA9" "cole") == Ids{134670});
}

TEST_CASE("tokenizer: added tokens split the text first, longest match") {
  const Tokenizer& tok = qwen3();
  CHECK(tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n") ==
        Ids{151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198});
  CHECK(tok.encode("a<|endoftext|>b<|im_end|>") == Ids{64, 151643, 65, 151645});
  CHECK(tok.encode("<|im_start|><|im_start|>") == Ids{151644, 151644});
  CHECK(tok.encode("<|im_start") == Ids{27, 91, 318, 4906});  // incomplete: plain text
  CHECK(tok.token_to_id("<|endoftext|>") == 151643);
  CHECK(tok.id_to_token(151643) == "<|endoftext|>");
  CHECK(tok.id_to_token(9707) == "Hello");
  CHECK_FALSE(tok.id_to_token(-1).has_value());
  CHECK_FALSE(tok.id_to_token(10000000).has_value());
  CHECK(tok.vocab_size() == 151669);
  CHECK(tok.vocab_size(/*with_added_tokens=*/false) == 151643);
}

TEST_CASE("tokenizer: special tokens and chat template from tokenizer_config.json") {
  const Tokenizer& tok = qwen3();
  CHECK(tok.eos_token_id() == 151645);
  CHECK(tok.pad_token_id() == 151643);
  CHECK_FALSE(tok.bos_token_id().has_value());
  CHECK(tok.special_token("eos_token") == "<|im_end|>");
  REQUIRE(tok.chat_template().has_value());
  CHECK(tok.chat_template()->find("<|im_start|>") != std::string::npos);
  // A directory and the tokenizer.json path load the same tokenizer.
  const Tokenizer by_file = Tokenizer::from_file(std::string(kQwen3Dir) + "/tokenizer.json");
  CHECK(by_file.eos_token_id() == 151645);
}

TEST_CASE("tokenizer: decode round trip and skip_special_tokens") {
  const Tokenizer& tok = qwen3();
  for (const std::string text : {"Hello, world!", "你好，世界！ 🤗\n\tx", "def f(x):\n    return x ** 2\n",
                                 "<|im_start|>user\nhi<|im_end|>"}) {
    CHECK(tok.decode(tok.encode(text)) == text);
  }
  const Ids chat{151644, 872, 198, 6023, 151645};
  CHECK(tok.decode(chat, /*skip_special_tokens=*/true) == "user\nhi");
  CHECK(tok.decode(chat, /*skip_special_tokens=*/false) == "<|im_start|>user\nhi<|im_end|>");
  CHECK(tok.decode({10000000, 9707}) == "Hello");  // unknown ids are skipped
  const auto batch = tok.decode_batch({{9707}, {11, 1879}});
  CHECK(batch == std::vector<std::string>{"Hello", ", world"});
}

TEST_CASE("tokenizer: incomplete UTF-8 decodes to U+FFFD as HF does") {
  const Tokenizer& tok = qwen3();
  // 🤗 is three tokens: "ĠðŁ" (space + F0 9F), "¤" (A4), "Ĺ" (97).
  CHECK(tok.decode({11162}) == " \xEF\xBF\xBD");
  CHECK(tok.decode({11162, 97}) == " \xEF\xBF\xBD");  // F0 9F A4: one maximal invalid prefix, one U+FFFD
  CHECK(tok.decode({11162, 97, 245}) == " \xF0\x9F\xA4\x97");
  CHECK(tok.decode({11162, 97, 37523}) == " \xEF\xBF\xBD" "emoji");
  CHECK(tok.decode({97}) == "\xEF\xBF\xBD");  // a lone continuation byte
}

TEST_CASE("tokenizer: encode_batch equals encode") {
  const Tokenizer& tok = qwen3();
  std::vector<std::string> texts;
  for (int i = 0; i < 300; ++i) {
    texts.push_back("Sample " + std::to_string(i) + ": 你好 <|im_end|> " + std::string(static_cast<std::size_t>(i % 50), 'x') +
                    std::string(200, ' ') + "end");
  }
  const auto batch = tok.encode_batch(texts);
  REQUIRE(batch.size() == texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) CHECK(batch[i] == tok.encode(texts[i]));
}

TEST_CASE("tokenizer: invalid UTF-8 input is rejected") {
  CHECK_THROWS_AS(qwen3().encode("abc\xFF"), verl::InvalidArgument);
  CHECK_THROWS_AS(qwen3().encode("\xE4\xBD"), verl::InvalidArgument);
}

TEST_CASE("tokenizer: BPE merges in both formats, rank order") {
  const Tokenizer tok = Tokenizer::from_json(tiny_json());
  CHECK(tok.encode("abc") == Ids{4});  // a b -> ab (rank 0), then ab c -> abc (rank 1)
  CHECK(tok.encode("abcab a") == Ids{4, 3, 6});
  const Tokenizer pairs = Tokenizer::from_json(tiny_json("[]", "", "null", "null", R"([["a", "b"], ["ab", "c"], ["Ġ", "a"]])"));
  CHECK(pairs.encode("abcab a") == Ids{4, 3, 6});
  CHECK(tok.decode({4, 3, 6}) == "abcab a");
  CHECK(tok.vocab_size() == 7);
  CHECK_FALSE(tok.eos_token_id().has_value());
  CHECK(tok.chat_templates().empty());
}

TEST_CASE("tokenizer: ignore_merges takes whole-word vocab entries") {
  // "bc" is in the vocab but no merge makes it: only ignore_merges maps the word "bc" to it.
  const std::string json = replaced(tiny_json("[]", R"(, "ignore_merges": true)"), R"("Ġa": 6})", R"("Ġa": 6, "bc": 7})");
  CHECK(Tokenizer::from_json(json).encode("bc") == Ids{7});
  CHECK(Tokenizer::from_json(json).encode("abc") == Ids{4});
  CHECK(Tokenizer::from_json(replaced(json, R"(, "ignore_merges": true)", "")).encode("bc") == Ids{1, 2});
}

TEST_CASE("tokenizer: added token flags and ids assigned as HF does") {
  // The file's ids are not trusted: HF gives an added token the id of an equal vocab entry, or
  // the next id after the vocab.
  const std::string added = R"([
    {"id": 99, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "ab", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
    {"id": 50, "content": "<m>", "single_word": false, "lstrip": true, "rstrip": true, "normalized": false, "special": false},
    {"id": 51, "content": "cc", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false}])";
  const Tokenizer tok = Tokenizer::from_json(tiny_json(added));
  CHECK(tok.token_to_id("<s>") == 7);
  CHECK(tok.token_to_id("ab") == 3);
  CHECK(tok.token_to_id("<m>") == 8);
  CHECK(tok.token_to_id("cc") == 9);
  CHECK(tok.encode("<s>abc") == Ids{7, 3, 2});    // "ab" is an added token: the BPE never sees "abc"
  CHECK(tok.encode("a  <m>  b") == Ids{0, 8, 1});  // lstrip/rstrip swallow the spaces around <m>
  CHECK(tok.encode("cc acc") == Ids{9, 6, 2, 2});  // single_word: only the standalone "cc"
  CHECK(tok.decode({7, 3}, true) == "ab");
  CHECK(tok.decode({7, 3}, false) == "<s>ab");
  CHECK(tok.vocab_size() == 10);
  REQUIRE(tok.added_tokens().size() == 4);
  CHECK(tok.added_tokens()[0].special);
}

// An added_tokens list of plain (non-special, normalized=false) tokens with the given contents.
std::string plain_added_tokens(const std::vector<std::string>& contents) {
  std::string out = "[";
  for (std::size_t i = 0; i < contents.size(); ++i) {
    out += std::string(i ? ", " : "") + R"({"id": 0, "content": ")" + contents[i] +
           R"(", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false})";
  }
  return out + "]";
}

TEST_CASE("tokenizer: added tokens are matched leftmost-longest, as a naive scan finds them") {
  // Overlapping patterns over {a, b, c} (prefixes, suffixes and infixes of each other, where an automaton's failure
  // links matter); a, b and c are added tokens too, so the whole text is added tokens and encode() is the match list.
  std::mt19937 rng(7);
  const auto random_string = [&rng](std::size_t length) {
    std::string text;
    for (std::size_t i = 0; i < length; ++i) text += static_cast<char>('a' + rng() % 3);
    return text;
  };
  std::vector<std::string> patterns = {"a", "b", "c"};
  for (int i = 0; i < 40; ++i) patterns.push_back(random_string(2 + rng() % 6));
  const Tokenizer tok = Tokenizer::from_json(tiny_json(plain_added_tokens(patterns)));
  for (int trial = 0; trial < 200; ++trial) {
    const std::string text = random_string(1 + rng() % 300);
    // The reference: at each position the longest pattern starting there, then on after it.
    Ids expected;
    for (std::size_t pos = 0; pos < text.size();) {
      std::size_t best = 0;
      for (const std::string& p : patterns) {
        if (p.size() > best && text.compare(pos, p.size(), p) == 0) best = p.size();
      }
      expected.push_back(*tok.token_to_id(text.substr(pos, best)));
      pos += best;
    }
    REQUIRE(tok.encode(text) == expected);
  }
}

TEST_CASE("tokenizer: added-token matching is linear in the text, whatever the tokens' lengths") {
  // 1,000 short tokens, then 8 that start with 20,000 "x": in a run of 1,000,000 "x", a trie walked from each
  // position (the matcher before this one) took 2e10 steps; the automaton takes one per byte.
  constexpr std::size_t kLong = 20000, kRun = 1000000;
  std::vector<std::string> contents = {"x"};
  for (int k = 0; k < 1000; ++k) contents.push_back("<tok_" + std::to_string(k) + ">");
  for (int j = 0; j < 8; ++j) contents.push_back(std::string(kLong, 'x') + "<" + std::to_string(j) + ">");
  const Tokenizer tok = Tokenizer::from_json(tiny_json(plain_added_tokens(contents)));
  const std::int32_t x = 7;  // the next ids after the vocab's 7, in file order
  REQUIRE(tok.token_to_id("x") == x);
  REQUIRE(tok.token_to_id("<tok_999>") == x + 1000);
  REQUIRE(tok.token_to_id(std::string(kLong, 'x') + "<3>") == x + 1004);
  // Every short token, then the run ending in "<3>": "x" alone up to the last 20,000 "x", where the long token
  // starts too and, longest, wins.
  std::string text;
  Ids expected;
  for (int k = 0; k < 1000; ++k) {
    text += "<tok_" + std::to_string(k) + ">";
    expected.push_back(x + 1 + k);
  }
  text += std::string(kRun, 'x') + "<3>";
  expected.insert(expected.end(), kRun - kLong, x);
  expected.push_back(x + 1004);
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = tok.encode(text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(ids == expected);
  // Tens of milliseconds; generous for a loaded machine, far below the trie walk's time.
  CHECK(seconds < 5.0);
}

TEST_CASE("tokenizer: TemplateProcessing adds special tokens only when asked") {
  const std::string added = R"([{"id": 7, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
    "normalized": false, "special": true}])";
  const std::string post = R"({"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [7], "tokens": ["<s>"]}}})";
  const Tokenizer tok = Tokenizer::from_json(tiny_json(added, "", "null", post));
  CHECK(tok.encode("ab") == Ids{7, 3});
  CHECK(tok.encode("ab", false) == Ids{3});
}

// HF tokenizers passes a list of encodings between post-processor steps: a template returns one per piece, so the
// next step sees a pair (or more); Bert/Roberta wrap the first and close each further one. Expected ids are
// tokenizers 0.23.3's for the same files (text "abc" = id 4; <a> = [10], <b> = [11, 12]; Bert cls/sep 10/12, Roberta
// 14/13).
TEST_CASE("tokenizer: a post-processor Sequence passes HF's list of encodings from step to step") {
  const std::string specials = R"("special_tokens": {"<a>": {"id": "<a>", "ids": [10], "tokens": ["a"]},
                                                     "<b>": {"id": "<b>", "ids": [11, 12], "tokens": ["b", "c"]}})";
  const auto tpl = [&](const std::string& single, const std::string& pair = "[]") {
    return R"({"type": "TemplateProcessing", "single": )" + single + R"(, "pair": )" + pair + ", " + specials + "}";
  };
  const std::string A = R"({"Sequence": {"id": "A", "type_id": 0}})", B = R"({"Sequence": {"id": "B", "type_id": 1}})";
  const std::string a = R"({"SpecialToken": {"id": "<a>", "type_id": 0}})", b = R"({"SpecialToken": {"id": "<b>", "type_id": 0}})";
  const std::string bert = R"({"type": "BertProcessing", "cls": ["a", 10], "sep": ["c", 12]})";
  const std::string roberta = R"({"type": "RobertaProcessing", "cls": ["a", 14], "sep": ["c", 13], "trim_offsets": true, "add_prefix_space": false})";
  const std::string byte_level = R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false})";
  const auto sequence = [](std::initializer_list<std::string> steps) {
    std::string out = R"({"type": "Sequence", "processors": [)";
    for (const std::string& step : steps) out += (out.back() == '[' ? "" : ", ") + step;
    return out + "]}";
  };
  const auto encode = [](const std::string& post) { return Tokenizer::from_json(tiny_json("[]", "", "null", post)).encode("abc"); };
  const std::string a_then_text = tpl("[" + a + ", " + A + "]", "[" + A + ", " + b + ", " + B + "]");
  CHECK(encode(sequence({a_then_text, bert})) == Ids{10, 10, 12, 4, 12});               // a pair reaches Bert
  CHECK(encode(sequence({a_then_text, roberta})) == Ids{14, 10, 13, 13, 4, 13});        // and Roberta
  CHECK(encode(sequence({a_then_text, a_then_text})) == Ids{10, 11, 12, 4});            // the second uses "pair"
  CHECK(encode(sequence({bert, tpl("[" + A + ", " + a + "]")})) == Ids{10, 4, 12, 10});  // Bert gives one
  CHECK(encode(sequence({bert, roberta})) == Ids{14, 10, 4, 12, 13});
  CHECK(encode(sequence({byte_level, tpl("[" + a + ", " + A + ", " + b + "]")})) == Ids{10, 4, 11, 12});
  const std::string three = tpl("[" + a + ", " + A + ", " + b + "]");
  CHECK(encode(sequence({three, bert})) == Ids{10, 10, 12, 4, 12, 11, 12, 12});  // three pieces: Bert closes each
  CHECK(encode(sequence({three, roberta})) == Ids{14, 10, 13, 13, 4, 13, 13, 11, 12, 13});
  CHECK(Tokenizer::from_json(tiny_json("[]", "", "null", sequence({three, bert}))).encode("abc", false) == Ids{4});
  // What HF cannot run (a template given three sequences: a panic there) or what drops the text is refused.
  CHECK_THROWS_AS(encode(sequence({three, a_then_text})), verl::CheckpointError);
  CHECK_THAT(error_of([&] { encode(sequence({three, a_then_text})); }),
             Catch::Contains("post_processor.processors[1] (TemplateProcessing) receives 3 sequences"));
  CHECK_THAT(error_of([&] { encode(tpl("[" + a + "]")); }), Catch::Contains("post_processor drops the text"));
  CHECK_THAT(error_of([&] { encode(tpl("[" + B + "]")); }), Catch::Contains("post_processor.single[0].Sequence.id must be \"A\""));
  CHECK_THAT(error_of([&] { encode(tpl("[" + A + ", " + A + "]")); }), Catch::Contains("uses sequence A more than once"));
}

TEST_CASE("tokenizer: tokenizer_config.json special tokens and templates") {
  const std::string config = R"({"bos_token": {"__type": "AddedToken", "content": "a"}, "eos_token": "abc",
    "pad_token": null, "image_token": "c", "add_bos_token": false,
    "chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T"}]})";
  const Tokenizer tok = Tokenizer::from_json(tiny_json(), config);
  CHECK(tok.bos_token_id() == 0);
  CHECK(tok.eos_token_id() == 4);
  CHECK_FALSE(tok.pad_token_id().has_value());
  const std::vector<std::pair<std::string, std::string>> expected{{"bos_token", "a"}, {"eos_token", "abc"}, {"image_token", "c"}};
  CHECK(tok.special_tokens_map() == expected);
  CHECK(tok.chat_template() == "D");
  CHECK(tok.chat_templates().size() == 2);
}

TEST_CASE("tokenizer: template files beside tokenizer.json replace the config's") {
  TempDir dir;
  dir.write("tokenizer.json", tiny_json());
  dir.write("tokenizer_config.json", R"({"eos_token": "ab", "chat_template": "from config"})");
  dir.write("chat_template.jinja", "from file");
  const Tokenizer tok = Tokenizer::from_file(dir.path.string());
  CHECK(tok.chat_template() == "from file");
  CHECK(tok.eos_token_id() == 3);
}

TEST_CASE("tokenizer: bad files name the file and the field") {
  TempDir dir;
  CHECK_THROWS_AS(Tokenizer::from_file((dir.path / "nope").string()), verl::CheckpointError);
  CHECK_THAT(error_of([&] { Tokenizer::from_file(dir.path.string()); }), Catch::Contains("tokenizer.json"));

  dir.write("tokenizer.json", "{\"model\": {");
  CHECK_THROWS_AS(Tokenizer::from_file(dir.path.string()), verl::CheckpointError);
  CHECK_THAT(error_of([&] { Tokenizer::from_file(dir.path.string()); }),
             Catch::Contains("tokenizer.json") && Catch::Contains("malformed JSON"));

  CHECK_THROWS_AS(Tokenizer::from_json(R"({"model": {"type": "WordPiece", "vocab": {}}})"), verl::InvalidArgument);
  CHECK_THAT(error_of([] { Tokenizer::from_json(R"({"model": {"type": "Unigram", "vocab": []}})"); }),
             Catch::Contains("model.type") && Catch::Contains("Unigram"));
  CHECK_THROWS_AS(Tokenizer::from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})"), verl::CheckpointError);
  CHECK_THAT(error_of([] { Tokenizer::from_json(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})"); }),
             Catch::Contains("model.merges[0]") && Catch::Contains("'b'"));
  const std::string lowercase = replaced(tiny_json(), R"("normalizer": null)", R"("normalizer": {"type": "Lowercase"})");
  CHECK_THROWS_AS(Tokenizer::from_json(lowercase), verl::InvalidArgument);
  CHECK_THAT(error_of([&] { Tokenizer::from_json(lowercase); }),
             Catch::Contains("normalizer.type") && Catch::Contains("Lowercase"));
  const std::string whitespace = replaced(tiny_json(), R"("pre_tokenizer": {"type": "ByteLevel")", R"("pre_tokenizer": {"type": "Whitespace")");
  CHECK_THAT(error_of([&] { Tokenizer::from_json(whitespace); }), Catch::Contains("pre_tokenizer.type"));
  const std::string bad_regex = R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated",
    "invert": false}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})";
  CHECK_THROWS_AS(Tokenizer::from_json(bad_regex), verl::InvalidArgument);
  CHECK_THAT(error_of([&] { Tokenizer::from_json(bad_regex); }), Catch::Contains("pre_tokenizer.pattern"));

  dir.write("tokenizer.json", tiny_json());
  dir.write("tokenizer_config.json", "[1, 2");
  CHECK_THAT(error_of([&] { Tokenizer::from_file(dir.path.string()); }), Catch::Contains("tokenizer_config.json"));
}

TEST_CASE("tokenizer: render_chatml writes Qwen's ChatML") {
  const std::vector<verl::tokenizer::ChatMessage> messages{{"system", "Be brief."}, {"user", "Hi"}};
  CHECK(verl::tokenizer::render_chatml(messages, false) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  CHECK(verl::tokenizer::render_chatml(messages, true) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}
