// lgreco._native: the registry, wire plans and planner of lgreco for Python, as JSON text across
// the boundary (json.loads/json.dumps on the Python side; python/lgreco/native.py wraps it).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "kernels/method_json.hpp"
#include "kernels/wire.hpp"

namespace py = pybind11;
using lgreco::Json;

namespace {

lgreco::kernels::MethodSpec spec_of(const std::string& method_json) {
  return lgreco::kernels::method_from_json(lgreco::parse_json_text(method_json, "method"), "method");
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "lgreco's C++ registry, wire plans and planner (the code the lgreco CLI runs)";
  py::register_exception<lgreco::Error>(m, "LgrecoError", PyExc_ValueError);

  m.def("registry_json", [] { return lgreco::kernels::registry_to_json().dump(); },
        "The method registry document (what `lgreco methods --format json` prints).");
  m.def("method_json", [](const std::string& method) { return lgreco::kernels::method_to_json(spec_of(method)).dump(); },
        "Validates {\"method\", \"params\"} (JSON text) and returns it with every parameter resolved.");
  m.def("describe", [](const std::string& method) { return lgreco::kernels::describe(spec_of(method)); },
        "The short label of a method, e.g. 'powersgd rank=4'.");
  m.def(
      "wire_plan",
      [](const std::string& method, const std::vector<std::int64_t>& shape, std::optional<std::uint64_t> step) {
        const auto spec = spec_of(method);
        return lgreco::kernels::wire_plan_to_json(lgreco::kernels::wire_plan(spec, shape, step), spec.method).dump();
      },
      py::arg("method"), py::arg("shape"), py::arg("step") = py::none(),
      "The wire plan (JSON text) of a method on a tensor of `shape` at training step `step` (None: the steady state).");
  m.def(
      "wire_stages",
      [](const std::string& method, const std::vector<std::int64_t>& shape, std::uint64_t from_step,
         std::optional<std::uint64_t> to_step) {
        const auto spec = spec_of(method);
        Json out = Json::array();
        for (const auto& st : lgreco::kernels::wire_stages(spec, shape, from_step, to_step))
          out.push_back(lgreco::kernels::wire_stage_to_json(st, spec.method));
        return out.dump();
      },
      py::arg("method"), py::arg("shape"), py::arg("from_step"), py::arg("to_step") = py::none(),
      "The stages of the wire plan over steps [from_step, to_step) (JSON text).");
}
