// verl::Config on hostile input: the fuzzing findings of issue 21 (alias cycles and bombs, dotted
// map keys, bytes that are not UTF-8), each from the input that crashed, plus the JSON/escaping
// helpers every reader of untrusted files uses (cpp/src/core/untrusted.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "core/untrusted.h"
#include "verl/core/config.h"

using verl::Config;
using verl::ConfigError;
using verl::Json;
using Catch::Matchers::Contains;

TEST_CASE("config untrusted: a self-referencing YAML alias is an error, not a stack overflow") {
  // Was: unbounded recursion in yaml_json.cpp's to_json (SIGSEGV).
  CHECK_THROWS_WITH(Config::load("", {"trainer.project_name=&a [1, *a]"}),
                    Contains("alias refers to a node that contains it"));
  Config c;
  CHECK_THROWS_AS(c.merge_yaml_string("actor_rollout_ref: &a [1, *a]\n", "cycle.yaml"), ConfigError);
  CHECK_THROWS_WITH(c.merge_yaml_string("actor_rollout_ref: &a [1, *a]\n", "cycle.yaml"), Contains("cycle.yaml:1"));
  CHECK_THROWS_WITH(c.merge_yaml_string("a: &x {b: *x}\n", "map.yaml"), Contains("contains it"));
}

TEST_CASE("config untrusted: a billion-laughs YAML stops at the expansion limit") {
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *l" : "*l") + std::to_string(i - 1);
    text += "]\n";
  }
  Config c;
  CHECK_THROWS_WITH(c.merge_yaml_string(text, "bomb.yaml"), Contains("expands to more than"));
  // Shared aliases that stay small are fine (and are not mistaken for cycles).
  Config ok;
  ok.merge_yaml_string("actor_rollout_ref:\n  model:\n    override_config:\n      a: &x [1, 2]\n      b: *x\n", "ok.yaml");
  CHECK(ok.get("actor_rollout_ref.model.override_config.b") == Json::array({1, 2}));
}

TEST_CASE("config untrusted: deep YAML nesting is refused with the file and line") {
  Config c;
  const std::string deep = "trainer:\n  project_name: " + std::string(100, '[') + std::string(100, ']') + "\n";
  CHECK_THROWS_WITH(c.merge_yaml_string(deep, "deep.yaml"), Contains("deep.yaml:2") && Contains("nested deeper"));
}

TEST_CASE("config untrusted: map keys holding '.' (or empty) are refused, naming the key") {
  // Was: validate() split the key on '.' again and dereferenced a null lookup.
  CHECK_THROWS_WITH(Config::load("", {"+foo={\"a.b\": 1}"}), Contains("'a.b'") && Contains("dotted"));
  CHECK_THROWS_AS(Config::load("", {"+foo={\"a.b\": 1}"}), ConfigError);
  Config c;
  CHECK_THROWS_WITH(c.set("actor_rollout_ref.model.override_config", Json{{"..", 1}}), Contains("'..'"));
  CHECK_THROWS_WITH(c.set("actor_rollout_ref.model.override_config", Json{{"x", Json{{"", 1}}}}), Contains("empty"));
  CHECK_THROWS_WITH(c.merge_yaml_string("actor_rollout_ref:\n  model:\n    override_config:\n      \"a.b\": 1\n", "dots.yaml"),
                    Contains("dots.yaml") && Contains("'a.b'"));
  CHECK_NOTHROW(c.validate());  // the refused values never entered the tree
  c.set("actor_rollout_ref.rollout.engine_kwargs.vllm", Json{{"swap_space", 4}});
  CHECK_NOTHROW(c.validate());
}

TEST_CASE("config untrusted: bytes that are not UTF-8 are a ConfigError with file and line") {
  Config c;
  // Was: RuntimeError [json.exception.type_error.316] from a dump() in the type-error message.
  CHECK_THROWS_WITH(c.merge_yaml_string("trainer:\n  total_epochs: a\xff\n", "bytes.yaml"),
                    Contains("bytes.yaml:2") && Contains("UTF-8"));
  CHECK_THROWS_AS(Config::load("", {"trainer.project_name=a\xfe"}), ConfigError);
  CHECK_THROWS_AS(c.set("trainer.project_name\xff", Json(1)), ConfigError);
}

TEST_CASE("config untrusted: the YAML escapes \\N and \\_ read as U+0085 and U+00A0") {
  // yaml-cpp decodes them to the lone bytes 0x85 / 0xA0; they must reach users as UTF-8.
  Config c = Config::load("", {"trainer.project_name=\"a\\Nb\\_c\""});
  CHECK(c.get_as<std::string>("trainer.project_name") == "a\xc2\x85" "b\xc2\xa0" "c");
  CHECK(verl::untrusted::is_utf8(c.to_yaml()));
}

TEST_CASE("config untrusted: plain scalars are typed as OmegaConf types them") {
  Config c = Config::load("", {"+t.i=-12", "+t.f=1e-6", "+t.g=.5", "+t.h=3.", "+t.inf=-.inf", "+t.nan=.nan",
                               "+t.s=1e", "+t.u=+.5e+3", "+t.big=99999999999999999999", "+t.dot=."});
  CHECK(c.get("t.i") == Json(-12));
  CHECK(c.get("t.f") == Json(1e-6));
  CHECK(c.get("t.g") == Json(0.5));
  CHECK(c.get("t.h") == Json(3.0));
  CHECK(std::isinf(c.get_as<double>("t.inf")));
  CHECK(std::isnan(c.get_as<double>("t.nan")));
  CHECK(c.get("t.s") == Json("1e"));
  CHECK(c.get("t.u") == Json(500.0));
  CHECK(c.get("t.big").is_number_float());
  CHECK(c.get("t.dot") == Json("."));
}

TEST_CASE("untrusted: depth-limited JSON parsing and bounded quoting") {
  using namespace verl::untrusted;
  std::string error;
  CHECK(try_parse_json(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'), error).has_value());
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_FALSE(try_parse_json(deep, error).has_value());
  CHECK_THAT(error, Contains("nesting deeper than 128"));
  CHECK_FALSE(try_parse_json("{\"a\": 1e400}", error).has_value());
  CHECK_FALSE(try_parse_json("\"\xff\"", error).has_value());
  CHECK(is_utf8(error));
  CHECK_THROWS_AS(parse_json<verl::DataError>("[1,", "rows.json"), verl::DataError);
  CHECK_THROWS_WITH(parse_json<verl::DataError>("[1,", "rows.json"), Contains("rows.json: file is not valid JSON"));

  CHECK(escape("ok") == "ok");
  CHECK(escape("a\xff\nb\\") == "a\\xff\\nb\\\\");
  CHECK(escape("\xc3\xa9") == "\xc3\xa9");           // é stays
  CHECK(escape("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // an encoded surrogate is not UTF-8
  CHECK(escape(std::string(1000, 'x'), 10) == "xxxxxxxxxx... (1000 bytes)");
  // Paths in messages: any bytes (a Linux file name), escaped; cut only past PATH_MAX.
  CHECK(display_path("/data/a\xff/train.jsonl") == "/data/a\\xff/train.jsonl");
  CHECK(display_path(std::filesystem::path("/data") / "b\n") == "/data/b\\n");
  CHECK(display_path(std::string(4096, 'p')) == std::string(4096, 'p'));
  CHECK(display_path(std::string(5000, 'p')) == std::string(4096, 'p') + "... (5000 bytes)");
  Json big = Json::array();
  for (int i = 0; i < 1000; ++i) big.push_back(i);
  const std::string q = quote(big, 20);
  CHECK(q.size() < 60);
  CHECK_THAT(q, Contains("(1000 items)"));
  CHECK(quote(Json("a\xff")) == "\"a\\xff\"");
  CHECK(first_invalid_utf8("ab\xc3") == 2);
  CHECK(first_invalid_utf8("ab") == std::string_view::npos);
}
