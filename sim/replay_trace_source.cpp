#include "sim/replay_trace_source.hpp"

#include <mutex>
#include <numeric>

#include "traces/reader.hpp"

namespace lgreco::sim {
namespace {

class TraceSource : public GradientSource {
 public:
  explicit TraceSource(const std::filesystem::path& path) : reader_(path) {
    const auto& tl = reader_.layers();
    for (std::size_t i = 0; i < tl.size(); ++i) {
      SourceLayer l;
      l.name = tl[i].name;
      l.shape = tl[i].shape;
      l.numel = static_cast<std::uint64_t>(tl[i].numel);
      l.kind = traces::to_string(tl[i].kind);
      l.bucket = static_cast<int>(tl[i].bucket);
      l.backward_order = static_cast<int>(tl[i].backward_order);
      if (auto t = reader_.compute_time_s(i); t && !t->empty()) {
        l.compute_time_s = std::accumulate(t->begin(), t->end(), 0.0) / static_cast<double>(t->size());
      }
      layers_.push_back(std::move(l));
    }
  }
  std::string model() const override { return reader_.header().model; }
  int world_size() const override { return static_cast<int>(reader_.header().world_size); }
  const std::vector<std::int64_t>& steps() const override { return reader_.steps(); }
  const std::vector<SourceLayer>& layers() const override { return layers_; }
  std::filesystem::path path() const override { return reader_.path(); }
  std::string origin() const override { return "trace " + reader_.path().string(); }
  void read(std::size_t layer, std::size_t row, std::span<float> out) const override {
    // The HDF5 library is not built thread-safe: only fetching the stored chunks is serialised;
    // inflating, unshuffling and converting them runs on the calling thread without the lock.
    thread_local traces::RawRow raw;  // per thread: keeps its buffers between reads
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reader_.fetch_raw(layer, row, raw, out);
    }
    traces::TraceReader::decode_raw(raw, out);
  }

 private:
  traces::TraceReader reader_;
  std::vector<SourceLayer> layers_;
  mutable std::mutex mutex_;
};

}  // namespace

std::unique_ptr<GradientSource> open_trace_source(const std::filesystem::path& path) {
  return std::make_unique<TraceSource>(path);
}

}  // namespace lgreco::sim
