// DataProto as bytes: the pickled dict of save_to_disk / load_from_disk (readable by torch.load), also what
// the worker group sends between ranks (verl/dist/worker_group.h).
#pragma once

#include <string>
#include <vector>

#include "verl/data/data_proto.h"

namespace verl::detail {

// {format, tensors (from the CPU), non_tensor_batch (JSON), meta_info (JSON)}. CheckpointError naming `shown`
// (a file name, or what the bytes are) when a non-tensor value cannot be written as JSON.
std::vector<char> pickle_data_proto(const DataProto& data, const std::string& shown);
// The inverse; CheckpointError naming `shown` for any damage.
DataProto unpickle_data_proto(const std::vector<char>& bytes, const std::string& shown);

}  // namespace verl::detail
