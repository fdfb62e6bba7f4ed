"""Writes a tiny Llama that `transformers serve` can serve, with its
tokenizer: a word-level vocabulary of common English words (the words of
warpt's seeded corpus mostly among them) and a plain chat template; weights
seeded. Usage: tiny_served_model.py OUT_DIR"""
import sys

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = sys.argv[1]
words = """the of and to in is was for on that with as by at from it his an were are which this be
time year people way day man thing woman life child world school state family student group country
problem hand part place case week company system program question work government number night point
home water room mother area money story fact month lot right study book eye job word business issue
side kind head house service friend father power hour game line end member law car city community
name president team minute idea kid body information back parent face others level office door health
person art war history party result change morning reason research girl guy moment air teacher force
education""".split()
tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.train_from_iterator([" ".join(words)] * 4,
                        trainers.WordLevelTrainer(special_tokens=["[UNK]", "<s>", "</s>"]))
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", bos_token="<s>",
                               eos_token="</s>")
fast.chat_template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                      "assistant:")
torch.manual_seed(7)
config = LlamaConfig(vocab_size=len(fast), hidden_size=64, intermediate_size=128,
                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                     max_position_embeddings=1024, bos_token_id=fast.bos_token_id,
                     eos_token_id=fast.eos_token_id, tie_word_embeddings=False)
model = LlamaForCausalLM(config)
# Special tokens print nothing when streamed; greedy decoding never picks
# them here (zero logits against random ones), so every token is visible.
with torch.no_grad():
    for t in (fast.unk_token_id, fast.bos_token_id, fast.eos_token_id):
        model.lm_head.weight[t] = 0.0
model.save_pretrained(out)
fast.save_pretrained(out)
