// The compute device as the workers time it: waiting for its queued work, and its peak matmul rate (the
// denominator of MFU, model/flops_counter.h).
#pragma once

#include <torch/torch.h>

#include "verl/core/export.h"

namespace verl {

// The peak FLOP/s of `device` for matrix multiplies in `dtype`, measured once per process and
// (device, dtype, thread count) and cached. On the CPU: every intra-op thread times a single-threaded square
// torch::mm (up to 1024, sized from a small probe so one mm takes ~20 ms even where the dtype's kernel is slow) by
// its own CPU clock, and the peak is the fastest core's rate times the thread count -- time lost to other processes
// does not count, so a busy machine does not lower the peak (a wall-clock peak did, and MFU then read above 1). On
// accelerators: the best of several timed 4096 mms. ~0.2-0.5 s once. verl instead looks the device
// name up in a spec-sheet table (get_device_flops: H100 989e12, ..., "CPU" 448e9), which says nothing
// about a given CPU; the measured peak is what this machine's cores can reach, so MFU in (0, 1] reads as
// "fraction of this machine's matmul throughput". On GPUs it is below the spec sheet (dense bf16 mm
// reaches ~70-80% of it), so the MFU reads correspondingly higher than verl's.
VERL_API double device_peak_flops(const torch::Device& device, torch::ScalarType dtype);

// Blocks until the work queued on `device` has finished (nothing to wait for on the CPU), so that a
// wall-clock interval ending here covers the kernels themselves and not just their launches.
VERL_API void synchronize_device(const torch::Device& device);

}  // namespace verl
