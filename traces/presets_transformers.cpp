// Transformer presets. Order follows torch.nn.Module.named_parameters(): a module's own parameters
// first (in registration order), then its children in registration order; tied tensors once.
#include "traces/detail/preset_builder.hpp"

namespace lgreco::traces::detail {

// NVIDIA DeepLearningExamples Transformer-XL (pytorch/mem_transformer.py), WikiText-103 "base":
// n_token 267735, 16 layers, d_model 512, 8 heads of 64, d_inner 2048, attn_type 0, adaptive softmax
// with cutoffs [19997, 39997, 199997] and div_val 1, tie_weight (the softmax's output weight is the
// embedding table), d_embed = d_model so there are no projections. tgt_len 192, batch 32 per GPU.
// Count: r_w_bias + r_r_bias 2·8·64 = 1,024; embedding 267,735·512 = 137,080,320; per layer
// qkv 1536·512 + o 512·512 + LN 2·512 + r 512·512 + FF 2048·512 + 2048 + 512·2048 + 512 + LN 2·512
// = 3,412,480, ×16 = 54,599,680; softmax cluster_weight 3·512 + cluster_bias 3 + output bias
// 267,735 = 269,274. Total 191,950,298.
ModelPreset make_transformer_xl_base() {
  constexpr std::int64_t kVocab = 267735, kD = 512, kHeads = 8, kHeadDim = 64, kInner = 2048, kSeq = 192;
  ModelPreset m{"transformer-xl-base",
                "Transformer-XL base (NVIDIA DeepLearningExamples, WikiText-103, 16 layers, d_model 512, adaptive softmax, tied)",
                {}, 32};
  PresetBuilder b(m.tensors);
  // MemTransformerLM's own parameters (created in _create_params) come before its children.
  b.add("r_w_bias", {kHeads, kHeadDim}, LayerKind::kBias, kSeq);
  b.add("r_r_bias", {kHeads, kHeadDim}, LayerKind::kBias, kSeq);
  b.add("word_emb.emb_layers.0.weight", {kVocab, kD}, LayerKind::kEmbedding, kSeq);  // tied with the softmax
  for (int l = 0; l < 16; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    b.linear(p + "dec_attn.qkv_net", kD, 3 * kHeads * kHeadDim, false, kSeq);
    b.linear(p + "dec_attn.o_net", kHeads * kHeadDim, kD, false, kSeq);
    b.norm(p + "dec_attn.layer_norm", kD, kSeq);
    b.linear(p + "dec_attn.r_net", kD, kHeads * kHeadDim, false, kSeq);
    b.linear(p + "pos_ff.CoreNet.0", kD, kInner, true, kSeq);
    b.linear(p + "pos_ff.CoreNet.3", kInner, kD, true, kSeq);
    b.norm(p + "pos_ff.layer_norm", kD, kSeq);
  }
  b.add("crit.cluster_weight", {3, kD}, LayerKind::kWeight, kSeq);
  b.add("crit.cluster_bias", {3}, LayerKind::kBias, kSeq);
  b.add("crit.out_layers_biases.0", {kVocab}, LayerKind::kBias, kSeq);
  return m;
}

// Hugging Face GPT2LMHeadModel "gpt2" (small): vocab 50257, 1024 positions, 12 layers, d 768;
// Conv1D weights are [in, out]; lm_head.weight is tied to transformer.wte.weight.
ModelPreset make_gpt2() {
  constexpr std::int64_t kVocab = 50257, kPos = 1024, kD = 768, kSeq = 1024;
  ModelPreset m{"gpt2", "GPT-2 small (Hugging Face GPT2LMHeadModel, 12 layers, d 768, lm_head tied), seq 1024", {}, 8};
  PresetBuilder b(m.tensors);
  b.add("transformer.wte.weight", {kVocab, kD}, LayerKind::kEmbedding, kSeq);  // also the lm_head
  b.add("transformer.wpe.weight", {kPos, kD}, LayerKind::kEmbedding, 1);
  for (int l = 0; l < 12; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    b.norm(p + "ln_1", kD, kSeq);
    b.conv1d_hf(p + "attn.c_attn", kD, 3 * kD, kSeq);
    b.conv1d_hf(p + "attn.c_proj", kD, kD, kSeq);
    b.norm(p + "ln_2", kD, kSeq);
    b.conv1d_hf(p + "mlp.c_fc", kD, 4 * kD, kSeq);
    b.conv1d_hf(p + "mlp.c_proj", 4 * kD, kD, kSeq);
  }
  b.norm("transformer.ln_f", kD, kSeq);
  return m;
}

// Hugging Face BertModel "bert-base-uncased" with its pooler: vocab 30522, 512 positions, 2 token
// types, 12 layers, d 768, FF 3072. Sequence length 512.
ModelPreset make_bert_base() {
  constexpr std::int64_t kVocab = 30522, kPos = 512, kD = 768, kInner = 3072, kSeq = 512;
  ModelPreset m{"bert-base", "BERT base uncased (Hugging Face BertModel with pooler, 12 layers, d 768), seq 512", {}, 32};
  PresetBuilder b(m.tensors);
  b.add("embeddings.word_embeddings.weight", {kVocab, kD}, LayerKind::kEmbedding, 1);
  b.add("embeddings.position_embeddings.weight", {kPos, kD}, LayerKind::kEmbedding, 1);
  b.add("embeddings.token_type_embeddings.weight", {2, kD}, LayerKind::kEmbedding, 1);
  b.norm("embeddings.LayerNorm", kD, kSeq);
  for (int l = 0; l < 12; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    b.linear(p + "attention.self.query", kD, kD, true, kSeq);
    b.linear(p + "attention.self.key", kD, kD, true, kSeq);
    b.linear(p + "attention.self.value", kD, kD, true, kSeq);
    b.linear(p + "attention.output.dense", kD, kD, true, kSeq);
    b.norm(p + "attention.output.LayerNorm", kD, kSeq);
    b.linear(p + "intermediate.dense", kD, kInner, true, kSeq);
    b.linear(p + "output.dense", kInner, kD, true, kSeq);
    b.norm(p + "output.LayerNorm", kD, kSeq);
  }
  b.linear("pooler.dense", kD, kD, true, 1);
  return m;
}

// torchvision vit_b_16 (ImageNet-1k head): 224x224, patches 16 → 196 tokens + class token,
// 12 layers, d 768, MLP 3072. The root's own class_token comes first, then conv_proj, the
// encoder (its own pos_embedding first), and heads.head.
ModelPreset make_vit_b16() {
  constexpr std::int64_t kD = 768, kInner = 3072, kTokens = 197;
  ModelPreset m{"vit-b16", "ViT-B/16 (torchvision vit_b_16, ImageNet-1k head, 224x224 input)", {}, 64};
  PresetBuilder b(m.tensors);
  b.add("class_token", {1, 1, kD}, LayerKind::kEmbedding, 1);
  b.add("conv_proj.weight", {kD, 3, 16, 16}, LayerKind::kWeight, 196);
  b.add("conv_proj.bias", {kD}, LayerKind::kBias, 196);
  b.add("encoder.pos_embedding", {1, kTokens, kD}, LayerKind::kEmbedding, 1);
  for (int l = 0; l < 12; ++l) {
    const std::string p = "encoder.layers.encoder_layer_" + std::to_string(l) + ".";
    b.norm(p + "ln_1", kD, kTokens);
    b.add(p + "self_attention.in_proj_weight", {3 * kD, kD}, LayerKind::kWeight, kTokens);
    b.add(p + "self_attention.in_proj_bias", {3 * kD}, LayerKind::kBias, kTokens);
    b.linear(p + "self_attention.out_proj", kD, kD, true, kTokens);
    b.norm(p + "ln_2", kD, kTokens);
    b.linear(p + "mlp.0", kD, kInner, true, kTokens);
    b.linear(p + "mlp.3", kInner, kD, true, kTokens);
  }
  b.norm("encoder.ln", kD, kTokens);
  b.linear("heads.head", kD, 1000, true, 1);
  return m;
}

// Hugging Face LlamaForCausalLM "Llama-2-7b": vocab 32000, 32 layers, d 4096, 32 heads, SwiGLU
// intermediate 11008, RMSNorm (weight only), untied lm_head. Sequence length 4096.
ModelPreset make_llama2_7b() {
  constexpr std::int64_t kVocab = 32000, kD = 4096, kInner = 11008, kSeq = 4096;
  ModelPreset m{"llama2-7b", "Llama 2 7B (Hugging Face LlamaForCausalLM, 32 layers, d 4096, untied lm_head), seq 4096", {}, 1};
  PresetBuilder b(m.tensors);
  b.add("model.embed_tokens.weight", {kVocab, kD}, LayerKind::kEmbedding, 1);
  for (int l = 0; l < 32; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    b.linear(p + "self_attn.q_proj", kD, kD, false, kSeq);
    b.linear(p + "self_attn.k_proj", kD, kD, false, kSeq);
    b.linear(p + "self_attn.v_proj", kD, kD, false, kSeq);
    b.linear(p + "self_attn.o_proj", kD, kD, false, kSeq);
    b.linear(p + "mlp.gate_proj", kD, kInner, false, kSeq);
    b.linear(p + "mlp.up_proj", kD, kInner, false, kSeq);
    b.linear(p + "mlp.down_proj", kInner, kD, false, kSeq);
    b.norm(p + "input_layernorm", kD, kSeq, false);
    b.norm(p + "post_attention_layernorm", kD, kSeq, false);
  }
  b.norm("model.norm", kD, kSeq, false);
  b.linear("lm_head", kD, kVocab, false, kSeq);
  return m;
}

// examples/charlm.py as recorded for docs/synthetic-traces.md (--d-model 128 --layers 4): a
// character-level pre-LN transformer LM on the licence texts of /usr/share/common-licenses (86
// distinct characters on Debian 12), context 32, 4 heads, MLP 4·d, batch 16 per process. Count:
// embeddings 86·128 + 32·128 = 15,104; per block LN 256 + qkv 384·128 + 384 + proj 128·128 + 128
// + LN 256 + fc 512·128 + 512 + out 128·512 + 128 = 198,272, ×4 = 793,088; ln_f 256; head 86·128
// + 86 = 11,094. Total 819,542.
ModelPreset make_charlm() {
  constexpr std::int64_t kVocab = 86, kD = 128, kCtx = 32;
  ModelPreset m{"charlm", "examples/charlm.py --d-model 128 --layers 4 (character LM, 86-character vocabulary, context 32)",
                {}, 16};
  PresetBuilder b(m.tensors);
  b.add("pos_emb", {kCtx, kD}, LayerKind::kEmbedding, 1);  // the root's own parameter comes first
  b.add("tok_emb.weight", {kVocab, kD}, LayerKind::kEmbedding, kCtx);
  for (int l = 0; l < 4; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    b.norm(p + "ln1", kD, kCtx);
    b.linear(p + "qkv", kD, 3 * kD, true, kCtx);
    b.linear(p + "proj", kD, kD, true, kCtx);
    b.norm(p + "ln2", kD, kCtx);
    b.linear(p + "fc", kD, 4 * kD, true, kCtx);
    b.linear(p + "out", 4 * kD, kD, true, kCtx);
  }
  b.norm("ln_f", kD, kCtx);
  b.linear("head", kD, kVocab, true, kCtx);
  return m;
}

}  // namespace lgreco::traces::detail
