// verl::tokenizer::Tokenizer: loading tokenizer.json (+ tokenizer_config.json), the encode pipeline
// (added tokens -> normalizer -> pre-tokenizer -> BPE -> post-processor) and decoding.
#include "verl/tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/untrusted.h"
#include "tokenizer/bpe.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"
#include "verl/core/error.h"
#include "verl/core/json.h"

namespace verl::tokenizer {
namespace {

namespace fs = std::filesystem;
using untrusted::display_path;

std::string read_file(const fs::path& path) {
  std::string error;
  std::optional<std::string> text = untrusted::try_read_file(path.string(), error);
  VERL_CHECK_AS(CheckpointError, text.has_value(), "tokenizer file: ", error);
  return std::move(*text);
}

// A chat template file: its text must be UTF-8 (transformers reads it as such), else it would
// reach Python as a bare UnicodeDecodeError.
std::string read_template(const fs::path& path) {
  std::string text = read_file(path);
  const std::size_t bad = unicode::find_invalid_utf8(text);
  VERL_CHECK_AS(CheckpointError, bad == std::string::npos, display_path(path), ": not valid UTF-8 (byte ",
                bad, ")");
  return text;
}

// ---- normalizer ------------------------------------------------------------------------------

// The normalizer as the list of NFC steps it flattens to (Sequence nests, null is empty).
void parse_normalizer(const JsonTree& config, const std::string& file, const FieldPath& path, int depth, int& nfc_steps) {
  if (config.is_null()) return;
  const std::string& type = component_type(config, file, path);
  if (type == "NFC") {
    ++nfc_steps;
  } else if (type == "Sequence") {
    check_sequence_depth(depth, file, path);
    const JsonTree& list = require_array(config, "normalizers", file, path);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const FieldPath item(path, "normalizers", i);
      parse_normalizer(list[i], file, item, depth + 1, nfc_steps);
    }
  } else {
    VERL_FAIL(InvalidArgument, file, ": ", path, ".type '", escape(type),
              "' is not supported (supported normalizers: NFC, Sequence)");
  }
}

// ---- added tokens ----------------------------------------------------------------------------

// The added-token patterns, and for every position of a text the longest of them that starts there, in time linear
// in the text whatever the patterns' lengths (a trie walked from each position costs text length x longest pattern).
// An Aho-Corasick automaton over the reversed patterns, run once from the text's end: after reading the text from
// its end down to position p, the automaton's state is the longest reversed-pattern prefix that the read bytes end
// with, and the longest pattern among the state and its failure chain is the longest pattern starting at p. Taking
// the longest match at the leftmost position, then resuming after it, is the LeftmostLongest Aho-Corasick matching
// HF uses (AddedVocabulary's split_with_indices).
class AddedTokenMatcher {
 public:
  struct Match {
    std::uint32_t length = 0;  // 0: no pattern starts here
    std::int32_t id = -1;
  };

  // Adds a pattern (ignored when empty; among equal patterns the first id wins). Invalidates finish().
  void insert(std::string_view pattern, std::int32_t id) {
    if (pattern.empty()) return;
    std::uint32_t node = 0;
    for (auto it = pattern.rbegin(); it != pattern.rend(); ++it) {
      const auto b = static_cast<unsigned char>(*it);
      std::uint32_t next = child(node, b);
      if (next == kNone) {
        next = static_cast<std::uint32_t>(nodes_.size());
        nodes_.emplace_back();
        nodes_[next].depth = nodes_[node].depth + 1;
        nodes_[node].children.emplace_back(b, next);
      }
      node = next;
    }
    if (nodes_[node].id < 0) nodes_[node].id = id;
    finished_ = false;
  }

  // Failure links and each state's longest output, breadth first (a failure link points to a shallower state).
  void finish() {
    root_next_.fill(0);
    for (const auto& [b, next] : nodes_[0].children) root_next_[b] = next;
    std::deque<std::uint32_t> queue;
    for (const auto& [b, next] : nodes_[0].children) {
      nodes_[next].fail = 0;
      queue.push_back(next);
    }
    while (!queue.empty()) {
      const std::uint32_t node = queue.front();
      queue.pop_front();
      Node& n = nodes_[node];
      n.output = n.id >= 0 ? Match{n.depth, n.id} : nodes_[n.fail].output;
      for (const auto& [b, next] : n.children) {
        nodes_[next].fail = step(n.fail, b);
        queue.push_back(next);
      }
    }
    finished_ = true;
  }

  bool empty() const { return nodes_.size() == 1; }

  // out[p] = the longest pattern starting at text[p], for every p (out is resized to text.size()).
  void longest_matches(std::string_view text, std::vector<Match>& out) const {
    VERL_CHECK(finished_, "AddedTokenMatcher: finish() after the last insert()");
    out.assign(text.size(), Match{});
    std::uint32_t state = 0;
    for (std::size_t p = text.size(); p-- > 0;) {
      state = step(state, static_cast<unsigned char>(text[p]));
      out[p] = nodes_[state].output;
    }
  }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Node {
    std::vector<std::pair<unsigned char, std::uint32_t>> children;
    std::uint32_t fail = 0;
    std::uint32_t depth = 0;
    std::int32_t id = -1;  // the pattern ending here (reversed), if any
    Match output;          // the longest pattern among this state and its failure chain
  };

  std::uint32_t child(std::uint32_t node, unsigned char b) const {
    for (const auto& [byte, next] : nodes_[node].children) {
      if (byte == b) return next;
    }
    return kNone;
  }
  // The automaton's transition: the deepest state reachable by `b` from `node` or a state on its failure chain; the
  // root's transitions are a table (every failure chain ends there, and most bytes of a text leave it at once).
  std::uint32_t step(std::uint32_t node, unsigned char b) const {
    while (node != 0) {
      if (const std::uint32_t next = child(node, b); next != kNone) return next;
      node = nodes_[node].fail;
    }
    return root_next_[b];
  }

  std::vector<Node> nodes_{Node{}};
  std::array<std::uint32_t, 256> root_next_{};
  bool finished_ = true;  // no patterns: nothing to finish
};

struct Segment {
  std::size_t start;
  std::size_t end;
  std::int32_t id;  // -1: text to tokenize
};

bool ends_with_word(std::string_view text) { return !text.empty() && unicode::is_word_char(unicode::last_codepoint(text)); }
bool starts_with_word(std::string_view text) {
  std::size_t pos = 0;
  return !text.empty() && unicode::is_word_char(unicode::next_codepoint(text, pos));
}
// Start of the whitespace run that ends `text` (text.size() if none).
std::size_t trailing_space_start(std::string_view text) {
  std::size_t start = text.size();
  while (start > 0) {
    std::size_t begin = start - 1;
    while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
    std::size_t pos = begin;
    if (!unicode::is_white_space(unicode::next_codepoint(text, pos))) break;
    start = begin;
  }
  return start;
}
// Length of the whitespace run that starts `text`.
std::size_t leading_space_length(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t next = pos;
    if (!unicode::is_white_space(unicode::next_codepoint(text, next))) break;
    pos = next;
  }
  return pos;
}

// ---- post-processor ------------------------------------------------------------------------

// HF's post-processors hand a list of encodings from step to step: the input is one encoding (the text);
// TemplateProcessing returns one encoding per piece of its template (so the next step may see a pair);
// Bert/RobertaProcessing add cls/sep to the one or two encodings they get and keep their number; ByteLevel only
// adjusts offsets; the result is the concatenation. Which ids end up where depends on the file alone, never on the
// text, so the chain runs once at load time on a placeholder for the text (kTextPlaceholder) and folds into the ids
// before and after it. Deques: a long chain of Bert steps prepends in O(1) each (an untrusted file chooses its
// length).
constexpr std::int32_t kTextPlaceholder = -1;
using PostEncodings = std::vector<std::deque<std::int32_t>>;

// What the whole post-processor adds around a single sequence.
struct SpecialTokensAround {
  std::vector<std::int32_t> before;
  std::vector<std::int32_t> after;
};

// BertProcessing's / RobertaProcessing's "cls" / "sep": [token, id].
std::int32_t special_id(const JsonTree& config, const char* key, const std::string& file, const FieldPath& path) {
  const JsonTree* value = find(config, key);
  VERL_CHECK_AS(CheckpointError, value != nullptr, file, ": ", path, ".", key, " is missing (must be [token, id])");
  const bool pair = value->is_array() && value->size() == 2 && (*value)[0].is_string();
  const std::optional<std::int32_t> id = pair ? as_id((*value)[1]) : std::nullopt;
  VERL_CHECK_AS(CheckpointError, id.has_value(), file, ": ", path, ".", key,
                " must be [token, id] with an id in [0, 2^31), got ", describe(*value));
  return *id;
}

// A template is for a single sequence or a pair; HF tokenizers panics ("not yet implemented") when a template step
// receives more (a template of three pieces before it), so such a file is refused at load.
void check_arity(const PostEncodings& encodings, const std::string& type, const std::string& file,
                 const FieldPath& path) {
  VERL_CHECK_AS(CheckpointError, encodings.size() <= 2, file, ": ", path, " (", escape(type), ") receives ",
                encodings.size(), " sequences from the post-processor steps before it; it takes one or two (HF "
                "tokenizers cannot run this file either)");
}

// TemplateProcessing: "single" for one encoding, "pair" for two, e.g.
// "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]
// "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
PostEncodings apply_template(const JsonTree& config, PostEncodings in, const std::string& file, const FieldPath& path) {
  const bool pair = in.size() == 2;
  const char* key = pair ? "pair" : "single";
  const JsonTree& pieces = require_array(config, key, file, path);
  const JsonTree* specials = find_set(config, "special_tokens");
  if (specials != nullptr) {
    const FieldPath specials_path(path, "special_tokens");
    require_object(*specials, file, specials_path);
  }
  PostEncodings out;
  std::array<bool, 2> used{};
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const JsonTree& piece = pieces[i];
    const FieldPath where(path, key, i);
    if (const JsonTree* sequence = find(piece, "Sequence"); sequence != nullptr) {
      const FieldPath sequence_path(where, "Sequence");
      const std::string& name = require_string(*sequence, "id", file, sequence_path);
      const std::size_t index = name == "A" ? 0 : name == "B" ? 1 : 2;
      VERL_CHECK_AS(CheckpointError, index < in.size(), file, ": ", sequence_path, ".id must be ",
                    pair ? "\"A\" or \"B\"" : "\"A\" (a single-sequence template)", ", got '", escape(name), "'");
      VERL_CHECK_AS(CheckpointError, !used[index], file, ": ", where, ": the template uses sequence ", name,
                    " more than once");
      used[index] = true;
      out.push_back(std::move(in[index]));
      continue;
    }
    const JsonTree* special = find(piece, "SpecialToken");
    VERL_CHECK_AS(CheckpointError, special != nullptr, file, ": ", where,
                  " must be {\"Sequence\": ...} or {\"SpecialToken\": ...}, got ", describe(piece));
    const FieldPath special_path(where, "SpecialToken");
    const std::string& name = require_string(*special, "id", file, special_path);
    const JsonTree* entry = specials != nullptr ? find(*specials, name) : nullptr;
    VERL_CHECK_AS(CheckpointError, entry != nullptr, file, ": ", path, ".special_tokens has no entry '", escape(name),
                  "'");
    VERL_CHECK_AS(CheckpointError, entry->is_object(), file, ": ", path, ".special_tokens['", escape(name),
                  "'] must be an object, got ", describe(*entry));
    const JsonTree* ids = find(*entry, "ids");
    VERL_CHECK_AS(CheckpointError, ids != nullptr && ids->is_array(), file, ": ", path, ".special_tokens['",
                  escape(name), "'].ids must be an array of ids, got ", ids ? describe(*ids) : std::string("nothing"));
    std::deque<std::int32_t>& tokens = out.emplace_back();
    for (std::size_t k = 0; k < ids->size(); ++k) {
      const std::optional<std::int32_t> id = as_id((*ids)[k]);
      VERL_CHECK_AS(CheckpointError, id.has_value(), file, ": ", path, ".special_tokens['", escape(name), "'].ids[", k,
                    "] must be an id in [0, 2^31), got ", describe((*ids)[k]));
      tokens.push_back(*id);
    }
  }
  return out;
}

void apply_post_processor(const JsonTree& config, const std::string& file, const FieldPath& path, int depth,
                          PostEncodings& encodings) {
  if (config.is_null()) return;
  const std::string& type = component_type(config, file, path);
  if (type == "ByteLevel") return;  // only adjusts offsets
  if (type == "Sequence") {
    check_sequence_depth(depth, file, path);
    const JsonTree& list = require_array(config, "processors", file, path);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const FieldPath item(path, "processors", i);
      apply_post_processor(list[i], file, item, depth + 1, encodings);
    }
    return;
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const std::int32_t cls = special_id(config, "cls", file, path), sep = special_id(config, "sep", file, path);
    encodings[0].push_front(cls);  // [CLS] A [SEP] (Bert) / <s> A </s> (Roberta)
    encodings[0].push_back(sep);
    for (std::size_t i = 1; i < encodings.size(); ++i) {  // each further one: B [SEP] (Bert) / </s> B </s> (Roberta)
      if (type == "RobertaProcessing") encodings[i].push_front(sep);
      encodings[i].push_back(sep);
    }
    return;
  }
  if (type == "TemplateProcessing") {
    check_arity(encodings, type, file, path);
    encodings = apply_template(config, std::move(encodings), file, path);
    return;
  }
  VERL_FAIL(InvalidArgument, file, ": ", path, ".type '", escape(type),
            "' is not supported (supported post-processors: ByteLevel, TemplateProcessing, BertProcessing, "
            "RobertaProcessing, Sequence)");
}

// A special-token value of tokenizer_config.json: "text" or {"content": "text", ...}.
template <typename J>
std::optional<std::string> token_content(const J& value) {
  if (value.is_string()) return value.template get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string()) {
    return value["content"].template get<std::string>();
  }
  return std::nullopt;
}

constexpr const char* kNamedSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                               "pad_token", "cls_token", "mask_token"};

}  // namespace

// ---- Impl ----------------------------------------------------------------------------------

struct Tokenizer::Impl {
  std::string file;  // for messages
  std::unique_ptr<BpeModel> model;
  int nfc_steps = 0;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  SpecialTokensAround post_processor;  // every step of the post-processor folded into one (see load)
  bool byte_level_decoder = false;

  // Added vocabulary, as HF's AddedVocabulary keeps it.
  std::vector<AddedToken> added;                              // by id order of first assignment
  std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>> added_to_id;  // content -> id
  std::unordered_map<std::int32_t, std::size_t> id_to_added;  // id -> index in `added`
  std::unordered_set<std::string> special_contents;
  AddedTokenMatcher raw_tokens;         // tokens with normalized=false, matched on the raw text
  AddedTokenMatcher normalized_tokens;  // tokens with normalized=true, matched on the normalized text

  std::vector<std::pair<std::string, std::string>> special_tokens;  // special_tokens_map
  std::vector<std::pair<std::string, std::string>> templates;

  // Parses tokenizer.json (and the config, if any); `file`/`config_file` name them in errors.
  static std::shared_ptr<Impl> load(std::string_view tokenizer_json, const std::string& file, const Json* config,
                                    const std::string& config_file);

  std::string normalize(std::string_view text) const {
    std::string out(text);
    for (int i = 0; i < nfc_steps; ++i) out = unicode::nfc(out);
    return out;
  }
  // The text to tokenize for a raw segment: the segment itself unless normalization changes it
  // (the common case), so that it need not be copied.
  std::string_view normalized_view(std::string_view text, std::string& storage) const {
    if (nfc_steps == 0 || unicode::nfc_quick_check(text)) return text;
    storage = normalize(text);
    return storage;
  }

  std::optional<std::int32_t> token_to_id(std::string_view token) const {
    if (const auto it = added_to_id.find(token); it != added_to_id.end()) return it->second;
    return model->token_to_id(token);
  }

  const std::string* id_to_token(std::int32_t id) const {
    if (const auto it = id_to_added.find(id); it != id_to_added.end()) return &added[it->second].content;
    return model->id_to_token(id);
  }

  // Only for ids from the matchers, which are all added tokens' ids (at() cannot throw).
  const AddedToken& added_by_id(std::int32_t id) const { return added[id_to_added.at(id)]; }

  // HF's AddedVocabulary::add_tokens for the file's list, then refresh_added_tokens.
  void add_tokens(const std::vector<AddedToken>& tokens) {
    // A token equal (content and flags) to one already stored is skipped, as HF does.
    const auto key = [](const AddedToken& t) {
      return t.content + '\0' + char('0' + t.single_word) + char('0' + t.lstrip) + char('0' + t.rstrip) +
             char('0' + t.normalized) + char('0' + t.special);
    };
    std::unordered_set<std::string> stored_keys;
    std::optional<std::int32_t> max_added;  // ids only ever grow, so a running maximum will do
    std::vector<const AddedToken*> special_list, plain_list;
    for (const AddedToken& token : tokens) {
      if (token.special && !token.content.empty() && special_contents.insert(token.content).second) {
        special_list.push_back(&token);
      }
    }
    for (const AddedToken& token : tokens) {
      if (token.content.empty() || stored_keys.count(key(token)) != 0) continue;
      std::int32_t id = 0;
      if (const auto existing = token_to_id(token.content)) {
        id = *existing;
      } else {
        // The next id after the model vocab and the added tokens so far (HF ignores the file's id).
        const auto model_size = static_cast<std::int32_t>(model->vocab_size());
        if (!max_added) {
          id = model_size;
        } else {
          id = (*max_added >= model_size || model_size == 0) ? *max_added + 1 : model_size;
        }
      }
      added_to_id[token.content] = id;
      max_added = std::max(max_added.value_or(id), id);
      AddedToken stored = token;
      stored.id = id;
      if (const auto it = id_to_added.find(id); it != id_to_added.end()) {
        stored_keys.erase(key(added[it->second]));
        added[it->second] = stored;
      } else {
        id_to_added[id] = added.size();
        added.push_back(stored);
      }
      stored_keys.insert(key(stored));
      if (special_contents.count(token.content) == 0) plain_list.push_back(&token);
    }
    // Patterns: special tokens first, then the others, each in file order.
    for (const auto* list : {&special_list, &plain_list}) {
      for (const AddedToken* token : *list) {
        const std::int32_t id = *token_to_id(token->content);
        if (token->normalized) {
          normalized_tokens.insert(normalize(token->content), id);
        } else {
          raw_tokens.insert(token->content, id);
        }
      }
    }
    raw_tokens.finish();
    normalized_tokens.finish();
  }

  // HF's AddedVocabulary::find_matches: added tokens and the text between them. `matches` is scratch space.
  void find_matches(std::string_view text, const AddedTokenMatcher& tokens, std::vector<Segment>& out,
                    std::vector<AddedTokenMatcher::Match>& matches) const {
    out.clear();
    if (text.empty() || tokens.empty()) {
      out.push_back(Segment{0, text.size(), -1});
      return;
    }
    tokens.longest_matches(text, matches);
    std::size_t start_offset = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
      const auto [length, id] = matches[pos];
      if (length == 0) {
        ++pos;
        continue;
      }
      std::size_t start = pos, stop = pos + length;
      pos = stop;  // the automaton resumes after the raw match, whatever stripping does
      const AddedToken& token = added_by_id(id);
      if (token.single_word) {
        const bool start_space = start == 0 || !ends_with_word(text.substr(0, start));
        const bool stop_space = stop == text.size() || !starts_with_word(text.substr(stop));
        if (!start_space || !stop_space) continue;
      }
      if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
      if (token.rstrip) stop += leading_space_length(text.substr(stop));
      if (start_offset < start) out.push_back(Segment{start_offset, start, -1});
      out.push_back(Segment{start, stop, id});
      start_offset = stop;
    }
    if (start_offset != text.size()) out.push_back(Segment{start_offset, text.size(), -1});
  }

  void tokenize_plain(std::string_view text, std::vector<std::int32_t>& ids, std::vector<std::string>& pieces) const {
    if (text.empty()) return;
    pieces.clear();
    pieces.emplace_back(text);
    if (pre_tokenizer) pre_tokenizer->apply(pieces);
    for (const std::string& piece : pieces) model->tokenize(piece, ids);
  }

  std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens) const {
    if (const std::size_t bad = unicode::find_invalid_utf8(text); bad != std::string_view::npos) {
      VERL_FAIL(InvalidArgument, "Tokenizer.encode: the text is not valid UTF-8 (byte ", bad, ")");
    }
    std::vector<std::int32_t> ids;
    ids.reserve(text.size() / 3 + 4 + post_processor.before.size() + post_processor.after.size());
    if (add_special_tokens) ids = post_processor.before;
    std::vector<Segment> raw_segments, segments;
    std::vector<std::string> pieces;
    std::string storage;
    std::vector<AddedTokenMatcher::Match> matches;
    find_matches(text, raw_tokens, raw_segments, matches);
    for (const Segment& raw : raw_segments) {
      if (raw.id >= 0) {
        ids.push_back(raw.id);
        continue;
      }
      if (raw.end <= raw.start) continue;
      const std::string_view normalized = normalized_view(text.substr(raw.start, raw.end - raw.start), storage);
      find_matches(normalized, normalized_tokens, segments, matches);
      for (const Segment& seg : segments) {
        if (seg.id >= 0) {
          ids.push_back(seg.id);
        } else if (seg.end > seg.start) {
          tokenize_plain(normalized.substr(seg.start, seg.end - seg.start), ids, pieces);
        }
      }
    }
    if (add_special_tokens) ids.insert(ids.end(), post_processor.after.begin(), post_processor.after.end());
    return ids;
  }

  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens) const {
    std::string out;
    if (!byte_level_decoder) {
      // No decoder: HF joins the tokens with spaces.
      bool first = true;
      for (std::int32_t id : ids) {
        const std::string* token = id_to_token(id);
        if (token == nullptr || (skip_special_tokens && special_contents.count(*token) != 0)) continue;
        if (!first) out += ' ';
        out += *token;
        first = false;
      }
      return out;
    }
    // Byte-level: every token's characters map back to bytes (a token with a character outside
    // the map, e.g. an added token like "héllo", contributes its UTF-8 as is); then the bytes
    // are read as UTF-8 with invalid sequences replaced.
    std::string bytes;
    bytes.reserve(ids.size() * 4);
    for (std::int32_t id : ids) {
      const std::string* token = id_to_token(id);
      if (token == nullptr || (skip_special_tokens && special_contents.count(*token) != 0)) continue;
      const std::size_t mark = bytes.size();
      bool mapped = true;
      for (std::size_t pos = 0; pos < token->size();) {
        const int b = char_to_byte(unicode::next_codepoint(*token, pos));
        if (b < 0) {
          mapped = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!mapped) {
        bytes.resize(mark);
        bytes += *token;
      }
    }
    return unicode::utf8_lossy(bytes);
  }
};

// ---- loading -------------------------------------------------------------------------------

std::shared_ptr<Tokenizer::Impl> Tokenizer::Impl::load(std::string_view tokenizer_json, const std::string& file,
                                                       const Json* config, const std::string& config_file) {
  auto impl = std::make_shared<Impl>();
  impl->file = file;
  const JsonTree root = parse_json_file(tokenizer_json, file);
  VERL_CHECK_AS(CheckpointError, root.is_object(), file, ": not a tokenizer.json (top level is not an object)");
  const JsonTree* model = find(root, "model");
  VERL_CHECK_AS(CheckpointError, model != nullptr && model->is_object(), file,
                ": the \"model\" field is missing or not an object");
  std::string model_type;
  if (const JsonTree* type = find(*model, "type")) {
    VERL_CHECK_AS(CheckpointError, type->is_string(), file, ": model.type must be a string, got ", describe(*type));
    model_type = type->get<std::string>();
  } else if (find(*model, "merges") != nullptr) {
    model_type = "BPE";  // files written before models were tagged
  }
  VERL_CHECK(model_type == "BPE", file, ": model.type '", escape(model_type),
             "' is not supported (only BPE models, e.g. GPT-2/Llama-3/Qwen byte-level BPE)");
  impl->model = std::make_unique<BpeModel>(*model, file);

  // Components are read in place (never copied: a copy of a JSON value recurses).
  if (const JsonTree* normalizer = find_set(root, "normalizer")) {
    parse_normalizer(*normalizer, file, FieldPath("normalizer"), 0, impl->nfc_steps);
  }
  if (const JsonTree* pre_tokenizer = find_set(root, "pre_tokenizer")) {
    impl->pre_tokenizer = make_pre_tokenizer(*pre_tokenizer, file, FieldPath("pre_tokenizer"));
  }
  if (const JsonTree* post_processor = find_set(root, "post_processor")) {
    PostEncodings encodings(1);
    encodings[0].push_back(kTextPlaceholder);
    apply_post_processor(*post_processor, file, FieldPath("post_processor"), 0, encodings);
    bool seen_text = false;
    for (const auto& encoding : encodings) {
      for (const std::int32_t id : encoding) {
        if (id == kTextPlaceholder) {
          seen_text = true;
        } else {
          (seen_text ? impl->post_processor.after : impl->post_processor.before).push_back(id);
        }
      }
    }
    VERL_CHECK_AS(CheckpointError, seen_text, file,
                  ": post_processor drops the text (a template that never uses sequence A)");
  }
  if (const JsonTree* decoder = find_set(root, "decoder")) {
    const std::string& type = component_type(*decoder, file, FieldPath("decoder"));
    VERL_CHECK(type == "ByteLevel", file, ": decoder.type '", escape(type),
               "' is not supported (supported decoders: ByteLevel)");
    impl->byte_level_decoder = true;
  }

  std::vector<AddedToken> added;
  if (const JsonTree* list = find_set(root, "added_tokens")) {
    VERL_CHECK_AS(CheckpointError, list->is_array(), file, ": added_tokens must be an array, got ", describe(*list));
    const FieldPath list_path("added_tokens");
    for (std::size_t i = 0; i < list->size(); ++i) {
      const JsonTree& entry = (*list)[i];
      const FieldPath path(list_path, nullptr, i);
      AddedToken token;
      token.content = require_string(entry, "content", file, path);
      // (nlohmann's parser already refuses strings that are not UTF-8; kept as a guard.)
      VERL_CHECK_AS(CheckpointError, unicode::find_invalid_utf8(token.content) == std::string::npos, file, ": ", path,
                    ".content is not valid UTF-8");
      token.single_word = optional_bool(entry, "single_word", false, file, path);
      token.lstrip = optional_bool(entry, "lstrip", false, file, path);
      token.rstrip = optional_bool(entry, "rstrip", false, file, path);
      token.normalized = optional_bool(entry, "normalized", true, file, path);
      token.special = optional_bool(entry, "special", false, file, path);
      added.push_back(std::move(token));
    }
  }
  impl->add_tokens(added);

  if (config != nullptr) {
    VERL_CHECK_AS(CheckpointError, config->is_object(), config_file, ": top level is not an object");
    // transformers' special_tokens_map: the standard names, then model-specific *_token entries.
    std::vector<std::pair<std::string, std::string>> extra;
    for (const char* name : kNamedSpecialTokens) {
      if (config->contains(name)) {
        if (const auto content = token_content((*config)[name])) impl->special_tokens.emplace_back(name, *content);
      }
    }
    for (const auto& item : config->items()) {
      // Not a structured binding: clang before 16 cannot capture one in the lambda below.
      const std::string& key = item.key();
      const Json& value = item.value();
      const bool named = std::any_of(std::begin(kNamedSpecialTokens), std::end(kNamedSpecialTokens),
                                     [&](const char* n) { return key == n; });
      if (named || key.size() <= 6 || key.compare(key.size() - 6, 6, "_token") != 0) continue;
      // (value("__type", "") would throw nlohmann's type_error for a "__type" that is not a string.)
      const bool added_token = value.is_object() && value.contains("__type") && value["__type"] == "AddedToken";
      if (value.is_string() || added_token) {
        if (const auto content = token_content(value)) extra.emplace_back(key, *content);
      }
    }
    if (config->contains("extra_special_tokens") && (*config)["extra_special_tokens"].is_object()) {
      for (const auto& [key, value] : (*config)["extra_special_tokens"].items()) {
        if (const auto content = token_content(value)) extra.emplace_back(key, *content);
      }
    }
    impl->special_tokens.insert(impl->special_tokens.end(), extra.begin(), extra.end());

    if (config->contains("chat_template") && !(*config)["chat_template"].is_null()) {
      const Json& tpl = (*config)["chat_template"];
      if (tpl.is_string()) {
        impl->templates.emplace_back("default", tpl.get<std::string>());
      } else {
        VERL_CHECK_AS(CheckpointError, tpl.is_array(), config_file,
                      ": chat_template must be a string or a list of {name, template}");
        for (const Json& entry : tpl) {
          VERL_CHECK_AS(CheckpointError,
                        entry.is_object() && entry.contains("name") && entry["name"].is_string() &&
                            entry.contains("template") && entry["template"].is_string(),
                        config_file, ": chat_template entries must be {\"name\": ..., \"template\": ...}");
          impl->templates.emplace_back(entry["name"].get<std::string>(), entry["template"].get<std::string>());
        }
      }
    }
  }
  return impl;
}

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json) {
  std::optional<Json> config;
  if (!tokenizer_config_json.empty()) config = untrusted::parse_json<CheckpointError>(tokenizer_config_json, "<tokenizer_config.json>");
  return Tokenizer(Impl::load(tokenizer_json, "<tokenizer.json>", config ? &*config : nullptr, "<tokenizer_config.json>"));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  fs::path file = path;
  std::error_code ec;
  if (fs::is_directory(file, ec)) file /= "tokenizer.json";
  VERL_CHECK_AS(CheckpointError, fs::is_regular_file(file, ec), "tokenizer file '", display_path(file),
                "' does not exist (pass a tokenizer.json or the directory holding it)");
  const fs::path dir = file.parent_path();
  const std::string text = read_file(file);

  std::optional<Json> config;
  const fs::path config_path = dir / "tokenizer_config.json";
  if (fs::is_regular_file(config_path, ec)) {
    config = untrusted::parse_json<CheckpointError>(read_file(config_path), display_path(config_path));
    // Legacy special_tokens_map.json: transformers merges it over the config when the config has
    // no added_tokens_decoder.
    const fs::path legacy = dir / "special_tokens_map.json";
    if (config->is_object() && !config->contains("added_tokens_decoder") && fs::is_regular_file(legacy, ec)) {
      const Json map = untrusted::parse_json<CheckpointError>(read_file(legacy), display_path(legacy));
      if (map.is_object()) {
        for (const auto& [key, value] : map.items()) (*config)[key] = value;
      }
    }
  }
  auto impl = Impl::load(text, display_path(file), config ? &*config : nullptr, display_path(config_path));

  // Template files beside the tokenizer replace the config's templates (transformers' rule).
  std::vector<std::pair<std::string, std::string>> files;
  const fs::path jinja = dir / "chat_template.jinja";
  if (fs::is_regular_file(jinja, ec)) files.emplace_back("default", read_template(jinja));
  const fs::path extra_dir = dir / "additional_chat_templates";
  if (fs::is_directory(extra_dir, ec)) {
    // error_code overloads throughout: a filesystem_error would escape as a library exception.
    std::vector<fs::path> extra;
    for (auto it = fs::directory_iterator(extra_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code file_ec;
      if (it->is_regular_file(file_ec) && it->path().extension() == ".jinja") extra.push_back(it->path());
    }
    VERL_CHECK_AS(CheckpointError, !ec, "cannot list '", display_path(extra_dir), "': ", ec.message());
    std::sort(extra.begin(), extra.end());
    for (const auto& p : extra) {
      const std::string name = p.stem().string();
      VERL_CHECK_AS(CheckpointError, unicode::find_invalid_utf8(name) == std::string::npos, "chat template file '",
                    display_path(p), "': the name is not valid UTF-8");
      files.emplace_back(name, read_template(p));
    }
  }
  if (!files.empty()) impl->templates = std::move(files);
  return Tokenizer(std::move(impl));
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens);
}

std::vector<std::vector<std::int32_t>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                               bool add_special_tokens) const {
  std::vector<std::vector<std::int32_t>> out(texts.size());
  std::size_t total_bytes = 0;
  for (const auto& t : texts) total_bytes += t.size();
  const std::size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  // Threads pay off only when there is enough text to share out.
  const std::size_t workers = std::min({hardware, texts.size(), std::max<std::size_t>(1, total_bytes / 16384)});
  if (workers <= 1) {
    for (std::size_t i = 0; i < texts.size(); ++i) out[i] = impl_->encode(texts[i], add_special_tokens);
    return out;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto work = [&] {
    for (std::size_t i = next++; i < texts.size(); i = next++) {
      try {
        out[i] = impl_->encode(texts[i], add_special_tokens);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (auto& thread : threads) thread.join();
  if (error) std::rethrow_exception(error);
  return out;
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens);
}

std::vector<std::string> Tokenizer::decode_batch(const std::vector<std::vector<std::int32_t>>& ids,
                                                 bool skip_special_tokens) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (const auto& row : ids) out.push_back(impl_->decode(row, skip_special_tokens));
  return out;
}

std::optional<std::int32_t> Tokenizer::token_to_id(std::string_view token) const { return impl_->token_to_id(token); }

std::optional<std::string> Tokenizer::id_to_token(std::int32_t id) const {
  if (const std::string* token = impl_->id_to_token(id)) return *token;
  return std::nullopt;
}

std::size_t Tokenizer::vocab_size(bool with_added_tokens) const {
  std::size_t n = impl_->model->vocab_size();
  if (with_added_tokens) {
    for (const auto& [content, id] : impl_->added_to_id) {
      if (!impl_->model->token_to_id(content)) ++n;
    }
  }
  return n;
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }

const std::vector<std::pair<std::string, std::string>>& Tokenizer::special_tokens_map() const {
  return impl_->special_tokens;
}

std::optional<std::string> Tokenizer::special_token(std::string_view name) const {
  for (const auto& [key, value] : impl_->special_tokens) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::optional<std::int32_t> Tokenizer::bos_token_id() const {
  const auto token = special_token("bos_token");
  return token ? token_to_id(*token) : std::nullopt;
}
std::optional<std::int32_t> Tokenizer::eos_token_id() const {
  const auto token = special_token("eos_token");
  return token ? token_to_id(*token) : std::nullopt;
}
std::optional<std::int32_t> Tokenizer::pad_token_id() const {
  const auto token = special_token("pad_token");
  return token ? token_to_id(*token) : std::nullopt;
}

const std::vector<std::pair<std::string, std::string>>& Tokenizer::chat_templates() const { return impl_->templates; }

std::optional<std::string> Tokenizer::chat_template() const {
  for (const auto& [name, text] : impl_->templates) {
    if (name == "default") return text;
  }
  return std::nullopt;
}

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|im_start|>";
    out += m.role;
    out += '\n';
    out += m.content;
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace verl::tokenizer
