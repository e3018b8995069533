#pragma once
/// Candidate tables: per re-plan window, per layer, every compression candidate's error and wire
/// bytes (docs/tables-format.md). Produced by the replay engine or by any other tool; read strictly.
///
/// Validation (read_tables / validate_tables): unknown keys are errors; every error must be finite
/// and ≥ 0 (NaN/Inf → InputError naming the window, layer and candidate); a candidate's bytes and
/// collective are the method registry's (kernels/wire.hpp, the steady state per step) — optional
/// in files, and an error when given and different; numel must equal the product of shape; default
/// is a valid candidate index; windows are ordered and do not overlap; every window lists the same
/// layers (same names, shapes, in the same order).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/json_util.hpp"
#include "core/collective.hpp"
#include "kernels/method.hpp"

namespace lgreco::planner {

/// One compression setting of one layer, measured over one window.
struct Candidate {
  kernels::MethodSpec spec;             ///< method and resolved parameters
  double error = 0;                     ///< ‖A − C(A)‖_F (absolute Frobenius norm)
  double bytes = 0;                     ///< wire bytes per worker per step (the registry's, steady state)
  Collective collective = Collective::kAllreduce;  ///< the registry's collective of the method
  std::optional<double> kernel_time_s;  ///< compression + decompression kernel time, if measured
};

/// One parameter tensor and its candidates.
struct LayerTable {
  std::string name;                     ///< PyTorch parameter name
  std::vector<std::int64_t> shape;
  std::int64_t numel = 0;
  std::string kind = "weight";          ///< weight | bias | norm | embedding
  int bucket = 0;                       ///< DDP bucket (0 communicates first; holds the last layers)
  int backward_order = 0;               ///< order in which its gradient becomes ready in backward
  std::optional<double> compute_time_s; ///< backward compute time of the layer, if measured
  int default_index = 0;                ///< the uniform default setting among the candidates
  std::vector<Candidate> candidates;    ///< in tie-break order (engines prefer earlier ones on ties)
};

/// Statistics of steps [start_step, end_step).
struct Window {
  std::int64_t start_step = 0, end_step = 0;
  std::vector<LayerTable> layers;
};

/// A whole tables document.
struct Tables {
  std::string model;
  int world_size = 1;
  std::string error_mode = "power";     ///< power | exact | trajectory
  int acc_steps = 10;
  std::vector<Window> windows;
  Json provenance = Json::object();
};

/// Reads and validates a tables file, JSON or HDF5 (told apart by the HDF5 signature, not by the
/// name).
Tables read_tables(const std::filesystem::path& path);
/// Reads and validates a tables JSON file. Bare NaN/Infinity tokens (as Python's json module
/// writes them) are accepted by the parser so that the error can name window, layer and candidate.
Tables read_tables_json(const std::filesystem::path& path);
/// Reads and validates the HDF5 form (docs/tables-format.md, "HDF5 form"); unknown members and
/// attributes are errors, as unknown keys are in JSON.
Tables read_tables_h5(const std::filesystem::path& path);
/// Writes the HDF5 form to `file` (created or truncated; callers write to a temporary path).
void write_tables_h5(const Tables& t, const std::filesystem::path& file, const std::string& context);
/// Whether the file is HDF5 (has the HDF5 signature, at the start or after a user block).
bool is_hdf5_file(const std::filesystem::path& path);
/// Whether a destination's name asks for HDF5 (.h5 / .hdf5); anything else gets JSON.
bool wants_hdf5(const std::filesystem::path& path);

/// Tables written to a temporary sibling of `dest` (HDF5 or JSON by wants_hdf5), renamed onto
/// `dest` only by commit(); dropped without a trace otherwise.
class PendingTables {
 public:
  PendingTables(const Tables& t, const std::filesystem::path& dest, Overwrite policy);
  void commit();

 private:
  AtomicPath path_;
};
/// Parses and validates a tables document; `origin` names it in messages.
Tables tables_from_json(const Json& doc, const std::string& origin);
/// Parses text (NaN/Infinity tolerant, see read_tables) and validates.
Tables tables_from_text(const std::string& text, const std::string& origin);
/// One candidate in the tables' JSON form: {"method", "params", "error", "bytes", "collective"[, "kernel_time_s"]}.
Json candidate_to_json(const Candidate& c);
/// Serialises (schema_version 1, kind "lgreco-tables").
Json tables_to_json(const Tables& t);
/// Checks the invariants listed above; throws InputError/ConfigError naming `origin` and the field.
void validate_tables(const Tables& t, const std::string& origin);

/// A candidate of `spec` on a layer of `shape`: bytes and collective from the registry, the given error.
Candidate make_candidate(const kernels::MethodSpec& spec, std::span<const std::int64_t> shape, double error);

}  // namespace lgreco::planner
