"""transformers' recipe for fast generation: a static KV cache and ``model.forward = torch.compile(model.forward)``.

A tiny Llama-style model (grouped-query attention, rotary embeddings) from a seeded config generates greedily with
the static cache, first eagerly, then compiled, twice (transformers makes a new cache for each ``generate``). It
prints the tokens of each run and the sum of the last step's logits; the three token lists must agree.
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.utils import logging

logging.set_verbosity_error()
logging.disable_progress_bar()

torch.manual_seed(0)
config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=97, max_position_embeddings=64, bos_token_id=0,
                     eos_token_id=None, pad_token_id=0)
model = LlamaForCausalLM(config).eval()
prompt = torch.tensor([[5, 17, 30, 42, 7, 9]])


def generate():
    out = model.generate(prompt, max_new_tokens=12, min_new_tokens=12, do_sample=False,
                         cache_implementation="static", return_dict_in_generate=True, output_logits=True)
    return out.sequences[0, prompt.shape[1]:].tolist(), out.logits[-1].sum().item()


eager, eager_sum = generate()
print("eager", eager, f"{eager_sum:.5f}")
model.forward = torch.compile(model.forward, backend="eager")
for run in range(2):
    tokens, total = generate()
    print("compiled", run, tokens, f"{total:.5f}", "same" if tokens == eager else "DIFFERENT")
