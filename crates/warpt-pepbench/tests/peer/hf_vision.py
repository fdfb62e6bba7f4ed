"""Writes a tiny random ViT with PyTorch transformers' save_pretrained (as
users' checkpoints are written) and prints its outputs for a batch of
random images as JSON, for warpt to read the same directories and compare.

usage: python hf_vision.py ROOT
writes ROOT/vit (ViTModel without the pooler: the CLS token's features after
the final LayerNorm) and ROOT/vit-classifier (ViTForImageClassification,
10 labels: logits); prints {"pixels": [...], "vit": [[...]], "vit-classifier": [[...]]}
with the pixels flattened (batch, channels, height, width). Every weight is
randomized, norms and biases included.

Also ROOT/clip (CLIPModel, 16-token texts ending in eos_token_id 200) and
ROOT/clip-eos2 (eos_token_id 2: transformers then reads each text at its
largest id, which for the second text is not its end): "texts" holds two texts' ids, "<name>" the image embeddings,
"<name>:text" the text embeddings (both normalised) and "<name>:logits" the
logits per image."""
import json
import os
import sys

import torch
from transformers import CLIPConfig, CLIPModel, ViTConfig, ViTForImageClassification, ViTModel

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
texts = torch.randint(3, 200, (2, 16), generator=torch.Generator().manual_seed(3))
texts[:, -1] = 200
texts[1, 5] = 250  # under eos_token_id 2 the largest id: the second text is read there
out["texts"] = texts.tolist()
for name, eos in (("clip", 200), ("clip-eos2", 2)):
    torch.manual_seed(7)
    tower = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
    config = CLIPConfig(text_config=dict(tower, vocab_size=256, max_position_embeddings=16,
                                         eos_token_id=eos, bos_token_id=254, pad_token_id=1),
                        vision_config=dict(tower, image_size=32, patch_size=8), projection_dim=32)
    model = CLIPModel(config).float().eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.mul_(3.0)
            elif p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(os.path.join(root, name), safe_serialization=True)
    with torch.inference_mode():
        o = model(input_ids=texts, pixel_values=pixels)
        out[name] = o.image_embeds.tolist()
        out[name + ":text"] = o.text_embeds.tolist()
        out[name + ":logits"] = o.logits_per_image.tolist()
print(json.dumps(out))
