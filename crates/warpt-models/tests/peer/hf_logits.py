"""Writes a tiny random decoder of one family with PyTorch transformers'
save_pretrained (as users' checkpoints are written) and prints the logits
after each of a prompt's tokens as JSON, for warpt to read the same
directory and compare.

usage: python hf_logits.py FAMILY DIR TOKEN...
FAMILY: llama, mistral (a sliding window of 8 positions), qwen2 (random
q/k/v biases, tied embeddings), qwen3 (a head dimension apart from
hidden / heads, q/k norms), phi3 (fused projections), gemma (head dimension
apart) or gemma2 (a sliding window of 8, logit soft-capping). Every norm
weight is randomized too (Gemma's are offsets from 1)."""
import json
import sys

import torch
from transformers import (Gemma2Config, Gemma2ForCausalLM, GemmaConfig, GemmaForCausalLM,
                          LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Phi3Config, Phi3ForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          Qwen3Config, Qwen3ForCausalLM)

family, out, tokens = sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3:]]
torch.manual_seed(11)
shape = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
             rms_norm_eps=1e-5, rope_theta=10000.0)
if family == "llama":
    model = LlamaForCausalLM(LlamaConfig(**shape))
elif family == "mistral":
    model = MistralForCausalLM(MistralConfig(**shape, sliding_window=8))
elif family == "qwen2":
    model = Qwen2ForCausalLM(Qwen2Config(**shape, tie_word_embeddings=True))
    with torch.no_grad():
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                proj.bias.normal_(0.0, 0.5)
elif family == "qwen3":
    model = Qwen3ForCausalLM(Qwen3Config(**shape, head_dim=32, tie_word_embeddings=True))
elif family == "phi3":
    model = Phi3ForCausalLM(Phi3Config(**shape, pad_token_id=0))
elif family == "gemma":
    model = GemmaForCausalLM(GemmaConfig(**shape, head_dim=32))
elif family == "gemma2":
    model = Gemma2ForCausalLM(Gemma2Config(**shape, head_dim=32, sliding_window=8,
                                           query_pre_attn_scalar=32,
                                           attn_implementation="eager"))
else:
    sys.exit(f"unknown family {family}")
model = model.float().eval()
# Random init leaves small weights: widen them so the logits spread.
with torch.no_grad():
    for p in model.parameters():
        if p.dim() == 2:
            p.mul_(5.0)
        else:
            p.add_(torch.randn_like(p) * 0.1)
model.save_pretrained(out, safe_serialization=True)
with torch.inference_mode():
    logits = model(torch.tensor([tokens])).logits[0]
print(json.dumps({"logits": logits.tolist()}))
