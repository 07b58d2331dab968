// A device tensor's copy to the host started without waiting for it (the rollout's one host synchronisation per
// step): on the CPU the tensor itself; elsewhere a non-blocking copy into pinned memory and an event recorded after
// it on the device's current stream. Private to libverl.
#pragma once

#include <optional>

#include <c10/core/Event.h>
#include <torch/types.h>

namespace verl::kernels {

struct HostCopy {
  torch::Tensor host;                // readable after wait()
  std::optional<c10::Event> copied;  // devices other than the CPU: recorded after the copy was queued

  // Blocks the host until the copy has landed (a no-op on the CPU).
  void wait() const;
  // Makes the current stream of `device` wait for the copy's point (work queued on another thread's stream then
  // reads what the copied step wrote); a no-op on the CPU.
  void order_stream(const c10::Device& device) const;
};

HostCopy copy_to_host_async(const torch::Tensor& t);

}  // namespace verl::kernels
