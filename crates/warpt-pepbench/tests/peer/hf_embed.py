"""Writes a tiny random encoder of each family named with PyTorch
transformers' save_pretrained (as users' checkpoints are written) and prints
sentence-transformers' embeddings of a batch (mean of the last hidden state
over the attention mask, L2-normalised) as JSON, for warpt to read the same
directories and compare.

usage: python hf_embed.py FAMILY[,FAMILY...] ROOT IDS_JSON
IDS_JSON: a list of token-id lists of different lengths (padded on the
right with the model's pad id, masked). Writes ROOT/FAMILY for each; prints
{"FAMILY": [[component, ...], ...], ...}

FAMILY: bert, roberta (positions counted after the padding index 1, one
token type) or xlm-roberta. Every weight is randomized, norms and biases
included."""
import json
import os
import sys

import torch
from transformers import (BertConfig, BertModel, RobertaConfig, RobertaModel, XLMRobertaConfig,
                          XLMRobertaModel)

SHAPE = dict(vocab_size=8192, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, max_position_embeddings=66)


def build(family):
    if family == "bert":
        return BertModel(BertConfig(**SHAPE))
    if family == "roberta":
        return RobertaModel(RobertaConfig(**SHAPE, type_vocab_size=1, pad_token_id=1))
    if family == "xlm-roberta":
        return XLMRobertaModel(XLMRobertaConfig(**SHAPE, type_vocab_size=1, pad_token_id=1))
    sys.exit(f"unknown family {family}")


families, root, batch = sys.argv[1].split(","), sys.argv[2], json.loads(sys.argv[3])
out = {}
for family in families:
    torch.manual_seed(5)
    model = build(family).float().eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(5.0)
            else:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(os.path.join(root, family), safe_serialization=True)
    pad = model.config.pad_token_id
    width = max(len(ids) for ids in batch)
    ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids in batch])
    mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids in batch])
    with torch.inference_mode():
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).float()
        pooled = (hidden * m).sum(1) / m.sum(1)
        out[family] = torch.nn.functional.normalize(pooled, dim=-1).tolist()
print(json.dumps(out))
