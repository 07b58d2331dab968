// BPE: vocab/merges loading and the merge loop (a port of HF's Word::merge_all ordering).
#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>

#include "tokenizer/json_fields.h"
#include "tokenizer/unicode.h"
#include "verl/core/error.h"

namespace verl::tokenizer {
namespace {

// Words longer than this are not cached (as in HF): they are rare and would crowd the cache.
constexpr std::size_t kMaxCachedWordBytes = 256;
constexpr std::size_t kCacheShards = 16;
constexpr std::size_t kCacheShardCapacity = 8192;

std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

}  // namespace

// Sharded so that encode_batch's threads rarely wait on each other; a full shard is cleared
// (bounded memory, and the cache follows the text it currently sees).
struct BpeModel::Cache {
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<std::int32_t>, StringHash, std::equal_to<>> words;
  };
  std::array<Shard, kCacheShards> shards;

  Shard& shard(std::string_view word) { return shards[StringHash{}(word) % kCacheShards]; }
};

BpeModel::BpeModel(const JsonTree& model, const std::string& file) : cache_(std::make_unique<Cache>()) {
  const FieldPath path("model");
  require_object(model, file, path);
  const JsonTree* vocab = find(model, "vocab");
  VERL_CHECK_AS(CheckpointError, vocab != nullptr && vocab->is_object(), file,
                ": model.vocab is missing or not an object");
  const JsonTree& merges = require_array(model, "merges", file, path);
  if (const JsonTree* dropout = find_set(model, "dropout")) {
    VERL_CHECK_AS(CheckpointError, dropout->is_number(), file, ": model.dropout must be a number or null, got ",
                  describe(*dropout));
    // Dropout makes encoding random; HF treats 0 as off.
    VERL_CHECK(dropout->get<double>() == 0.0, file, ": model.dropout=", dropout->dump(),
               " is not supported (BPE dropout is a training-time augmentation)");
  }
  unk_token_ = optional_string(model, "unk_token", file, path);
  continuing_subword_prefix_ = optional_string(model, "continuing_subword_prefix", file, path).value_or("");
  end_of_word_suffix_ = optional_string(model, "end_of_word_suffix", file, path).value_or("");
  fuse_unk_ = optional_bool(model, "fuse_unk", false, file, path);
  byte_fallback_ = optional_bool(model, "byte_fallback", false, file, path);
  ignore_merges_ = optional_bool(model, "ignore_merges", false, file, path);

  vocab_.reserve(vocab->size());
  std::int32_t max_id = -1;
  for (const auto& [token, id_value] : vocab->items()) {
    const std::optional<std::int32_t> id = as_id(id_value, kMaxId + std::int64_t{1});
    VERL_CHECK_AS(CheckpointError, id.has_value(), file, ": model.vocab['", escape(token), "'] must be an id in [0, ",
                  kMaxId, "], got ", describe(id_value));
    vocab_[token] = *id;
    max_id = std::max(max_id, *id);
  }
  // id -> token. HF keeps a hash map and accepts any ids, however sparse (one token at id
  // 2^28-1 loads there); real files number their tokens 0..n-1. So the ids up to a bound
  // proportional to the number of tokens go in a table and any id beyond it in a map: an
  // untrusted id cannot size the table, and sparse files still load with HF's ids.
  const std::size_t table_size =
      std::min(static_cast<std::size_t>(max_id + 1), 2 * vocab_.size() + kSparseIdSlack);
  vocab_r_.assign(table_size, nullptr);
  for (const auto& [token, id] : vocab_) {
    if (static_cast<std::size_t>(id) < table_size) {
      vocab_r_[static_cast<std::size_t>(id)] = &token;
    } else {
      vocab_r_sparse_[id] = &token;
    }
  }
  if (unk_token_) {
    VERL_CHECK_AS(CheckpointError, vocab_.count(*unk_token_) == 1, file, ": model.unk_token '", escape(*unk_token_),
                  "' is not in model.vocab");
  }

  // Merges come as "a b" strings (older files) or [a, b] pairs; rank = position. A later duplicate
  // of a pair replaces the earlier one, as in HF's HashMap collect.
  merges_.reserve(merges.size());
  std::uint32_t rank = 0;
  std::string merged;
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const JsonTree& m = merges[i];
    std::string_view left, right;
    if (m.is_string()) {
      const std::string& line = m.get_ref<const std::string&>();
      if (line.rfind("#version", 0) == 0) continue;
      const std::size_t space = line.find(' ');
      VERL_CHECK_AS(CheckpointError, space != std::string::npos && line.find(' ', space + 1) == std::string::npos, file,
                    ": model.merges[", i, "] = '", escape(line), "' is not two tokens separated by one space");
      left = std::string_view(line).substr(0, space);
      right = std::string_view(line).substr(space + 1);
    } else {
      // Never dump() the value into the message: it may be nested deep, or huge.
      VERL_CHECK_AS(CheckpointError, m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), file,
                    ": model.merges[", i, "] must be \"a b\" or [\"a\", \"b\"], got ", describe(m));
      left = m[0].get_ref<const std::string&>();
      right = m[1].get_ref<const std::string&>();
    }
    const auto left_id = token_to_id(left);
    const auto right_id = token_to_id(right);
    VERL_CHECK_AS(CheckpointError, left_id && right_id, file, ": model.merges[", i, "] uses '",
                  escape(left_id ? right : left), "', which is not in model.vocab");
    VERL_CHECK_AS(CheckpointError, right.size() >= continuing_subword_prefix_.size(), file, ": model.merges[", i,
                  "]: '", escape(right), "' is shorter than continuing_subword_prefix");
    merged.assign(left);
    merged.append(right.substr(continuing_subword_prefix_.size()));
    const auto merged_id = token_to_id(merged);
    VERL_CHECK_AS(CheckpointError, merged_id.has_value(), file, ": model.merges[", i, "] makes '", escape(merged),
                  "', which is not in model.vocab");
    merges_[pair_key(*left_id, *right_id)] = Merge{rank, *merged_id};
    ++rank;
  }
}

BpeModel::~BpeModel() = default;

std::optional<std::int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(std::int32_t id) const {
  if (id < 0) return nullptr;
  if (static_cast<std::size_t>(id) < vocab_r_.size()) return vocab_r_[static_cast<std::size_t>(id)];
  return vocab_r_sparse_.empty() ? nullptr : id_to_token_sparse(id);
}

const std::string* BpeModel::id_to_token_sparse(std::int32_t id) const {
  const auto it = vocab_r_sparse_.find(id);
  return it == vocab_r_sparse_.end() ? nullptr : it->second;
}

const BpeModel::Merge* BpeModel::find_merge(std::int32_t left, std::int32_t right) const {
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::tokenize(std::string_view word, std::vector<std::int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    Cache::Shard& shard = cache_->shard(word);
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (const auto it = shard.words.find(word); it != shard.words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t first = out.size();
  merge_word(word, out);
  if (cacheable) {
    Cache::Shard& shard = cache_->shard(word);
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (shard.words.size() >= kCacheShardCapacity) shard.words.clear();
    shard.words.emplace(std::string(word), std::vector<std::int32_t>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<std::int32_t>& out) const {
  struct Symbol {
    std::int32_t id;
    std::int32_t prev;
    std::int32_t next;
    std::uint32_t len;  // bytes of the word this symbol covers; 0 once merged into its left neighbour
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  const auto add = [&](std::int32_t id, std::size_t byte_len) {
    const auto n = static_cast<std::int32_t>(symbols.size());
    if (!symbols.empty()) symbols.back().next = n;
    symbols.push_back(Symbol{id, n - 1, -1, static_cast<std::uint32_t>(byte_len)});
  };

  // One symbol per character (prefix/suffix marked as HF does); unknown characters become bytes
  // (byte_fallback), the unk token (fused if fuse_unk), or are dropped when there is no unk token.
  std::optional<std::pair<std::int32_t, std::size_t>> unk;
  std::string piece;
  for (std::size_t pos = 0; pos < word.size();) {
    const std::size_t start = pos;
    pos += unicode::utf8_length(static_cast<unsigned char>(word[pos]));
    if (pos > word.size()) pos = word.size();
    const std::string_view ch = word.substr(start, pos - start);
    const bool is_first = start == 0, is_last = pos == word.size();
    std::optional<std::int32_t> id;
    if (is_first || continuing_subword_prefix_.empty()) {
      if (!is_last || end_of_word_suffix_.empty()) {
        id = token_to_id(ch);
      } else {
        piece.assign(ch);
        piece += end_of_word_suffix_;
        id = token_to_id(piece);
      }
    } else {
      piece = continuing_subword_prefix_;
      piece += ch;
      if (is_last) piece += end_of_word_suffix_;
      id = token_to_id(piece);
    }
    if (id) {
      if (unk) {
        add(unk->first, unk->second);
        unk.reset();
      }
      add(*id, ch.size());
      continue;
    }
    if (byte_fallback_) {
      std::vector<std::int32_t> bytes;
      for (unsigned char b : ch) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        const auto byte_id = token_to_id(name);
        if (!byte_id) break;
        bytes.push_back(*byte_id);
      }
      if (bytes.size() == ch.size()) {
        for (std::int32_t b : bytes) add(b, 1);
        continue;
      }
    }
    if (unk_token_) {
      const std::int32_t unk_id = vocab_.find(*unk_token_)->second;
      if (unk && fuse_unk_) {
        unk->second += ch.size();
      } else {
        if (unk) add(unk->first, unk->second);
        unk = std::make_pair(unk_id, ch.size());
      }
    }
  }
  if (unk) add(unk->first, unk->second);

  // Lowest rank first, leftmost among equal ranks; stale entries are skipped when popped.
  struct Candidate {
    std::size_t pos;
    std::uint32_t rank;
    std::int32_t new_id;
  };
  const auto later = [](const Candidate& a, const Candidate& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later);
  for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
    if (const Merge* m = find_merge(symbols[i].id, symbols[i + 1].id)) queue.push(Candidate{i, m->rank, m->new_id});
  }
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& current = symbols[top.pos];
    if (current.len == 0 || current.next == -1) continue;
    const auto next_pos = static_cast<std::size_t>(current.next);
    const Symbol right = symbols[next_pos];
    const Merge* target = find_merge(current.id, right.id);
    if (target == nullptr || target->new_id != top.new_id) continue;

    current.id = top.new_id;
    current.len += right.len;
    current.next = right.next;
    symbols[next_pos].len = 0;
    if (right.next > -1 && static_cast<std::size_t>(right.next) < symbols.size()) {
      symbols[static_cast<std::size_t>(right.next)].prev = static_cast<std::int32_t>(top.pos);
    }
    if (current.prev >= 0) {
      const Symbol& prev = symbols[static_cast<std::size_t>(current.prev)];
      if (const Merge* m = find_merge(prev.id, current.id)) {
        queue.push(Candidate{static_cast<std::size_t>(current.prev), m->rank, m->new_id});
      }
    }
    if (current.next >= 0 && static_cast<std::size_t>(current.next) < symbols.size()) {
      const Symbol& next = symbols[static_cast<std::size_t>(current.next)];
      if (const Merge* m = find_merge(current.id, next.id)) queue.push(Candidate{top.pos, m->rank, m->new_id});
    }
  }
  for (const Symbol& s : symbols) {
    if (s.len != 0) out.push_back(s.id);
  }
}

}  // namespace verl::tokenizer
