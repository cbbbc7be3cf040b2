"""Chapter 10: the solution of its exercise, a forward pre-hook as in
``revformer.interventions.replaced_heads``."""
import torch


def my_mean_ablated_logits(model, ids, layer, head, mean):
    attention = model.blocks[layer].attention
    dh = attention.head_dim                       # 16

    def put_mean(module, args):                   # args[0]: heads side by side, [B,T,D]
        x = args[0].clone()
        x[..., head * dh:(head + 1) * dh] = mean  # head's columns [B,T,Dh] get the mean
        return (x,)                               # what out_proj reads instead

    handle = attention.out_proj.register_forward_pre_hook(put_mean)
    try:
        with torch.no_grad():
            logits, _ = model(ids)                # [B,T,13]
    finally:
        handle.remove()                           # the model is whole again
    return logits
