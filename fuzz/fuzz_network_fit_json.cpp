// Fuzz target: a network fit (`lgreco net calibrate` output, `--network-fit FILE`), applied to the
// dgx-a100 preset at 8 ranks as whatif and plan do, then a prediction made with it.
#include <cmath>

#include "core/json_util.hpp"
#include "fuzz/harness.hpp"
#include "network_models/collectives.hpp"
#include "network_models/fit.hpp"
#include "network_models/presets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lgreco::net;
  static const Topology topology = preset_topology("dgx-a100");
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    const ModelParams p = params_from_fit(lgreco::parse_json_text(text, lgreco::fuzz::kOrigin), lgreco::fuzz::kOrigin, topology, 8);
    const CollectiveModel model(topology, 8, p);
    for (const double size : {8.0, 1048576.0, 1073741824.0}) {
      const Choice c = model.best(lgreco::Collective::kAllreduce, size);
      // A fit the reader accepted must give a usable prediction.
      if (!(c.time_s > 0) || !std::isfinite(c.time_s)) lgreco::fuzz::defect("accepted fit predicts a non-positive or non-finite time", std::to_string(c.time_s));
    }
  });
  return 0;
}
