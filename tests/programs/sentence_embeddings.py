"""sentence-transformers, as its documentation shows: a SentenceTransformer assembled from a Transformer
module (a tiny BERT from a config, a WordPiece vocabulary written here) and mean Pooling, encoding sentences,
comparing them by cosine similarity and training a step with MultipleNegativesRankingLoss."""

import os
import tempfile

import torch
from sentence_transformers import SentenceTransformer, losses, models, util
from transformers import BertConfig, BertModel, BertTokenizerFast

torch.manual_seed(0)
words = "the a cat dog sat on mat ran fast slow big small red blue house tree".split()
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "vocab.txt"), "w") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(os.path.join(tmp, "vocab.txt")).save_pretrained(tmp)
    config = BertConfig(vocab_size=5 + len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
    BertModel(config).save_pretrained(tmp)
    word = models.Transformer(tmp, max_seq_length=16)
    pooling = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    model = SentenceTransformer(modules=[word, pooling], device="cpu")

sentences = ["the cat sat on the mat", "a dog ran fast", "the big red house", "a small blue tree"]
emb = model.encode(sentences, convert_to_tensor=True)
print("embeddings", tuple(emb.shape), f"{emb.abs().sum().item():.5f}")
sim = util.cos_sim(emb, emb)
print("similarity", [f"{v:.5f}" for v in sim[0].tolist()])

loss_fn = losses.MultipleNegativesRankingLoss(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model.train()
for step in range(2):
    anchors = model.tokenize(sentences[:2])
    positives = model.tokenize(sentences[2:])
    loss = loss_fn([anchors, positives], None)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"step {step} loss {loss.item():.6f}")
