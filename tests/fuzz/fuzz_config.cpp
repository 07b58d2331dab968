// libFuzzer target: the config path. The first byte picks how the rest is read: odd, as a YAML
// document merged onto verl's defaults and validated; even, as one `key=value` override per line
// (Hydra's syntax) applied to the defaults and validated. Both end in the YAML emitter.
#include "fuzz_common.h"
#include "verl/core/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text = verl::fuzz::as_text(data + 1, size - 1);
  verl::fuzz::expect_typed_errors([&] {
    verl::Config config;
    if (data[0] % 2 == 1) {
      config.merge_yaml_string(std::string(text), "fuzz.yaml");
    } else {
      config.apply_overrides(verl::fuzz::split_lines(text));
    }
    config.validate();
    (void)config.to_yaml(false);
  });
  return 0;
}
