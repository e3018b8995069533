// The local replay engine (pipeline/window_replay.hpp).
#include "pipeline/window_replay.hpp"

namespace lgreco::pipeline {
namespace {

class LocalReplayer : public WindowReplayer {
 public:
  LocalReplayer(const sim::GradientSource& source, std::vector<sim::CandidateSet> candidates, const sim::ReplayOptions& options)
      : replay_(source, std::move(candidates), options) {}
  sim::WindowMeasure run_window(const sim::Window& w, const std::vector<kernels::MethodSpec>& in_force, bool continues) override {
    return replay_.run_window(w, in_force, continues);
  }
  ReplayStats stats() const override {
    return {replay_.elapsed_s(), replay_.grad_bytes(), replay_.peak_task_bytes(), replay_.peak_tasks()};
  }

 private:
  sim::Replay replay_;
};

class LocalEngine : public ReplayEngine {
 public:
  std::unique_ptr<WindowReplayer> open(const sim::GradientSource& source, std::vector<sim::CandidateSet> candidates,
                                       const sim::ReplayOptions& options) const override {
    return std::make_unique<LocalReplayer>(source, std::move(candidates), options);
  }
};

}  // namespace

const ReplayEngine& local_engine() {
  static const LocalEngine engine;
  return engine;
}

}  // namespace lgreco::pipeline
