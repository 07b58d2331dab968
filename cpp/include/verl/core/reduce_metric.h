// verl's reduce_metrics (verl/utils/metric/utils.py) for one key: the values a metric collected (over micro- and
// mini-batches, over data-parallel ranks) collapse to their max when the key contains "max", their min when it
// contains "min", their mean otherwise.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace verl {

// `values` must not be empty.
inline double reduce_metric(const std::string& key, const std::vector<double>& values) {
  if (key.find("max") != std::string::npos) return *std::max_element(values.begin(), values.end());
  if (key.find("min") != std::string::npos) return *std::min_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

}  // namespace verl
