// verl._C.DataProto and verl._C.row_plan. Tensors cross without copies (the caster shares
// storage); non-tensor cells and meta_info cross as JSON values.
#include <optional>

#include "bindings.h"
#include "json_cast.h"
#include "verl/data/data_proto.h"
#include "verl/data/row_plan.h"

namespace verl::bindings {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;

DataProto::ColumnMap columns_from_python(const py::dict& non_tensors) {
  DataProto::ColumnMap out;
  for (auto [k, v] : non_tensors) {
    const std::string key = py::str(k);
    DataProto::Column column;
    size_t i = 0;
    for (auto cell : v) column.push_back(to_json(cell, "non_tensor_batch['" + key + "'][" + std::to_string(i++) + "]"));
    out[key] = std::move(column);
  }
  return out;
}

py::dict columns_to_python(const DataProto::ColumnMap& columns) {
  py::dict out;
  for (const auto& [k, column] : columns) {
    py::list cells;
    for (const auto& cell : column) cells.append(to_python(cell));
    out[py::str(k)] = cells;
  }
  return out;
}

}  // namespace

void register_data(py::module_& m) {
  py::class_<DataProto>(m, "DataProto", "The C++ DataProto; verl.protocol.DataProto converts to and from it.")
      .def(py::init([](DataProto::TensorMap tensors, const py::dict& non_tensors, py::handle meta_info) {
             return DataProto(std::move(tensors), columns_from_python(non_tensors),
                              meta_info.is_none() ? Json::object() : to_json(meta_info, "meta_info"));
           }),
           py::arg("tensors") = DataProto::TensorMap{}, py::arg("non_tensors") = py::dict(),
           py::arg("meta_info") = py::none())
      .def("__len__", &DataProto::size)
      .def_property_readonly("batch", &DataProto::batch)
      .def_property_readonly("non_tensor_batch", [](const DataProto& d) { return columns_to_python(d.non_tensor_batch()); })
      .def_property_readonly("meta_info", [](const DataProto& d) { return to_python(d.meta_info()); })
      .def("check_consistency", &DataProto::check_consistency)
      .def("select", &DataProto::select, py::arg("batch_keys") = std::nullopt,
           py::arg("non_tensor_batch_keys") = std::nullopt, py::arg("meta_info_keys") = std::nullopt,
           py::arg("deepcopy") = false, Release())
      .def("select_idxs", &DataProto::select_idxs, py::arg("idxs"), Release())
      .def("slice", &DataProto::slice, py::arg("start") = std::nullopt, py::arg("end") = std::nullopt,
           py::arg("step") = std::nullopt, Release())
      .def("pop", &DataProto::pop, py::arg("batch_keys") = std::vector<std::string>{},
           py::arg("non_tensor_batch_keys") = std::vector<std::string>{},
           py::arg("meta_info_keys") = std::vector<std::string>{})
      .def("rename", &DataProto::rename, py::arg("old_keys"), py::arg("new_keys"), py::return_value_policy::reference)
      .def("union", &DataProto::union_with, py::arg("other"), py::return_value_policy::reference)
      .def_static("concat", &DataProto::concat, py::arg("data"), Release())
      .def("chunk", &DataProto::chunk, py::arg("chunks"), Release())
      .def("split", &DataProto::split, py::arg("split_size"), Release())
      .def("repeat", &DataProto::repeat, py::arg("repeat_times") = 2, py::arg("interleave") = true, Release())
      .def("reorder", &DataProto::reorder, py::arg("indices"), Release())
      .def("make_iterator", &DataProto::make_iterator, py::arg("mini_batch_size"), py::arg("epochs"),
           py::arg("seed") = std::nullopt, py::arg("shuffle") = std::nullopt, Release())
      .def("to", [](const DataProto& d, const std::string& device) { return d.to(torch::Device(device)); },
           py::arg("device"), Release())
      .def("is_padding_enabled", &DataProto::is_padding_enabled)
      .def("save_to_disk", &DataProto::save_to_disk, py::arg("filepath"), Release())
      .def_static("load_from_disk", &DataProto::load_from_disk, py::arg("filepath"), Release());
  m.def("pad_dataproto_to_divisor", &pad_dataproto_to_divisor, py::arg("data"), py::arg("size_divisor"), Release());
  m.def("unpad_dataproto", &unpad_dataproto, py::arg("data"), py::arg("pad_size"), Release());

  py::module_ plan = m.def_submodule("row_plan", "Which rows each DataProto operation takes (shared with C++).");
  plan.def("normalize_slice",
           [](int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) {
             const row_plan::Slice s = row_plan::normalize_slice(n, start, stop, step);
             return py::make_tuple(s.start, s.stop, s.step);
           },
           py::arg("n"), py::arg("start"), py::arg("stop"), py::arg("step"));
  plan.def("normalize_index", &row_plan::normalize_index, py::arg("n"), py::arg("index"));
  plan.def("selection_rows", &row_plan::selection_rows, py::arg("n"), py::arg("selection"));
  plan.def("repeat_rows", &row_plan::repeat_rows, py::arg("n"), py::arg("times"), py::arg("interleave"));
  plan.def("chunk_sizes", &row_plan::chunk_sizes, py::arg("n"), py::arg("chunks"), py::arg("allow_uneven"));
  plan.def("split_bounds", &row_plan::split_bounds, py::arg("n"), py::arg("split_size"));
  plan.def("pad_rows", &row_plan::pad_rows, py::arg("n"), py::arg("divisor"));
  plan.def("iterator_rows", &row_plan::iterator_rows, py::arg("n"), py::arg("mini_batch_size"), py::arg("epochs"),
           py::arg("seed"), py::arg("shuffle"));
}

}  // namespace verl::bindings
