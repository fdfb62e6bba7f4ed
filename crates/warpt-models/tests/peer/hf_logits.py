"""Writes a tiny random decoder of each family named with PyTorch
transformers' save_pretrained (as users' checkpoints are written) and prints
the logits after each of a prompt's tokens as JSON, for warpt to read the
same directories and compare. One process for all families: importing torch
is most of the time.

usage: python hf_logits.py FAMILY[,FAMILY...] ROOT TOKEN...
writes ROOT/FAMILY for each; prints {"FAMILY": [[logit, ...], ...], ...}

FAMILY: llama, mistral (a sliding window of 8 positions), qwen2 (random
q/k/v biases, tied embeddings), qwen3 (a head dimension apart from
hidden / heads, q/k norms), phi3 (fused projections), gemma (head dimension
apart), gemma2 (a sliding window of 8, logit soft-capping) or gpt2 (learned
positions, LayerNorm with biases, Conv1D weights stored [in, out]). Every
norm weight and bias is randomized too (Gemma's norms are offsets from 1).

t5 (ReLU feed-forward, the output tied to the embedding and scaled by
d_model^-0.5, 3 decoder blocks over 2 encoder ones) and t5-gated (gated-gelu,
tie_word_embeddings false: no scaling), both with 8 relative position
buckets out to 16, so a 12-token prompt reaches the logarithmic buckets of
both stacks: the prompt is the encoder's input, and row i holds the logits
after the decoder read its start token and the prompt's first i tokens.
For them "t5:bf16" and "t5:f16" hold PyTorch's own drift in that precision
(largest logit difference from its f32 logits, relative to the largest)."""
import json
import os
import sys

import torch
from transformers import (GPT2Config, GPT2LMHeadModel, Gemma2Config, Gemma2ForCausalLM,
                          GemmaConfig, GemmaForCausalLM, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, Phi3Config, Phi3ForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM,
                          T5Config, T5ForConditionalGeneration)

SHAPE = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
             rms_norm_eps=1e-5, rope_theta=10000.0)


def build(family):
    if family == "llama":
        return LlamaForCausalLM(LlamaConfig(**SHAPE))
    if family == "mistral":
        return MistralForCausalLM(MistralConfig(**SHAPE, sliding_window=8))
    if family == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**SHAPE, tie_word_embeddings=True))
        with torch.no_grad():
            for layer in model.model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj,
                             layer.self_attn.v_proj):
                    proj.bias.normal_(0.0, 0.5)
        return model
    if family == "qwen3":
        return Qwen3ForCausalLM(Qwen3Config(**SHAPE, head_dim=32, tie_word_embeddings=True))
    if family == "phi3":
        return Phi3ForCausalLM(Phi3Config(**SHAPE, pad_token_id=0))
    if family == "gemma":
        return GemmaForCausalLM(GemmaConfig(**SHAPE, head_dim=32))
    if family == "gemma2":
        return Gemma2ForCausalLM(Gemma2Config(**SHAPE, head_dim=32, sliding_window=8,
                                              query_pre_attn_scalar=32,
                                              attn_implementation="eager"))
    if family == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=256, n_embd=64, n_layer=2, n_head=4,
                                          n_positions=128))
    if family in ("t5", "t5-gated"):
        gated = family == "t5-gated"
        return T5ForConditionalGeneration(T5Config(
            vocab_size=256, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=3,
            num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=16,
            feed_forward_proj="gated-gelu" if gated else "relu",
            tie_word_embeddings=not gated, decoder_start_token_id=0))
    sys.exit(f"unknown family {family}")


families, root, tokens = sys.argv[1].split(","), sys.argv[2], [int(t) for t in sys.argv[3:]]
out = {}
for family in families:
    torch.manual_seed(11)
    model = build(family).float().eval()
    # Random init leaves small weights: widen them so the logits spread
    # (not T5's, whose init already spans its unscaled attention scores).
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2 and not family.startswith("t5"):
                p.mul_(5.0)
            else:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(os.path.join(root, family), safe_serialization=True)
    with torch.inference_mode():
        if family.startswith("t5"):
            start = model.config.decoder_start_token_id
            decoder = torch.tensor([[start] + tokens[:-1]])
            logits = model(input_ids=torch.tensor([tokens]), decoder_input_ids=decoder).logits
        else:
            logits = model(torch.tensor([tokens])).logits
        out[family] = logits[0].tolist()
        if family.startswith("t5"):
            # T5's unscaled attention makes its logits drift in half
            # precision: PyTorch's own drift, the bound warpt is held to.
            ref = logits[0]
            for name, dtype in (("bf16", torch.bfloat16), ("f16", torch.float16)):
                half = model.to(dtype)(input_ids=torch.tensor([tokens]),
                                       decoder_input_ids=decoder).logits[0].float()
                model.float()
                drift = (half - ref).abs().max(-1).values / ref.abs().max(-1).values
                out[f"{family}:{name}"] = drift.max().item()
print(json.dumps(out))
