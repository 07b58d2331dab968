// RL prompt datasets in verl's schema (verl/data/rl_dataset.h).
#include "verl/data/rl_dataset.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

#include "core/untrusted.h"
#include "verl/core/error.h"
#include "verl/data/row_plan.h"

namespace verl::data {
namespace {

using untrusted::display_path;

std::vector<tokenizer::ChatMessage> chat_messages(const Json& row, const std::string& key, const std::string& origin) {
  VERL_CHECK_AS(DataError, row.contains(key), origin, ": row has no '", untrusted::escape(key),
                "' (chat messages) field");
  const Json& messages = row[key];
  bool ok = messages.is_array() && !messages.empty();
  std::vector<tokenizer::ChatMessage> out;
  if (ok) {
    for (const Json& m : messages) {
      if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
          !m["content"].is_string()) {
        ok = false;
        break;
      }
      out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
  }
  VERL_CHECK_AS(DataError, ok, origin, ": '", untrusted::escape(key), "' must be a non-empty list of {\"role\", "
                "\"content\"} string messages, got ", untrusted::quote(messages, 100));
  return out;
}

void check_row(const Json& row, const std::string& origin) {
  VERL_CHECK_AS(DataError, row.is_object(), origin, ": a row must be a JSON object, got ", untrusted::type_name(row));
  const bool has_truth = row.contains("reward_model") && row["reward_model"].is_object() &&
                         row["reward_model"].contains("ground_truth") && !row["reward_model"]["ground_truth"].is_null();
  VERL_CHECK_AS(DataError, has_truth, origin, ": row has no 'reward_model.ground_truth'");
  if (row.contains("extra_info")) {
    const Json& extra = row["extra_info"];
    VERL_CHECK_AS(DataError, extra.is_null() || extra.is_object(), origin, ": 'extra_info' must be an object, got ",
                  untrusted::type_name(extra));
  }
}

// The file's text; DataError naming it when it is missing, unreadable or not UTF-8 (with the line and column of
// the first bad byte, as the Python reader reports it). Every row parsed from it is then UTF-8 too.
std::string read_text(const std::string& path) {
  std::error_code ec;
  VERL_CHECK_AS(DataError, std::filesystem::is_regular_file(path, ec), "data file not found: ", display_path(path));
  std::string error;
  std::optional<std::string> text = untrusted::try_read_file(path, error);
  VERL_CHECK_AS(DataError, text.has_value(), "data file: ", error);
  const size_t bad = untrusted::first_invalid_utf8(*text);
  if (bad != std::string::npos) {
    const size_t newline = bad == 0 ? std::string::npos : text->rfind('\n', bad - 1);
    const size_t column = bad - (newline == std::string::npos ? 0 : newline + 1) + 1;
    const auto line = 1 + std::count(text->begin(), text->begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02x", static_cast<unsigned char>((*text)[bad]));
    VERL_FAIL(DataError, display_path(path), ":", line, ": not valid UTF-8 (byte ", byte, " at column ", column,
              "); data files must be UTF-8 text");
  }
  return std::move(*text);
}

// (rows, "path:line" origins) of JSON lines text. Lines are split on '\n' only (a trailing '\r' dropped), as the
// Python reader splits them; rows nesting deeper than untrusted::kMaxJsonDepth are refused.
std::pair<std::vector<Json>, std::vector<std::string>> json_lines(const std::string& text, const std::string& path) {
  std::vector<Json> rows;
  std::vector<std::string> origins;
  const std::string shown = display_path(path);
  std::string error;
  size_t begin = 0;
  for (int64_t lineno = 1; begin <= text.size(); ++lineno) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string origin = shown + ":" + std::to_string(lineno);
    std::optional<Json> row = untrusted::try_parse_json(line, error);
    VERL_CHECK_AS(DataError, row.has_value(), origin, ": invalid JSON: ", error);
    rows.push_back(std::move(*row));
    origins.push_back(std::move(origin));
  }
  return {std::move(rows), std::move(origins)};
}

}  // namespace

Truncation parse_truncation(std::string_view name) {
  if (name == "error") return Truncation::kError;
  if (name == "left") return Truncation::kLeft;
  if (name == "right") return Truncation::kRight;
  if (name == "middle") return Truncation::kMiddle;
  VERL_FAIL(ConfigError, "data.truncation must be one of [error, left, right, middle], got '",
            untrusted::escape(name, 40), "'");
}

std::vector<std::int32_t> truncate_prompt(const std::vector<std::int32_t>& ids, int64_t max_length, Truncation mode,
                                          std::string_view what) {
  VERL_CHECK_AS(ConfigError, max_length > 0, "data.max_prompt_length must be positive, got ", max_length);
  const auto limit = static_cast<size_t>(max_length);
  if (ids.size() <= limit) return ids;
  switch (mode) {
    case Truncation::kLeft:
      return {ids.end() - static_cast<std::ptrdiff_t>(limit), ids.end()};
    case Truncation::kRight:
      return {ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(limit)};
    case Truncation::kMiddle: {
      const size_t left_half = limit / 2;
      const size_t right_half = limit - left_half;
      std::vector<std::int32_t> kept(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(left_half));
      kept.insert(kept.end(), ids.end() - static_cast<std::ptrdiff_t>(right_half), ids.end());
      return kept;
    }
    case Truncation::kError:
      break;
  }
  VERL_FAIL(DataError, what, ": prompt length ", ids.size(), " is longer than data.max_prompt_length=", max_length,
            " (set data.truncation=left|right|middle or data.filter_overlong_prompts=true)");
}

RLHFDatasetOptions RLHFDatasetOptions::from_config(const Config& config) {
  RLHFDatasetOptions o;
  o.prompt_key = config.get_as<std::string>("data.prompt_key");
  o.max_prompt_length = config.get_as<int64_t>("data.max_prompt_length");
  VERL_CHECK_AS(ConfigError, o.max_prompt_length > 0, "data.max_prompt_length must be positive, got ",
                o.max_prompt_length);
  o.truncation = parse_truncation(config.get_as<std::string>("data.truncation"));
  o.filter_overlong_prompts = config.get_as<bool>("data.filter_overlong_prompts");
  o.return_raw_chat = config.get_as<bool>("data.return_raw_chat");
  o.return_full_prompt = config.get_as<bool>("data.return_full_prompt");
  return o;
}

struct RLHFDataset::Data {
  RLHFDatasetOptions options;
  int64_t pad_token_id = 0;
  std::vector<Json> rows;
  std::vector<std::string> origins;
  std::vector<std::vector<std::int32_t>> prompt_ids;  // truncated
  std::vector<std::string> full_prompts;              // rendered text, only with return_full_prompt
};

RLHFDataset::RLHFDataset(std::vector<Json> rows, const tokenizer::Tokenizer& tokenizer, RLHFDatasetOptions options,
                         std::vector<std::string> origins) {
  VERL_CHECK_AS(ConfigError, options.max_prompt_length > 0, "data.max_prompt_length must be positive, got ",
                options.max_prompt_length);
  VERL_CHECK(origins.empty() || origins.size() == rows.size(), "RLHFDataset: ", origins.size(), " origins for ",
             rows.size(), " rows");
  if (origins.empty()) {
    for (size_t i = 0; i < rows.size(); ++i) origins.push_back("row " + std::to_string(i));
  }
  if (!options.render_prompt) {
    options.render_prompt = [](const std::vector<tokenizer::ChatMessage>& messages) {
      return tokenizer::render_chatml(messages, /*add_generation_prompt=*/true);
    };
  }

  std::vector<std::string> texts;
  texts.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    check_row(rows[i], origins[i]);
    texts.push_back(options.render_prompt(chat_messages(rows[i], options.prompt_key, origins[i])));
  }
  std::vector<std::vector<std::int32_t>> ids = tokenizer.encode_batch(texts, /*add_special_tokens=*/false);

  auto data = std::make_shared<Data>();
  if (options.pad_token_id) {
    data->pad_token_id = *options.pad_token_id;
  } else if (auto pad = tokenizer.pad_token_id()) {
    data->pad_token_id = *pad;
  } else if (auto eos = tokenizer.eos_token_id()) {
    data->pad_token_id = *eos;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (options.filter_overlong_prompts && ids[i].size() > static_cast<size_t>(options.max_prompt_length)) continue;
    data->prompt_ids.push_back(truncate_prompt(ids[i], options.max_prompt_length, options.truncation, origins[i]));
    if (options.return_full_prompt) data->full_prompts.push_back(std::move(texts[i]));
    data->rows.push_back(std::move(rows[i]));
    data->origins.push_back(std::move(origins[i]));
  }
  data->options = std::move(options);
  data_ = std::move(data);
}

RLHFDataset RLHFDataset::from_file(const std::string& path, const tokenizer::Tokenizer& tokenizer,
                                   RLHFDatasetOptions options) {
  const std::filesystem::path p(path);
  const std::string ext = p.extension().string();
  VERL_CHECK_AS(DataError, ext == ".jsonl" || ext == ".json", "unsupported data file format: ", display_path(path),
                " (expected .jsonl or .json; convert Parquet to JSONL, or use the Python package)");
  const std::string text = read_text(path);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (ext == ".json" && first != std::string::npos && text[first] == '[') {  // a JSON array of rows
    const std::string shown = display_path(path);
    Json array = untrusted::parse_json<DataError>(text, shown);
    std::vector<Json> rows;
    std::vector<std::string> origins;
    for (size_t i = 0; i < array.size(); ++i) {  // item positions (1-based), as the Python reader reports them
      rows.push_back(std::move(array[i]));
      origins.push_back(shown + ":" + std::to_string(i + 1));
    }
    return RLHFDataset(std::move(rows), tokenizer, std::move(options), std::move(origins));
  }
  auto [rows, origins] = json_lines(text, path);
  return RLHFDataset(std::move(rows), tokenizer, std::move(options), std::move(origins));
}

int64_t RLHFDataset::size() const { return static_cast<int64_t>(data_->rows.size()); }

const Json& RLHFDataset::row(int64_t index) const {
  return data_->rows[static_cast<size_t>(row_plan::normalize_index(size(), index))];
}

const std::vector<std::int32_t>& RLHFDataset::prompt_ids(int64_t index) const {
  return data_->prompt_ids[static_cast<size_t>(row_plan::normalize_index(size(), index))];
}

const std::string& RLHFDataset::origin(int64_t index) const {
  return data_->origins[static_cast<size_t>(row_plan::normalize_index(size(), index))];
}

const RLHFDatasetOptions& RLHFDataset::options() const { return data_->options; }

int64_t RLHFDataset::pad_token_id() const { return data_->pad_token_id; }

DataProto RLHFDataset::batch(const std::vector<int64_t>& indices) const {
  VERL_CHECK_AS(DataError, !indices.empty(), "RLHFDataset::batch: no rows selected");
  const Data& d = *data_;
  const auto bs = static_cast<int64_t>(indices.size());
  const int64_t length = d.options.max_prompt_length;
  torch::Tensor input_ids = torch::full({bs, length}, d.pad_token_id, torch::kLong);
  torch::Tensor attention_mask = torch::zeros({bs, length}, torch::kLong);
  auto ids_acc = input_ids.accessor<int64_t, 2>();
  auto mask_acc = attention_mask.accessor<int64_t, 2>();

  DataProto::ColumnMap columns;
  std::vector<size_t> rows;
  for (int64_t index : indices) rows.push_back(static_cast<size_t>(row_plan::normalize_index(size(), index)));
  // Row keys become columns; as in verl's collate_fn, a key must be present in every row of the batch. The
  // tensors and the columns computed below replace row keys of the same name, as verl's __getitem__ does.
  for (size_t r : rows) {
    for (const auto& [key, value] : d.rows[r].items()) {
      if (key != d.options.prompt_key && key != "extra_info" && key != "input_ids" && key != "attention_mask" &&
          key != "position_ids") {
        columns.emplace(key, DataProto::Column{});
      }
    }
  }
  for (auto& [key, column] : columns) {
    for (size_t r : rows) {
      VERL_CHECK_AS(DataError, d.rows[r].contains(key), "RLHFDataset::batch: column '", untrusted::escape(key),
                    "' is missing in ",
                    d.origins[r], " but present in other rows of the batch");
      column.push_back(d.rows[r][key]);
    }
  }

  DataProto::Column extra_info, index, tools_kwargs, interaction_kwargs, raw_prompt_ids, raw_prompt, full_prompts;
  for (int64_t b = 0; b < bs; ++b) {
    const size_t r = rows[static_cast<size_t>(b)];
    const std::vector<std::int32_t>& ids = d.prompt_ids[r];
    const int64_t pad = length - static_cast<int64_t>(ids.size());
    for (size_t t = 0; t < ids.size(); ++t) {
      ids_acc[b][pad + static_cast<int64_t>(t)] = ids[t];
      mask_acc[b][pad + static_cast<int64_t>(t)] = 1;
    }
    const Json& row = d.rows[r];
    Json extra = row.contains("extra_info") && row["extra_info"].is_object() ? row["extra_info"] : Json::object();
    index.push_back(extra.contains("index") ? extra["index"] : Json(0));
    tools_kwargs.push_back(extra.contains("tools_kwargs") ? extra["tools_kwargs"] : Json::object());
    interaction_kwargs.push_back(extra.contains("interaction_kwargs") ? extra["interaction_kwargs"] : Json::object());
    raw_prompt_ids.push_back(Json(ids));
    if (d.options.return_raw_chat) raw_prompt.push_back(row[d.options.prompt_key]);
    if (d.options.return_full_prompt) full_prompts.push_back(Json(d.full_prompts[r]));
    extra_info.push_back(std::move(extra));
  }
  columns["extra_info"] = std::move(extra_info);
  columns["index"] = std::move(index);
  columns["tools_kwargs"] = std::move(tools_kwargs);
  columns["interaction_kwargs"] = std::move(interaction_kwargs);
  columns["raw_prompt_ids"] = std::move(raw_prompt_ids);
  if (d.options.return_raw_chat) columns["raw_prompt"] = std::move(raw_prompt);
  if (d.options.return_full_prompt) columns["full_prompts"] = std::move(full_prompts);

  torch::Tensor position_ids = (attention_mask.cumsum(-1) - 1).clamp_min(0);
  return DataProto({{"input_ids", input_ids}, {"attention_mask", attention_mask}, {"position_ids", position_ids}},
                   std::move(columns));
}

}  // namespace verl::data
