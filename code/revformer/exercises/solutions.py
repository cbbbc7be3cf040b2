"""Solutions of the chapters' exercises, one function per exercise, named as the reader's.

A chapter shows its solution collapsed (``show_solution``) and checks it with
the same checker the reader runs, so a solution on the page always passes.
"""
import math

import torch

from ..data import EOS, SEQ_LEN


# Chapter 4
def my_attention_weights(q, k):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # [B,H,T,T]
    return torch.softmax(scores, dim=-1)  # along the keys


# Chapter 5
def my_masked_weights(scores):
    t = scores.size(-1)
    future = torch.ones(t, t, dtype=torch.bool, device=scores.device).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


# Chapter 6
def my_split_heads(x, num_heads):
    b, t, d = x.shape
    x = x.view(b, t, num_heads, d // num_heads)  # [B,T,H,Dh]
    return x.transpose(1, 2)  # [B,H,T,Dh]


def my_merge_heads(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)  # [B,T,H,Dh] -> [B,T,D]


# Chapter 7
def my_parameter_count(vocab_size, max_positions, d_model, d_ff, num_layers):
    d = d_model
    embeddings = vocab_size * d + max_positions * d
    attention = 4 * (d * d + d)  # q_proj, k_proj, v_proj, out_proj
    ffn = (d * d_ff + d_ff) + (d_ff * d + d)  # fc1, fc2
    norms = 2 * (d + d)  # norm1, norm2: weight and bias each
    final_norm = d + d
    head = d * vocab_size + vocab_size  # lm_head has a bias
    block = attention + ffn + norms
    return embeddings + num_layers * block + final_norm + head


# Chapter 9
def my_greedy_decode(model, prompts):
    tokens = prompts.clone()
    finished = torch.zeros(prompts.size(0), dtype=torch.bool,
                           device=prompts.device)
    new = []
    with torch.no_grad():
        for _ in range(SEQ_LEN + 1):
            logits, _ = model(tokens)                 # [B, t, 13]
            token = logits[:, -1].argmax(dim=-1)      # [B]
            token = token.to(prompts.device).masked_fill(finished, EOS)
            finished |= token == EOS
            new.append(token)
            tokens = torch.cat([tokens, token[:, None]], dim=1)
    return torch.stack(new, dim=1)                    # [B,7]
