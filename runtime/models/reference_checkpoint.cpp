#include "runtime/models/reference_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/core/warning.h"
#include "runtime/heads/mos_head.h"
#include "runtime/models/awd_lstm.h"
#include "runtime/tensor_files/tensor_file.h"

namespace lmkit {

const config::BoundOptions<ImportCheckpointOptions>& declared_options(config::Tag<ImportCheckpointOptions>) {
  using O = ImportCheckpointOptions;
  using config::Range;
  static const config::BoundOptions<O> options("import_checkpoint", [] {
    std::vector<config::BoundOption<O>> list;
    list.push_back(config::BoundOption<O>("format", &O::format, config::OneOf{{"awd-lstm", "mos", "thesis"}},
                                          "whose code saved it: awd-lstm (Merity et al.), mos (Yang et al.) or thesis "
                                          "(quettabit/awd-lstm-lmkit: base_model./top_model. names)")
                       .required());
    const auto rate = Range::from_up_to(0, 1);
    list.emplace_back("dropout", &O::dropout, rate, "dropout on the last layer's output (nil: 0.4)");
    list.emplace_back("dropouth", &O::dropouth, rate, "dropout between LSTM layers (nil: 0.3; mos 0.225)");
    list.emplace_back("dropouti", &O::dropouti, rate, "dropout on the embedded input (nil: 0.4)");
    list.emplace_back("dropoute", &O::dropoute, rate, "dropout of whole words (nil: 0.1)");
    list.emplace_back("wdrop", &O::wdrop, rate, "DropConnect on the hidden-to-hidden weights (nil: 0.5)");
    list.emplace_back("dropoutl", &O::dropoutl, rate, "mos: dropout on the latent contexts (nil: 0.29)");
    list.emplace_back("floor", &O::floor, Range::from_up_to(0, 1),
                      "a mixture head's log(p + floor): 1e-8 is the MoS code's computation (nil: 0, log p exactly)");
    list.emplace_back("top_model", &O::top_model, config::OneOf{{"smax", "gs_smax", "s_smax", "adv_smax", "plif_smax", "mos", "moc"}},
                      "thesis: the code's --top_model (nil: plif_smax with plif_w, or the top model a gs_smax_*, "
                      "plif_smax_t or adv_smax_alpha setting names; smax, gs_smax, s_smax and adv_smax files hold the same "
                      "entries, and mos and moc files too: then it must be said)");
    list.emplace_back("gs_smax_c", &O::gs_smax_c, "thesis gs_smax: the bending point c (nil: 0)");
    list.emplace_back("gs_smax_k", &O::gs_smax_k, Range::positive(), "thesis gs_smax: the slope k (nil: 2)");
    list.emplace_back("plif_smax_t", &O::plif_smax_t, Range::positive(), "thesis plif_smax: the interval [-t, t] (nil: 20)");
    list.emplace_back("adv_smax_alpha", &O::adv_smax_alpha, Range::at_least(0), "thesis adv_smax: the word-norm factor alpha (nil: 0.005)");
    return list;
  }());
  return options;
}

const config::BoundOptions<ExportCheckpointOptions>& declared_options(config::Tag<ExportCheckpointOptions>) {
  using O = ExportCheckpointOptions;
  static const config::BoundOptions<O> options("export", [] {
    std::vector<config::BoundOption<O>> list;
    list.push_back(config::BoundOption<O>("format", &O::format, config::OneOf{{"awd-lstm", "mos"}},
                                          "the reference structure: awd-lstm (softmax head) or mos (MoS head)")
                       .required());
    list.emplace_back("weight_drop", &O::weight_drop,
                      "names of WeightDrop LSTMs (rnns.L.module.weight_hh_l0_raw); false: a plain nn.LSTM's (rnns.L.weight_hh_l0)");
    list.emplace_back("file_format", &O::file_format, config::OneOf{{"pt", "safetensors", "npz"}},
                      "pt (torch.save), safetensors or npz (default: from the extension)");
    return list;
  }());
  return options;
}

namespace {

// The entries of one LSTM layer, by the lmkit field they fill.
struct LayerEntries {
  std::string w_ih, w_hh, w_hh_dropped, b_ih, b_hh;  // names in the file ("" when absent)
};

// The entries of a reference state_dict, sorted by role; names are the file's own.
struct ReferenceEntries {
  std::map<std::string, torch::Tensor> tensors;  // by the name without a DataParallel prefix
  std::map<std::string, std::string> file_names;  // that name → the file's
  std::map<std::int64_t, LayerEntries> layers;
  std::vector<std::string> unexpected;
};

const std::regex& layer_entry_pattern() {
  static const std::regex pattern(R"(rnns\.([0-9]+)\.(module\.)?(weight_ih_l0|weight_hh_l0_raw|weight_hh_l0|bias_ih_l0|bias_hh_l0))");
  return pattern;
}

// The head's own entries a format's files may hold (the thesis's without their top_model. prefix).
const std::set<std::string>& head_entries(const std::string& format) {
  static const std::set<std::string> none, mos{"prior.weight", "latent.0.weight", "latent.0.bias"},
      thesis{"prior.weight", "latent.0.weight", "latent.0.bias", "plif_w"};
  return format == "mos" ? mos : format == "thesis" ? thesis : none;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// The thesis's code keeps the encoder under base_model. and the decoder and head under top_model.
const std::string kBasePrefix = "base_model.", kTopPrefix = "top_model.";
bool is_top_model_entry(const std::string& name) {
  return starts_with(name, "decoder.") || head_entries("thesis").count(name) > 0;
}

// torch.save([model, criterion, optimizer], f), as awd-lstm-lm's main.py saves: a list, whose
// tensors are named by their element ("0.encoder.weight", "1.tail_vectors"). The element holding an
// embedding (encoder.weight, under a DataParallel or thesis prefix too) is the model: taken, and
// said so; with no such element, or several, the names stay as they are (and are refused as entries
// of no state_dict).
std::map<std::string, torch::Tensor> model_of_saved_list(std::map<std::string, torch::Tensor> read, const std::string& path) {
  static const std::regex element(R"(([0-9]+)\.(.+))");
  std::map<std::string, std::map<std::string, torch::Tensor>> elements;
  static const std::regex bare_index(R"([0-9]+)");
  for (auto& [name, tensor] : read) {
    std::smatch match;
    if (std::regex_match(name, match, element)) {
      elements[match[1].str()][match[2].str()] = tensor;
    } else if (std::regex_match(name, bare_index)) {
      elements[name][""] = tensor;  // a tensor saved as an element of the list itself
    } else {
      return read;  // not a saved list
    }
  }
  std::vector<std::string> models;
  for (const auto& [index, entries] : elements) {
    for (const auto* embedding : {"encoder.weight", "module.encoder.weight", "base_model.encoder.weight"}) {
      if (entries.count(embedding)) {
        models.push_back(index);
        break;
      }
    }
  }
  if (models.size() != 1) return read;
  std::vector<std::string> left_out;
  for (const auto& [index, entries] : elements) {
    if (index == models.front()) continue;
    for (const auto& [name, tensor] : entries) left_out.push_back(name.empty() ? index : index + "." + name);
  }
  std::string note = "import_checkpoint: '" + path + "' holds a saved list (as awd-lstm-lm's main.py saves [model, criterion, "
                     "optimizer]): its element " + models.front() + " is the model, imported";
  if (!left_out.empty()) {
    note += "; the other elements' " + integer_text(static_cast<std::int64_t>(left_out.size())) + " tensors are left out (" +
            left_out.front() + (left_out.size() > 1 ? ", ..." : "") + ")";
  }
  warn(note);
  return std::move(elements[models.front()]);
}

ReferenceEntries sort_entries(std::map<std::string, torch::Tensor> read, const std::string& format) {
  ReferenceEntries entries;
  const bool data_parallel = !read.empty() && std::all_of(read.begin(), read.end(), [](const auto& item) {
    return item.first.rfind("module.", 0) == 0;
  });
  for (auto& [file_name, tensor] : read) {
    auto name = data_parallel ? file_name.substr(7) : file_name;
    if (format == "thesis") {
      // Each name under the prefix of its part: an encoder entry under top_model. is no thesis name.
      const bool base = starts_with(name, kBasePrefix), top = starts_with(name, kTopPrefix);
      const auto bare = base ? name.substr(kBasePrefix.size()) : top ? name.substr(kTopPrefix.size()) : name;
      if ((!base && !top) || is_top_model_entry(bare) != top) {
        entries.unexpected.push_back(file_name);
        continue;
      }
      name = bare;
    }
    entries.file_names[name] = file_name;
    entries.tensors[name] = std::move(tensor);
    std::smatch match;
    if (std::regex_match(name, match, layer_entry_pattern())) {
      if (match[1].length() > 6) {
        entries.unexpected.push_back(file_name);
        continue;
      }
      auto& layer = entries.layers[std::stoll(match[1].str())];
      const auto field = match[3].str();
      if (field == "weight_ih_l0") layer.w_ih = name;
      if (field == "weight_hh_l0_raw") layer.w_hh = name;
      if (field == "weight_hh_l0") layer.w_hh_dropped = name;
      if (field == "bias_ih_l0") layer.b_ih = name;
      if (field == "bias_hh_l0") layer.b_hh = name;
    } else if (name != "encoder.weight" && name != "decoder.weight" && name != "decoder.bias" &&
               !head_entries(format).count(name)) {
      entries.unexpected.push_back(file_name);
    }
  }
  return entries;
}

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(names.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > shown) text += ", … (" + integer_text(names.size()) + " in all)";
  return text;
}

// [40, 9], as the expected shapes are written.
std::string bracketed(torch::IntArrayRef sizes) {
  std::string text = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + integer_text(sizes[i]);
  return text + "]";
}

class ReferenceReader {
 public:
  ReferenceReader(std::string path, std::string format, ReferenceEntries entries)
      : path_(std::move(path)), format_(std::move(format)), entries_(std::move(entries)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw EnvironmentError("import_checkpoint: " + path_ + " (format \"" + format_ + "\"): " + what);
  }

  bool has(const std::string& name) const { return entries_.tensors.count(name) > 0; }

  // The entry, which must exist with `rows` × `cols` (cols < 0: a vector of `rows`; a size < 0 is
  // read from the file and returned through the reference).
  const torch::Tensor& matrix(const std::string& name, std::int64_t& rows, std::int64_t& cols, const std::string& shape_doc) const {
    const auto it = entries_.tensors.find(name);
    if (it == entries_.tensors.end()) fail("no entry '" + file_name(name) + "' " + shape_doc + missing_hint(name));
    const auto& t = it->second;
    const bool fits = t.dim() == 2 && (rows < 0 || t.size(0) == rows) && (cols < 0 || t.size(1) == cols);
    if (!fits) fail("entry '" + file_name(name) + "' is " + bracketed(t.sizes()) + ", expected " + shape_doc);
    require_floating_point(name, t);
    rows = t.size(0);
    cols = t.size(1);
    return t;
  }
  // A vector of `size` entries (size < 0: of any size but 0).
  const torch::Tensor& vector(const std::string& name, std::int64_t size, const std::string& shape_doc) const {
    const auto it = entries_.tensors.find(name);
    if (it == entries_.tensors.end()) fail("no entry '" + file_name(name) + "' " + shape_doc + missing_hint(name));
    const auto& t = it->second;
    if (t.dim() != 1 || (size >= 0 ? t.size(0) != size : t.size(0) == 0)) {
      fail("entry '" + file_name(name) + "' is " + bracketed(t.sizes()) + ", expected " + shape_doc);
    }
    require_floating_point(name, t);
    return t;
  }

  // Weights are floating point: an integer or boolean entry is no weight (named as the file names it).
  // And finite: a NaN or an infinity (a run saved after it diverged, a damaged file) makes every
  // log-probability NaN downstream, far from the entry that caused it.
  void require_floating_point(const std::string& name, const torch::Tensor& t) const {
    if (!t.is_floating_point()) {
      fail("entry '" + file_name(name) + "' holds " + std::string(c10::toString(t.scalar_type())) + ", not floating point weights");
    }
    const auto finite = torch::isfinite(t);
    if (finite.all().item<bool>()) return;
    const auto nan = torch::isnan(t).sum().item<std::int64_t>();
    const auto infinite = t.numel() - finite.sum().item<std::int64_t>() - nan;
    const auto first = torch::nonzero(finite.logical_not().reshape({-1}))[0][0].item<std::int64_t>();
    std::vector<std::int64_t> index;
    for (auto rest = first, d = t.dim() - 1; d >= 0; --d) {
      index.insert(index.begin(), rest % t.size(d));
      rest /= t.size(d);
    }
    std::string where;
    for (const auto i : index) where += (where.empty() ? "" : ", ") + integer_text(i);
    fail("entry '" + file_name(name) + "' holds " + (nan > 0 ? integer_text(nan) + " NaN" : std::string()) +
         (nan > 0 && infinite > 0 ? " and " : "") + (infinite > 0 ? integer_text(infinite) + " infinite" : std::string()) +
         " value" + (nan + infinite == 1 ? "" : "s") + " of " + integer_text(t.numel()) + " (the first at [" + where +
         "]): a model saved after its training diverged, or a damaged file. Import the checkpoint of an epoch before "
         "the divergence (the reference code keeps the best model in its --save file)");
  }

  // The file's name of an entry: as read (with a DataParallel prefix), or as a file of this format
  // names it (the thesis's prefixes) when the file lacks it.
  std::string file_name(const std::string& name) const {
    const auto it = entries_.file_names.find(name);
    if (it != entries_.file_names.end()) return it->second;
    if (format_ == "thesis") return (is_top_model_entry(name) ? kTopPrefix : kBasePrefix) + name;
    return name;
  }

  const ReferenceEntries& entries() const { return entries_; }

 private:
  std::string missing_hint(const std::string& name) const {
    if (format_ == "mos" && head_entries("mos").count(name) && !has("prior.weight") && !has("latent.0.weight")) {
      return " (no MoS layers at all: a softmax AWD-LSTM? use format = \"awd-lstm\")";
    }
    if (format_ == "thesis" && head_entries("thesis").count(name)) {
      return " (the top model says which entries the file holds: is top_model right?)";
    }
    if (entries_.tensors.empty()) return " (the file holds no tensors)";
    return " (the file has: " + listed([this] {
             std::vector<std::string> names;
             for (const auto& item : entries_.file_names) names.push_back(item.second);
             return names;
           }()) + ")";
  }

  std::string path_, format_;
  ReferenceEntries entries_;
};

double chosen(const std::optional<double>& value, double fallback) { return value ? *value : fallback; }

// The thesis options given with another format, or a setting of another top model: a mistake said
// before the file is read.
void check_options_fit(const ImportCheckpointOptions& options) {
  // Each thesis option, whether it was given, and the top model whose setting it is (none: top_model).
  struct ThesisOption {
    const char* name;
    bool given;
    const char* top_model;
  };
  const ThesisOption thesis_options[] = {{"top_model", options.top_model.has_value(), nullptr},
                                         {"gs_smax_c", options.gs_smax_c.has_value(), "gs_smax"},
                                         {"gs_smax_k", options.gs_smax_k.has_value(), "gs_smax"},
                                         {"plif_smax_t", options.plif_smax_t.has_value(), "plif_smax"},
                                         {"adv_smax_alpha", options.adv_smax_alpha.has_value(), "adv_smax"}};
  std::set<std::string> named;  // the top models the given settings belong to
  for (const auto& option : thesis_options) {
    if (!option.given) continue;
    if (options.format != "thesis") {
      throw UsageError(std::string("import_checkpoint: ") + option.name + " is an option of format \"thesis\" (the thesis's code), "
                       "not of \"" + options.format + "\"");
    }
    if (option.top_model == nullptr) continue;
    named.insert(option.top_model);
    if (options.top_model && *options.top_model != option.top_model) {
      throw UsageError(std::string("import_checkpoint: ") + option.name + " is a setting of top_model \"" + option.top_model +
                       "\", and top_model is \"" + *options.top_model + "\"");
    }
  }
  // Without top_model, the settings of one top model only (each names its top model).
  if (named.size() > 1) {
    throw UsageError("import_checkpoint: settings of more than one top model (gs_smax_*, plif_smax_t, adv_smax_alpha); "
                     "say which with top_model");
  }
}

// The thesis's top model of the file: the one given, else what its entries show.
std::string thesis_top_model(const ReferenceReader& file, const ImportCheckpointOptions& options) {
  const bool has_plif = file.has("plif_w");
  const bool has_mixture = file.has("prior.weight") || file.has("latent.0.weight") || file.has("latent.0.bias");
  // A setting of one top model names it: smax, gs_smax, s_smax and adv_smax files look alike.
  const auto named_by_setting = options.gs_smax_c || options.gs_smax_k ? std::string("gs_smax")
                                : options.plif_smax_t                  ? std::string("plif_smax")
                                : options.adv_smax_alpha               ? std::string("adv_smax")
                                                                       : std::string();
  const auto top = options.top_model           ? *options.top_model
                   : has_plif                  ? std::string("plif_smax")
                   : has_mixture               ? std::string()
                   : !named_by_setting.empty() ? named_by_setting
                                               : std::string();
  if (top.empty() && !has_mixture) {
    // The four save the same entries (the decoder alone under top_model.): computing a Softmax for
    // a GSS, SigSoftmax or AdvSoft checkpoint would be a silent wrong model.
    file.fail("its top model holds the decoder alone, as smax, gs_smax, s_smax and adv_smax all do: say which with "
              "top_model = \"smax\", \"gs_smax\", \"s_smax\" or \"adv_smax\" (the code's --top_model; the file does not record it)");
  }
  if (top.empty()) {
    file.fail("top_model.prior and top_model.latent are the layers of a mixture: say which, top_model = \"mos\" "
              "(mixture of softmaxes) or \"moc\" (mixture of contexts); the file does not record it");
  }
  const bool mixture = top == "mos" || top == "moc";
  if (has_plif && top != "plif_smax") {
    file.fail("entry '" + file.file_name("plif_w") + "' is plif_smax's, and top_model is \"" + top +
              "\" (leave top_model out, or give the checkpoint of a " + top + " model)");
  }
  if (has_mixture && !mixture) {
    file.fail("top_model.prior/latent layers are a mixture's (mos or moc), and top_model is \"" + top + "\"");
  }
  return top;
}

// The lmkit head of a thesis top model (K: the mixture's or PLIF's, read from the file).
nlohmann::json thesis_head(const std::string& top, const ImportCheckpointOptions& options, std::int64_t K) {
  if (top == "gs_smax") return {{"kind", "gss"}, {"c", chosen(options.gs_smax_c, 0.0)}, {"k", chosen(options.gs_smax_k, 2.0)}};
  if (top == "s_smax") return {{"kind", "sigsoftmax"}};
  // The thesis's AdvSoft: ε = alpha·‖e_t‖ where cos(h, e_t) > 0 (advsoft_head.h).
  if (top == "adv_smax") {
    return {{"kind", "advsoft"}, {"eps", chosen(options.adv_smax_alpha, 0.005)}, {"relative", true}, {"aligned_only", true}};
  }
  // The thesis code's curve starts at f(−T) = 0: its f-logits (and their Press rank) are lmkit's
  // with the authors' offset (the log-probabilities are the same either way).
  if (top == "plif_smax") {
    return {{"kind", "plif"}, {"K", K}, {"T", chosen(options.plif_smax_t, 20.0)}, {"authors_offset", true}};
  }
  if (top == "mos" || top == "moc") {
    return {{"kind", top}, {"K", K}, {"dropoutl", chosen(options.dropoutl, 0.29)}, {"floor", chosen(options.floor, 0.0)}};
  }
  return {{"kind", "softmax"}};
}

}  // namespace

LanguageModel import_reference_checkpoint(const std::string& path, const ImportCheckpointOptions& options) {
  const auto& format = options.format;
  if (format != "awd-lstm" && format != "mos" && format != "thesis") {
    throw UsageError("import_checkpoint: format must be \"awd-lstm\", \"mos\" or \"thesis\", got \"" + format + "\"");
  }
  check_options_fit(options);
  const bool thesis = format == "thesis";
  auto read = read_tensor_file(path, {});
  if (read.empty()) {
    // An optimizer, a dict of numbers, a model saved without its weights: nothing to import.
    const auto what = torch_save_object_summary(path);
    throw EnvironmentError("import_checkpoint: '" + path + "' holds no tensor" + (what.empty() ? "" : " (its object is " + what + ")") +
                           ", so no model: the reference code's state_dict, its whole saved model or awd-lstm-lm's "
                           "[model, criterion, optimizer] list is what import_checkpoint reads");
  }
  ReferenceReader file(path, format, sort_entries(model_of_saved_list(std::move(read), path), format));
  const auto& entries = file.entries();
  if (!entries.unexpected.empty()) {
    const auto any_unexpected = [&](const std::function<bool(const std::string&)>& test) {
      return std::any_of(entries.unexpected.begin(), entries.unexpected.end(), test);
    };
    const bool looks_mos = format == "awd-lstm" && any_unexpected([](const std::string& n) {
      return n.find("prior.weight") != std::string::npos || n.find("latent.0.") != std::string::npos;
    });
    const bool looks_thesis = !thesis && any_unexpected([](const std::string& n) {
      return n.find(kBasePrefix) != std::string::npos || n.find(kTopPrefix) != std::string::npos;
    });
    const bool unprefixed = thesis && file.entries().tensors.empty();
    const auto family = thesis ? "a thesis-code" : format == "mos" ? "a MoS" : "an AWD-LSTM";
    const auto base = thesis ? kBasePrefix : std::string(), top = thesis ? kTopPrefix : std::string();
    const auto expected =
        " (expected " + base + "encoder.weight, " + base + "rnns.L[.module].weight_ih_l0/weight_hh_l0[_raw]/bias_ih_l0/bias_hh_l0, " +
        top + "decoder.weight, " + top + "decoder.bias" +
        (format == "mos" ? ", prior.weight, latent.0.weight/bias"
                         : thesis ? ", and top_model.plif_w (plif_smax) or top_model.prior.weight, top_model.latent.0.weight/bias (mos, moc)"
                                  : "") +
        "; a QRNN model is not supported" + (thesis ? ", nor spectrum control's SvdEmbed" : "") + ")";
    file.fail(std::string("entries that are not part of ") + family + " state_dict: " + listed(entries.unexpected) +
              (looks_thesis  ? " (base_model. and top_model. names: the thesis's code saved it, use format = \"thesis\")"
               : unprefixed  ? " (no base_model./top_model. names: saved by awd-lstm-lm or the MoS code? use format = \"awd-lstm\" or \"mos\")"
               : looks_mos   ? " (prior and latent layers: a MoS checkpoint, use format = \"mos\")"
                             : expected));
  }
  const auto top = thesis ? thesis_top_model(file, options) : std::string();
  const bool mixture = format == "mos" || top == "mos" || top == "moc";
  if (options.floor && *options.floor > 0 && !mixture) {
    throw UsageError("import_checkpoint: floor is a mixture head's (format \"mos\", or \"thesis\" with top_model mos or moc); "
                     "this checkpoint's head takes log_softmax, which needs none");
  }

  std::int64_t vocab = -1, emb = -1;
  const auto& embedding = file.matrix("encoder.weight", vocab, emb, "[vocabulary, emb]");
  if (entries.layers.empty()) file.fail("no LSTM layers (entries rnns.0.module.weight_ih_l0, ...)");
  const auto nlayers = static_cast<std::int64_t>(entries.layers.size());
  if (entries.layers.rbegin()->first != nlayers - 1) {
    std::string indices;
    for (const auto& item : entries.layers) indices += (indices.empty() ? "" : ", ") + integer_text(item.first);
    file.fail("the LSTM layers must be rnns.0 … rnns." + integer_text(nlayers - 1) + ", the file has rnns." + indices);
  }

  // Each layer's sizes from its shapes: w_ih [4h, in] with in = emb or the layer below's h.
  struct Layer {
    torch::Tensor w_ih, w_hh, b_ih, b_hh;
    std::int64_t size = 0;
  };
  std::vector<Layer> layers;
  std::int64_t in = emb;
  for (const auto& [index, names] : entries.layers) {
    const auto where = "rnns." + integer_text(index);
    const auto name_or = [&](const std::string& found, const std::string& field) {
      return found.empty() ? where + ".module." + field : found;
    };
    std::int64_t gates = -1, cols = in;
    Layer layer;
    layer.w_ih = file.matrix(name_or(names.w_ih, "weight_ih_l0"), gates, cols, "[4·h, " + integer_text(in) + "] (input " +
                                 (index == 0 ? std::string("emb") : "the size of rnns." + integer_text(index - 1)) + ")");
    if (gates % 4 != 0) file.fail("entry '" + file.file_name(names.w_ih) + "' has " + integer_text(gates) + " rows, not 4·h");
    const std::int64_t h = gates / 4;
    const auto hh = names.w_hh.empty() ? (names.w_hh_dropped.empty() ? where + ".module.weight_hh_l0_raw" : names.w_hh_dropped)
                                       : names.w_hh;
    std::int64_t rows = gates, square = h;
    layer.w_hh = file.matrix(hh, rows, square, "[" + integer_text(gates) + ", " + integer_text(h) + "]");
    const auto bias_doc = "[" + integer_text(gates) + "]";
    layer.b_ih = file.vector(name_or(names.b_ih, "bias_ih_l0"), gates, bias_doc);
    layer.b_hh = file.vector(name_or(names.b_hh, "bias_hh_l0"), gates, bias_doc);
    layer.size = h;
    layers.push_back(layer);
    in = h;
  }
  const std::int64_t nhidlast = layers.back().size;
  const std::int64_t nhid = layers.size() > 1 ? layers.front().size : nhidlast;
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    if (layers[l].size != nhid) {
      file.fail("the inner LSTM layers differ in size (rnns.0 has " + integer_text(nhid) + ", rnns." + integer_text(l) + " " +
                integer_text(layers[l].size) + "); lmkit's AWD-LSTM has one nhid for all but the last");
    }
  }

  // The head's layers, then the decoder, whose width is emb (a mixture) or nhidlast.
  std::int64_t K = -1;
  torch::Tensor prior, latent_weight, latent_bias, plif_w;
  if (top == "plif_smax") {
    plif_w = file.vector("plif_w", -1, "[K] (the slopes' parameters, one per piece)");
    K = plif_w.size(0);
  }
  if (mixture) {
    std::int64_t prior_cols = nhidlast;
    prior = file.matrix("prior.weight", K, prior_cols, "[K, " + integer_text(nhidlast) + "] (K × nhidlast)");
    std::int64_t latent_rows = K * emb, latent_cols = nhidlast;
    latent_weight = file.matrix("latent.0.weight", latent_rows, latent_cols,
                                "[" + integer_text(K * emb) + ", " + integer_text(nhidlast) + "] (K·emb × nhidlast)");
    latent_bias = file.vector("latent.0.bias", K * emb, "[" + integer_text(K * emb) + "] (K·emb)");
  }
  const std::int64_t width = mixture ? emb : nhidlast;
  std::int64_t decoder_rows = vocab, decoder_cols = width;
  const auto& decoder_weight = file.matrix(
      "decoder.weight", decoder_rows, decoder_cols,
      "[" + integer_text(vocab) + ", " + integer_text(width) + "] (vocabulary × " + (mixture ? "emb" : "nhidlast") + ")");
  const bool tied = width == emb && torch::equal(decoder_weight, embedding);
  const bool has_bias = file.has("decoder.bias");
  torch::Tensor decoder_bias;
  if (has_bias) decoder_bias = file.vector("decoder.bias", vocab, "[" + integer_text(vocab) + "] (vocabulary)");

  LanguageModelOptions model_options;
  const bool mos = mixture;
  model_options.encoder(AwdLstmOptions()
                            .vocab_size(vocab)
                            .emb(emb)
                            .nhid(nhid)
                            .nhidlast(nhidlast)
                            .nlayers(nlayers)
                            .dropout(chosen(options.dropout, 0.4))
                            .dropouth(chosen(options.dropouth, mos ? 0.225 : 0.3))
                            .dropouti(chosen(options.dropouti, 0.4))
                            .dropoute(chosen(options.dropoute, 0.1))
                            .wdrop(chosen(options.wdrop, 0.5)));
  model_options.tie_weights(tied).decoder_bias(has_bias);
  model_options.head(thesis ? thesis_head(top, options, K)
                     : mos  ? nlohmann::json{{"kind", "mos"}, {"K", K}, {"dropoutl", chosen(options.dropoutl, 0.29)},
                                            {"floor", chosen(options.floor, 0.0)}}
                            : nlohmann::json{{"kind", "softmax"}});
  LanguageModel model = [&] {
    try {
      return LanguageModel(model_options);
    } catch (const ConfigError& e) {
      file.fail(std::string("its shapes make no model: ") + e.what());
    }
  }();

  bool all_double = true;
  for (const auto& item : entries.tensors) all_double = all_double && item.second.scalar_type() == torch::kFloat64;
  const auto dtype = all_double ? torch::kFloat64 : torch::kFloat32;
  model->to(dtype);

  std::map<std::string, torch::Tensor> values{{"encoder.embedding", embedding}};
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const auto p = "encoder.lstm" + integer_text(l) + "_";
    values[p + "w_ih"] = layers[l].w_ih;
    values[p + "w_hh"] = layers[l].w_hh;
    values[p + "b_ih"] = layers[l].b_ih;
    values[p + "b_hh"] = layers[l].b_hh;
  }
  if (!tied) values["decoder_weight"] = decoder_weight;
  if (has_bias) values["decoder_bias"] = decoder_bias;
  if (plif_w.defined()) values["head.v"] = plif_w;
  if (mos) {
    values["head.prior.weight"] = prior;
    values["head.latent.weight"] = latent_weight;
    values["head.latent.bias"] = latent_bias;
  }
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters(/*recurse=*/true)) {
    const auto it = values.find(item.key());
    // Every parameter of the built model has its entry: the options above are made from them.
    if (it == values.end()) throw std::logic_error("import_checkpoint: no value for lmkit parameter " + item.key());
    if (!it->second.is_floating_point()) {
      file.fail("entry for " + item.key() + " holds " + std::string(c10::toString(it->second.scalar_type())) + ", not floating point");
    }
    item.value().copy_(it->second.to(dtype));
    values.erase(it);
  }
  model->eval();
  return model;
}

void export_reference_checkpoint(const LanguageModel& model, const std::string& path, const ExportCheckpointOptions& options) {
  const auto& format = options.format;
  const std::string wanted = format == "mos" ? "mos" : "softmax";
  if (format != "awd-lstm" && format != "mos") {
    throw UsageError("export: format must be \"awd-lstm\" or \"mos\", got \"" + format + "\"");
  }
  if (model->head->kind() != wanted) {
    throw UsageError("export: format \"" + format + "\" is the reference structure of a " + wanted + " head, this model's head is " +
                     model->head->kind() + " (the reference code computes something else with these weights)");
  }
  std::map<std::string, torch::Tensor> tensors;
  const auto add = [&](const std::string& name, const torch::Tensor& value) { tensors[name] = value.detach().to(torch::kCPU).contiguous(); };
  for (const auto& [name, value] : model->encoder->reference_entries(options.weight_drop)) add(name, value);
  const auto decoder = model->decoder();
  add("decoder.weight", decoder.weight);
  add("decoder.bias", decoder.bias.defined() ? decoder.bias : torch::zeros({model->vocab_size()}, decoder.weight.options()));
  if (format == "mos") {
    const auto* head = dynamic_cast<const MosHeadImpl*>(model->head.get());
    if (head == nullptr) throw UsageError("export: format \"mos\" needs lmkit's MoS head");
    add("prior.weight", head->prior->weight);
    add("latent.0.weight", head->latent->weight);
    add("latent.0.bias", head->latent->bias);
  }
  if (!options.file_format) {
    // Said here in export's words (its option is file_format; write_tensors' is format).
    const auto extension = std::filesystem::path(path).extension().string();
    if (extension != ".pt" && extension != ".pth" && extension != ".bin" && extension != ".safetensors" &&
        extension != ".npz") {
      throw UsageError("export: '" + path + "' has no extension that names a file format (.pt, .safetensors, .npz): "
                       "give one, or the option file_format");
    }
  }
  WriteTensorsOptions write;
  write.format = options.file_format;
  write_tensor_file(path, tensors, write);
}

}  // namespace lmkit
