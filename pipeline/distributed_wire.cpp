// The distributed replay's message encoding (pipeline/distributed_wire.hpp).
#include "pipeline/distributed_wire.hpp"

#include "core/error.hpp"

namespace lgreco::pipeline::wire {

static_assert(std::is_trivially_copyable_v<kernels::MethodSpec>, "a MethodSpec travels as its bytes");
static_assert(std::is_trivially_copyable_v<sim::CandidateMeasure>, "a CandidateMeasure travels as its bytes");
static_assert(std::is_trivially_copyable_v<kernels::WireSize>, "a WireSize travels as its bytes");

void Reader::done() const {
  if (pos_ != in_.size()) {
    throw Error("distributed replay: malformed message (" + std::to_string(in_.size() - pos_) + " bytes left over)");
  }
}

void Reader::need(std::size_t n) const {
  if (in_.size() - pos_ < n) {
    throw Error("distributed replay: malformed message (ends " + std::to_string(n - (in_.size() - pos_)) + " bytes early)");
  }
}

void Reader::need_elements(std::uint64_t n, std::size_t size) const {
  if (n > (in_.size() - pos_) / size) throw Error("distributed replay: malformed message (a length runs past its end)");
}

void put(Writer& w, const sim::Window& v) {
  w.pod<std::uint64_t>(v.burst);
  w.pod<std::uint64_t>(v.first_row);
  w.pod<std::uint64_t>(v.count);
  w.pod(v.start_step);
  w.pod(v.end_step);
  w.pod(v.starts_burst);
  w.pod(v.acc_steps);
}

sim::Window get_window(Reader& r) {
  sim::Window v;
  v.burst = static_cast<std::size_t>(r.pod<std::uint64_t>());
  v.first_row = static_cast<std::size_t>(r.pod<std::uint64_t>());
  v.count = static_cast<std::size_t>(r.pod<std::uint64_t>());
  v.start_step = r.pod<std::int64_t>();
  v.end_step = r.pod<std::int64_t>();
  v.starts_burst = r.pod<bool>();
  v.acc_steps = r.pod<int>();
  return v;
}

void put(Writer& w, const sim::LayerWindow& v) {
  w.pods(v.candidates);
  w.pod(v.default_index);
  w.pod(v.applied);
  w.pod(v.applied_bytes_per_step);
  w.pod(v.applied_error_per_step);
  w.pods(v.step_bytes);
  w.pods(v.step_error);
  w.pod(v.applied_wire);
}

sim::LayerWindow get_layer_window(Reader& r) {
  sim::LayerWindow v;
  v.candidates = r.pods<sim::CandidateMeasure>();
  v.default_index = r.pod<int>();
  v.applied = r.pod<kernels::MethodSpec>();
  v.applied_bytes_per_step = r.pod<double>();
  v.applied_error_per_step = r.pod<double>();
  v.step_bytes = r.pods<std::uint64_t>();
  v.step_error = r.pods<double>();
  v.applied_wire = r.pod<kernels::WireSize>();
  return v;
}

void put(Writer& w, const sim::CandidateSet& v) {
  w.pods(v.candidates);
  w.pod(v.default_index);
  w.pod(v.planned);
}

sim::CandidateSet get_candidate_set(Reader& r) {
  sim::CandidateSet v;
  v.candidates = r.pods<kernels::MethodSpec>();
  v.default_index = r.pod<int>();
  v.planned = r.pod<bool>();
  return v;
}

void put(Writer& w, const sim::ReplayOptions& v) {
  w.pod(v.mode);
  w.pod(v.measure_iterations);
  w.pod(v.seed);
  w.pod(v.threads);
  w.pod(v.memory_limit_bytes);
  w.pod(v.backend);
  w.pod<std::uint64_t>(v.windows_total);
}

sim::ReplayOptions get_replay_options(Reader& r) {
  sim::ReplayOptions v;
  v.mode = r.pod<sim::ErrorMode>();
  v.measure_iterations = r.pod<int>();
  v.seed = r.pod<std::uint64_t>();
  v.threads = r.pod<unsigned>();
  v.memory_limit_bytes = r.pod<double>();
  v.backend = r.pod<kernels::Backend>();
  v.windows_total = static_cast<std::size_t>(r.pod<std::uint64_t>());
  return v;
}

Failure capture(const std::exception_ptr& e) {
  using K = Failure::Kind;
  Failure f;
  try {
    std::rethrow_exception(e);
  } catch (const FieldError& x) {
    f = {K::kField, x.what(), x.field(), x.detail()};
  } catch (const OutputExists& x) {
    f = {K::kOutputExists, x.what(), {}, {}};
  } catch (const ConfigError& x) {
    f = {K::kConfig, x.what(), {}, {}};
  } catch (const TraceError& x) {
    f = {K::kTrace, x.what(), {}, {}};
  } catch (const InputError& x) {
    f = {K::kInput, x.what(), {}, {}};
  } catch (const CudaError& x) {
    f = {K::kCuda, x.what(), {}, {}};
  } catch (const CudaUnavailable& x) {
    f = {K::kCudaUnavailable, x.what(), {}, {}};
  } catch (const Cancelled& x) {
    f = {K::kCancelled, x.what(), {}, {}};
  } catch (const UsageError& x) {
    f = {K::kUsage, x.what(), {}, {}};
  } catch (const std::exception& x) {
    f = {K::kError, x.what(), {}, {}};
  } catch (...) {
    f = {K::kError, "unknown exception", {}, {}};
  }
  return f;
}

void rethrow(const Failure& f) {
  using K = Failure::Kind;
  switch (f.kind) {
    case K::kField: throw FieldError(f.field, f.detail);
    case K::kOutputExists: throw OutputExists(f.what);
    case K::kConfig: throw ConfigError(f.what);
    case K::kTrace: throw TraceError(f.what);
    case K::kInput: throw InputError(f.what);
    case K::kCuda: throw CudaError(f.what);
    case K::kCudaUnavailable: throw CudaUnavailable(f.what);
    case K::kCancelled: throw Cancelled();
    case K::kUsage: throw UsageError(f.what);
    case K::kError: break;
  }
  throw Error(f.what);
}

void put(Writer& w, const Failure& v) {
  w.pod(v.kind);
  w.str(v.what);
  w.str(v.field);
  w.str(v.detail);
}

Failure get_failure(Reader& r) {
  Failure f;
  f.kind = r.pod<Failure::Kind>();
  if (f.kind > Failure::Kind::kUsage) throw Error("distributed replay: malformed message (failure kind)");
  f.what = r.str();
  f.field = r.str();
  f.detail = r.str();
  return f;
}

}  // namespace lgreco::pipeline::wire
