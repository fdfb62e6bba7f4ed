"""Writes a tiny random Whisper with PyTorch transformers' save_pretrained
(as users' checkpoints are written) and prints, as JSON, transformers'
log-mel features of an audio clip (WhisperFeatureExtractor) and the
model's logits after a token sequence given those features, for warpt to
read the same directory and compare.

usage: python hf_speech.py DIR AUDIO_F32LE TOKEN...
AUDIO_F32LE: raw 16 kHz samples, little-endian f32.
prints {"mel": [...80 x 3000, row-major...], "logits": [...vocab...]}"""
import json
import sys

import numpy as np
import torch
from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

out_dir, audio_path, tokens = sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3:]]
audio = np.fromfile(audio_path, dtype="<f4")
mel = WhisperFeatureExtractor(feature_size=80)(audio, sampling_rate=16000,
                                               return_tensors="pt").input_features
torch.manual_seed(3)
config = WhisperConfig(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                       decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256,
                       num_mel_bins=80, vocab_size=51865, max_source_positions=1500,
                       max_target_positions=448)
model = WhisperForConditionalGeneration(config).float().eval()
with torch.no_grad():
    for name, p in model.named_parameters():
        if name.endswith("encoder.embed_positions.weight"):
            continue  # fixed sinusoids, as OpenAI's and candle's encoders compute them
        if p.dim() >= 2:
            p.mul_(3.0)
        else:
            p.add_(torch.randn_like(p) * 0.1)
model.save_pretrained(out_dir, safe_serialization=True)
with torch.inference_mode():
    logits = model(input_features=mel, decoder_input_ids=torch.tensor([tokens])).logits[0, -1]
print(json.dumps({"mel": mel[0].flatten().tolist(), "logits": logits.tolist()}))
