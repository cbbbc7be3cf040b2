"""Chapter 20: the solution of its exercise, one step of
``revformer.generate.KVCache.next_logits``."""
import torch

from ...attention import scaled_dot_product_attention


def my_kv_step(model, token, keys, values):
    start = keys[0].size(2)                   # T: the positions cached
    position = torch.arange(start, start + 1, device=token.device)  # [1]: T, not 0
    keys, values = list(keys), list(values)   # the caller's lists stay as given
    with torch.no_grad():
        x = model.token_embedding(token) + model.position_embedding(position)  # [B,1,D]
        for layer, block in enumerate(model.blocks):
            attention = block.attention
            h = block.norm1(x)
            q = attention.split_heads(attention.q_proj(h))  # [B,H,1,Dh]: the new query
            k = attention.split_heads(attention.k_proj(h))
            v = attention.split_heads(attention.v_proj(h))
            keys[layer] = torch.cat([keys[layer], k], dim=2)  # [B,H,T+1,Dh], once
            values[layer] = torch.cat([values[layer], v], dim=2)
            # the newest position: every key is at or before it, nothing to mask
            heads, _ = scaled_dot_product_attention(q, keys[layer], values[layer],
                                                    causal=False)
            x = x + attention.out_proj(attention.merge_heads(heads))
            x = x + block.ffn(block.norm2(x))
        logits = model.lm_head(model.final_norm(x[:, -1]))  # [B,13]: the new position
    return logits, keys, values
