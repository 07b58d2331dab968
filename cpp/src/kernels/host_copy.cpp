// Asynchronous device-to-host copies (see kernels/host_copy.h).
#include "kernels/host_copy.h"

#include <c10/core/impl/VirtualGuardImpl.h>

namespace verl::kernels {

void HostCopy::wait() const {
  if (copied) copied->synchronize();
}

void HostCopy::order_stream(const c10::Device& device) const {
  if (!copied) return;
  const c10::impl::VirtualGuardImpl guard(device.type());
  copied->block(guard.getStream(device));
}

HostCopy copy_to_host_async(const torch::Tensor& t) {
  HostCopy out;
  if (t.is_cpu()) {
    out.host = t;
    return out;
  }
  // Into pinned memory, asynchronously; the caching host allocator keeps the block until the copy has run.
  out.host = torch::empty(t.sizes(), t.options().device(torch::kCPU).pinned_memory(true));
  out.host.copy_(t, /*non_blocking=*/true);
  const c10::impl::VirtualGuardImpl guard(t.device().type());
  out.copied.emplace(t.device().type());
  out.copied->record(guard.getStream(t.device()));
  return out;
}

}  // namespace verl::kernels
