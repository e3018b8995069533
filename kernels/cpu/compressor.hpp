#pragma once
/// The CPU backend of the Compressor interface: each method's reference implementation
/// (kernels/cpu/*.hpp) run as compress + decompress, with the exact wire size.
#include <memory>

#include "kernels/compressor.hpp"

namespace lgreco::kernels::cpu {

/// A CPU compressor for any method.
std::unique_ptr<Compressor> make_compressor(const MethodSpec& spec);

}  // namespace lgreco::kernels::cpu
