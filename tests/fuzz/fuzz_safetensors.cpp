// libFuzzer target: the safetensors reader. The input is a whole .safetensors file: header length,
// JSON header, data. Every tensor it declares is read and reduced, so a header whose offsets or
// shapes lie about the data is caught by ASan if the reader trusted it.
#include "fuzz_common.h"
#include "verl/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = verl::fuzz::write_scratch("model.safetensors", verl::fuzz::as_text(data, size));
  verl::fuzz::expect_typed_errors([&] {
    verl::model::SafeTensorsFile file(path);
    for (const auto& [name, tensor] : verl::model::load_file(path)) {
      if (tensor.numel() > 0 && tensor.is_floating_point()) (void)tensor.to(torch::kFloat64).sum().item<double>();
      if (tensor.numel() > 0 && !tensor.is_floating_point()) (void)tensor.to(torch::kInt64).sum().item<int64_t>();
    }
  });
  return 0;
}
