"""Writes a tiny random ViT with PyTorch transformers' save_pretrained (as
users' checkpoints are written) and prints its outputs for a batch of
random images as JSON, for warpt to read the same directories and compare.

usage: python hf_vision.py ROOT
writes ROOT/vit (ViTModel without the pooler: the CLS token's features after
the final LayerNorm) and ROOT/vit-classifier (ViTForImageClassification,
10 labels: logits); prints {"pixels": [...], "vit": [[...]], "vit-classifier": [[...]]}
with the pixels flattened (batch, channels, height, width). Every weight is
randomized, norms and biases included."""
import json
import os
import sys

import torch
from transformers import ViTConfig, ViTForImageClassification, ViTModel

root = sys.argv[1]
config = ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=128, image_size=32, patch_size=8, num_labels=10)
torch.manual_seed(7)
pixels = torch.randn(3, 3, 32, 32)
out = {"pixels": pixels.flatten().tolist()}
for name, model in (("vit", ViTModel(config, add_pooling_layer=False)),
                    ("vit-classifier", ViTForImageClassification(config))):
    model = model.float().eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.mul_(5.0)
            else:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(os.path.join(root, name), safe_serialization=True)
    with torch.inference_mode():
        if name == "vit":
            out[name] = model(pixel_values=pixels).last_hidden_state[:, 0].tolist()
        else:
            out[name] = model(pixel_values=pixels).logits.tolist()
print(json.dumps(out))
