// Fuzz target: a measurement corpus file (tests/data/network/*.tsv) read and, when it is small, its
// topology resolved and its rows predicted with the shipped presets, as `lgreco net validate
// FILE.tsv` does. Building a file's topologies costs 0.1-1.5 s under the sanitizers, so only files of
// at most 4 rows go on to the prediction: the fuzzer keeps its pace on mutated headers (the reader's
// branches) and still reaches the prediction with every header it can build.
#include "fuzz/harness.hpp"
#include "network_models/corpus.hpp"
#include "network_models/corpus_fit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lgreco::net;
  const std::string text = lgreco::fuzz::text(data, size);
  lgreco::fuzz::run([&] {
    const CorpusFile f = parse_corpus(text, lgreco::fuzz::kOrigin);
    if (f.rows.size() > 4) return;
    const std::vector<PreparedFile> prepared = prepare_corpus({f});
    for (const PreparedFile& p : prepared) (void)predict_file(p, corpus_constants());
  });
  return 0;
}
