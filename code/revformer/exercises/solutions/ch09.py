"""Chapter 9: the solution of its exercise, written with the lines of
``revformer.generate.generate``."""
import torch

from ...data import EOS, SEQ_LEN


def my_greedy_decode(model, prompts):
    tokens = prompts.clone()                               # [B,8]
    finished = torch.zeros(prompts.size(0), dtype=torch.bool, device=prompts.device)
    new = []
    with torch.inference_mode():
        for _ in range(SEQ_LEN + 1):                       # six digits, then EOS
            logits, _ = model(tokens)                      # [B, t, 13]
            last = logits[:, -1].to(prompts.device)        # [B,13]: the last position
            next_token = last.argmax(dim=-1).masked_fill(finished, EOS)  # [B]
            finished |= next_token == EOS
            new.append(next_token)
            tokens = torch.cat([tokens, next_token.unsqueeze(1)], dim=1)
    return torch.stack(new, dim=1)                         # [B,7]
