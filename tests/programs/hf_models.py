"""HuggingFace transformers models built from tiny configs: train two steps, generate, checkpoint.

Each family (GPT-2, a Llama-style decoder with grouped-query attention and rotary embeddings, BERT
masked LM and sequence classification, T5, ViT) is built from a config, or, when a folder
``init_<name>`` is already in the working directory, loaded from it with ``from_pretrained`` (the
first run saves its fresh weights there, so later runs start from the same weights). Then: two
AdamW steps, greedy and sampled generation with the KV cache, a step with gradient checkpointing,
"eager" against "sdpa" attention, and ``save_pretrained``/``from_pretrained`` of the trained model
into ``ckpt_<name>``. Inputs are built from arange, so they do not depend on a random stream.
``python hf_models.py --reload`` loads every ``ckpt_<name>`` folder in the working directory (as
another framework saved them) and prints the same logits sums.
"""

import os
import sys

import torch
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel,
                          LlamaConfig, LlamaForCausalLM, T5Config, T5ForConditionalGeneration, ViTConfig,
                          ViTForImageClassification)
from transformers.utils import logging

logging.set_verbosity_error()
logging.disable_progress_bar()


def tokens(shape, vocab, offset=0):
    n = 1
    for s in shape:
        n *= s
    return ((torch.arange(n) * 7 + 3 + offset) % (vocab - 2) + 2).reshape(shape)


def build(name, cls, config):
    path = f"init_{name}"
    if os.path.isdir(path):
        return cls.from_pretrained(path)
    torch.manual_seed(0)
    model = cls(config)
    model.save_pretrained(path)
    return model


def train(name, model, batch):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for step in range(2):
        out = model(**batch)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"{name} step {step} loss {out.loss.item():.6f}")


def check_attention(name, cls, batch, path):
    outs = {}
    for impl in ("eager", "sdpa"):
        model = cls.from_pretrained(path, attn_implementation=impl)
        model.eval()
        with torch.no_grad():
            outs[impl] = model(**batch).logits
    diff = (outs["eager"] - outs["sdpa"]).abs().max().item()
    print(f"{name} eager vs sdpa agree {diff < 1e-4}")


def checkpoint_round_trip(name, cls, model, batch):
    path = f"ckpt_{name}"
    model.eval()
    model.save_pretrained(path)
    again = cls.from_pretrained(path)
    again.eval()
    with torch.no_grad():
        a = model(**batch).logits
        b = again(**batch).logits
    print(f"{name} reloaded equal {torch.equal(a, b)}")
    print(f"{name} logits sum {a.double().sum().item():.6f}")
    check_attention(name, cls, batch, path)


def checkpointed_step(name, model, batch):
    model.train()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    out = model(**batch)
    out.loss.backward()
    print(f"{name} checkpointed loss {out.loss.item():.6f}")
    model.gradient_checkpointing_disable()
    model.zero_grad()


def generate(name, model, prompt, **kw):
    model.eval()
    greedy = model.generate(prompt, max_new_tokens=6, do_sample=False, **kw)
    print(f"{name} greedy {greedy.tolist()}")
    torch.manual_seed(1)
    sampled = model.generate(prompt, max_new_tokens=6, do_sample=True, top_k=4, **kw)
    print(f"{name} sampled shape {tuple(sampled.shape)}")


def causal_lm(name, cls, config):
    model = build(name, cls, config)
    ids = tokens((2, 8), config.vocab_size)
    batch = {"input_ids": ids, "labels": ids}
    train(name, model, batch)
    generate(name, model, ids[:1, :4], pad_token_id=1)
    checkpointed_step(name, model, batch)
    checkpoint_round_trip(name, cls, model, {"input_ids": ids})


def reload():
    models = {"gpt2": GPT2LMHeadModel, "llama": LlamaForCausalLM, "bert_mlm": BertForMaskedLM,
              "bert_cls": BertForSequenceClassification, "t5": T5ForConditionalGeneration,
              "vit": ViTForImageClassification}
    ids = tokens((2, 8), 64)
    masked = ids.clone()
    masked[:, 2] = 3
    masked[:, 5] = 3
    batches = {"gpt2": {"input_ids": ids}, "llama": {"input_ids": ids}, "bert_mlm": {"input_ids": masked},
               "bert_cls": {"input_ids": ids},
               "t5": {"input_ids": ids, "decoder_input_ids": tokens((2, 5), 64, offset=5)},
               "vit": {"pixel_values": vit_pixels()}}
    for name, cls in models.items():
        model = cls.from_pretrained(f"ckpt_{name}")
        model.eval()
        with torch.no_grad():
            print(f"{name} logits sum {model(**batches[name]).logits.double().sum().item():.6f}")


def vit_pixels():
    return (torch.arange(2 * 3 * 16 * 16, dtype=torch.float32).reshape(2, 3, 16, 16) % 17) / 8.0 - 1.0


def main():
    causal_lm("gpt2", GPT2LMHeadModel, GPT2Config(
        n_layer=2, n_head=2, n_embd=32, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=1,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    causal_lm("llama", LlamaForCausalLM, LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=64, max_position_embeddings=32, bos_token_id=0, eos_token_id=1, pad_token_id=1))

    bert = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=64,
                max_position_embeddings=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    ids = tokens((2, 8), 64)
    labels = torch.full((2, 8), -100)
    labels[:, 2] = ids[:, 2]
    labels[:, 5] = ids[:, 5]
    masked = ids.clone()
    masked[:, 2] = 3
    masked[:, 5] = 3
    model = build("bert_mlm", BertForMaskedLM, BertConfig(**bert))
    train("bert_mlm", model, {"input_ids": masked, "attention_mask": torch.ones(2, 8, dtype=torch.long),
                              "labels": labels})
    checkpointed_step("bert_mlm", model, {"input_ids": masked, "labels": labels})
    checkpoint_round_trip("bert_mlm", BertForMaskedLM, model, {"input_ids": masked})
    model = build("bert_cls", BertForSequenceClassification, BertConfig(**bert, num_labels=3))
    train("bert_cls", model, {"input_ids": ids, "labels": torch.tensor([0, 2])})
    checkpoint_round_trip("bert_cls", BertForSequenceClassification, model, {"input_ids": ids})

    t5 = T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                  dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = build("t5", T5ForConditionalGeneration, t5)
    src, tgt = tokens((2, 8), 64), tokens((2, 5), 64, offset=5)
    train("t5", model, {"input_ids": src, "labels": tgt})
    generate("t5", model, src[:1], suppress_tokens=[0, 1])
    checkpointed_step("t5", model, {"input_ids": src, "labels": tgt})
    checkpoint_round_trip("t5", T5ForConditionalGeneration, model, {"input_ids": src, "decoder_input_ids": tgt})

    vit = ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64, num_labels=4, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0)
    model = build("vit", ViTForImageClassification, vit)
    pixels = vit_pixels()
    train("vit", model, {"pixel_values": pixels, "labels": torch.tensor([1, 3])})
    checkpointed_step("vit", model, {"pixel_values": pixels, "labels": torch.tensor([1, 3])})
    checkpoint_round_trip("vit", ViTForImageClassification, model, {"pixel_values": pixels})


if __name__ == "__main__":
    reload() if "--reload" in sys.argv else main()
