"""HuggingFace transformers models with their default dropout, trained two AdamW steps from a seed.

GPT-2, BERT (masked LM), T5 and ViT are built from tiny configs that keep every dropout probability
at its default (attention dropout through ``scaled_dot_product_attention`` or the eager softmax,
residual, embedding and classifier dropout), after ``torch.manual_seed(0)``, so the initial weights
and every dropout mask come from the random stream. Each model trains two AdamW steps and prints
its losses, then the next ``torch.rand``: a run whose composites consume the generator as torch's
do prints torch's numbers. Inputs are built from arange.
"""

import torch
from transformers import (BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, T5Config,
                          T5ForConditionalGeneration, ViTConfig, ViTForImageClassification)
from transformers.utils import logging

logging.set_verbosity_error()


def tokens(shape, vocab, offset=0):
    n = 1
    for s in shape:
        n *= s
    return ((torch.arange(n) * 7 + 3 + offset) % (vocab - 2) + 2).reshape(shape)


def train(name, cls, config, batch):
    torch.manual_seed(0)
    model = cls(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for step in range(2):
        loss = model(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"{name} step {step} loss {loss.item():.7f}")
    print(f"{name} next rand {torch.rand(1).item():.7f}")


def main():
    ids = tokens((2, 8), 64)
    train("gpt2", GPT2LMHeadModel, GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64, n_positions=32),
          {"input_ids": ids, "labels": ids})
    labels = torch.full((2, 8), -100)
    labels[:, 2], labels[:, 5] = ids[:, 2], ids[:, 5]
    train("bert", BertForMaskedLM, BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                              intermediate_size=64, vocab_size=64, max_position_embeddings=32),
          {"input_ids": ids, "labels": labels})
    train("t5", T5ForConditionalGeneration, T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                                     num_decoder_layers=2, num_heads=4, decoder_start_token_id=0,
                                                     pad_token_id=0, eos_token_id=1),
          {"input_ids": ids, "labels": tokens((2, 5), 64, offset=5)})
    pixels = (torch.arange(2 * 3 * 16 * 16, dtype=torch.float32).reshape(2, 3, 16, 16) % 17) / 8.0 - 1.0
    train("vit", ViTForImageClassification, ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32,
                                                      num_hidden_layers=2, num_attention_heads=2,
                                                      intermediate_size=64, num_labels=4),
          {"pixel_values": pixels, "labels": torch.tensor([1, 3])})


if __name__ == "__main__":
    main()
