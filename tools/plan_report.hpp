#pragma once
// Readable reports of plans (stdout) and replay progress (stderr) for the plan-making commands.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tools/progress.hpp"
#include "pipeline/loop.hpp"
#include "planner/schedule.hpp"

namespace lgreco::cli {

/// The closed loop's summary: per planned layer the setting (uniform -> plan), bytes and error of
/// the final plan; totals against uncompressed and uniform; the windows' notes.
std::string loop_summary(const pipeline::LoopOptions& o, const pipeline::LoopResult& r, const std::string& topology);

/// The summary of a plan made from tables: per parameter role, setting, bytes, error; totals.
void print_tables_summary(std::ostream& os, const planner::Tables& t, const std::vector<planner::WindowPlan>& plans,
                          const planner::Schedule& s);

/// Progress printer for replays: tools/progress.hpp.

}  // namespace lgreco::cli
