"""Chapter 20's exercise: one generation step with a KV cache.

The reader writes ``my_kv_step(model, token, keys, values)``: ``keys`` and
``values`` are the cache of the ``T`` positions read so far, one ``[B,H,T,Dh]``
tensor per layer (as ``KVCache`` keeps them); ``token`` ``[B,1]`` is the token at
position ``T``. The step computes that position alone: its token and
position embeddings, then in each block its query, key and value, the key and
value appended to the layer's cache, the query reading all ``T+1`` keys (it
is the newest position, so no key is in its future and nothing is masked),
the residual additions and the FFN; then the final LayerNorm and the head.
It returns ``(logits, keys, values)``: the new position's logits ``[B,13]`` and
the cache extended by one position, ``[B,H,T+1,Dh]`` per layer.

``check_kv_step`` runs it on an untrained model whose weights are drawn large
and, when given, on a trained model, and compares the logits with the full
forward pass over all ``T+1`` tokens and the cache with ``KVCache``'s. It
recognises the usual mistakes by computing each one: the cache not extended,
the new key and value appended twice, the position embedding of position 0
(or one off) for the new token, a mask that hides keys the new query may read,
the query reading the cache before the new key and value are appended,
the cache left unread, the residual addition around the attention left out,
the scores divided by sqrt(D) instead of sqrt(Dh), the FFN fed the stream
without ``norm2``, the final LayerNorm skipped, the new key put first, and the
logits of every position returned instead of the new one's.
"""
from __future__ import annotations

import torch

from ..generate import KVCache, generate, generate_cached, uses_mask
from ..i18n import Message
from . import expect, run
from .lens import inputs, lively_model

_TITLE = "check_kv_step"
_TOL = dict(atol=1e-4, rtol=1e-4)  # float32 rounding: the cache adds in another order


def _expect(checker, condition, good, bad):
    return expect(checker, condition, good, bad, width=72)


def _device(model) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def _step(model, token, keys, values, position=None, twice=False, mask=None, final_norm=True,
          first=False, cached=True, residual=True, width=None, norm2=True):
    """One cached step, right by default; each keyword switches on one usual mistake."""
    start = keys[0].size(2)
    at = start if position is None else position
    x = model.token_embedding(token) + model.position_embedding(
        torch.tensor([at], device=token.device))  # [B,1,D]
    keys, values = list(keys), list(values)
    for layer, block in enumerate(model.blocks):
        attention = block.attention
        h = block.norm1(x)
        q = attention.split_heads(attention.q_proj(h))  # [B,H,1,Dh]
        k = attention.split_heads(attention.k_proj(h))
        v = attention.split_heads(attention.v_proj(h))
        if first:
            keys[layer], values[layer] = torch.cat([k, keys[layer]], 2), torch.cat([v, values[layer]], 2)
        else:
            keys[layer], values[layer] = torch.cat([keys[layer], k], 2), torch.cat([values[layer], v], 2)
        read_k, read_v = (keys[layer], values[layer]) if cached else (k, v)
        if twice:
            read_k, read_v = torch.cat([read_k, k], 2), torch.cat([read_v, v], 2)
        scale = (attention.head_dim if width is None else width) ** 0.5  # sqrt(Dh)
        scores = q @ read_k.transpose(-2, -1) / scale  # [B,H,1,T+1]
        if mask == "query at 0":  # the row of query 0: every key after key 0 hidden
            scores[..., 1:] = float("-inf")
        elif mask == "own key":  # the diagonal hidden as if it were the future
            scores[..., -1] = float("-inf")
        heads = torch.softmax(scores, dim=-1) @ read_v  # [B,H,1,Dh]
        added = attention.out_proj(attention.merge_heads(heads))
        x = x + added if residual else added
        x = x + block.ffn(block.norm2(x) if norm2 else x)
    x = model.final_norm(x[:, -1]) if final_norm else x[:, -1]
    return model.lm_head(x), keys, values  # [B,13]


def _logit_mistakes(model, token, keys, values):
    """``(logits, diagnosis)`` of each usual mistake that changes the logits."""
    start = keys[0].size(2)
    found = [
        (_step(model, token, keys, values, position=0)[0],
         Message("the new token got the position embedding of position 0 (row 0 of the table, as "
                 "torch.arange(1) gives): it sits at position T = keys[0].size(2) = {start}, so number it "
                 "torch.arange({start}, {end})", start=start, end=start + 1)),
        (_step(model, token, keys, values, position=start - 1)[0],
         Message("the new token got the position embedding of position {wrong}, one too early: the cache "
                 "holds positions 0 to {wrong}, so the new token is at position keys[0].size(2) = {start}",
                 wrong=start - 1, start=start)),
        (_step(model, token, keys, values, twice=True)[0],
         Message("the new position's key and value were read twice: its query read T+2 keys, its own "
                 "twice, which gives it twice its weight. Append the new key and value once, then read "
                 "the extended cache")),
        (_step(model, token, keys, values, mask="query at 0")[0],
         Message("the new query read key 0 alone: the mask you applied is the row of query 0. The new "
                 "query is the newest position, so every key is at or before it and nothing is masked: "
                 "for one new query, leave the mask off (causal=False)")),
        (_step(model, token, keys, values, mask="own key")[0],
         Message("the new query did not read its own key and value: it read the cache before they were "
                 "appended (or a mask hid the last key, as if it were in the future). Append first, then "
                 "let the query read all T+1 keys: a query may read its own position, and for the newest "
                 "position nothing is masked")),
        (_step(model, token, keys, values, cached=False)[0],
         Message("the new query read only its own key and value: the cache was not used. Append the new "
                 "key and value to keys[layer] and values[layer] and let the query read all T+1")),
        (_step(model, token, keys, values, residual=False)[0],
         Message("the residual addition around the attention is missing: the stream became the "
                 "attention's output alone. Add it to the stream, x = x + "
                 "attention.out_proj(attention.merge_heads(heads)), as the forward pass does")),
        (_step(model, token, keys, values, norm2=False)[0],
         Message("the FFN read the stream without block.norm2: a Pre-LN block normalises before each "
                 "sublayer, x = x + block.ffn(block.norm2(x)), as the forward pass does")),
        (_step(model, token, keys, values, final_norm=False)[0],
         Message("the final LayerNorm was skipped: the head reads model.final_norm(x), as the forward "
                 "pass does")),
    ]
    attention = model.blocks[0].attention
    if attention.d_model != attention.head_dim:  # with one head, sqrt(D) is sqrt(Dh)
        found.insert(-3, (_step(model, token, keys, values, width=attention.d_model)[0],
                          Message("the scores were divided by sqrt(D) = {wrong:g}, the model's width: "
                                  "divide by sqrt(Dh) = {right:g}, the width of one head "
                                  "(attention.head_dim = {head})", wrong=attention.d_model ** 0.5,
                                  right=attention.head_dim ** 0.5, head=attention.head_dim)))
    if start + 1 < model.config.max_positions:
        found.insert(2, (_step(model, token, keys, values, position=start + 1)[0],
                         Message("the new token got the position embedding of position {wrong}, one too "
                                 "far: the cache holds positions 0 to {last}, so the new token is at "
                                 "position keys[0].size(2) = {start}", wrong=start + 1, last=start - 1,
                                 start=start)))
    return found


def _close(a, b) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, **_TOL)


def _cache_problem(got, want, name: str, old: int):
    """A diagnosis of the returned keys (or values) against KVCache's, or None when they are right."""
    if not isinstance(got, (list, tuple)) or len(got) != len(want) or not all(
            isinstance(t, torch.Tensor) for t in got):
        return Message("the {name} you returned are not a list of {layers} tensors, one per layer "
                       "(got {kind})", name=name, layers=len(want), kind=type(got).__name__)
    for layer, (mine, right) in enumerate(zip(got, want)):
        mine = mine.detach().to(right.device, right.dtype)
        if mine.dim() == 4 and mine.shape[:2] == right.shape[:2] and mine.shape[3] == right.shape[3]:
            length = mine.size(2)
            if length == old:
                return Message("the cache was not extended: layer {layer}'s {name} still hold {old} "
                               "positions. Append the new position's, torch.cat([{name}[layer], new], "
                               "dim=2), and return the extended lists: the next step needs them",
                               layer=layer, name=name, old=old)
            if length == old + 2 and _close(mine[:, :, :-1], right):
                return Message("the new position's {name} were appended twice: layer {layer}'s cache holds "
                               "{length} positions, the last two the same. Append once: T+1 = {want}",
                               name=name, layer=layer, length=length, want=old + 1)
        if mine.shape != right.shape:
            return Message("layer {layer}'s {name} have shape {got}; the extended cache is [B,H,T+1,Dh] = "
                           "{want}", layer=layer, name=name, got=list(mine.shape), want=list(right.shape))
        if not _close(mine, right):
            if _close(torch.cat([mine[:, :, 1:], mine[:, :, :1]], 2), right):
                return Message("the new position's {name} were put first: the cache keeps the positions "
                               "in order, so append them at the end, torch.cat([{name}[layer], new], dim=2)",
                               name=name)
            return Message("layer {layer}'s {name} differ from KVCache's by up to {gap:.3g}: the new "
                           "position's are block.attention's projections of block.norm1(x), split into "
                           "heads", layer=layer, name=name, gap=(mine - right).abs().max().item())
    return None


def _check_case(c, fn, case) -> bool:
    name, model, ids, start = case
    with torch.no_grad():
        cache = KVCache(model)
        cache.next_logits(ids[:, :start])  # the first `start` positions, as the cache keeps them
        old_keys = [k.clone() for k in cache.keys]
        old_values = [v.clone() for v in cache.values]
        full = model(ids[:, :start + 1])[0][:, -1]  # [B,13]: the full pass's last position
        cache.next_logits(ids[:, :start + 1])
    token = ids[:, start:start + 1].clone()  # [B,1]
    label = Message("{name}, {cached} positions cached", name=name, cached=start)
    try:
        out = c.call(fn, model, token, [k.clone() for k in old_keys], [v.clone() for v in old_values])
    except Exception:
        if c.lines and c.lines[-1].marker == "ERROR" and "without the mask" in str(c.lines[-1]):
            c.hint(Message("the new query is the newest position: every key is at or before it, so there "
                           "is nothing to mask. Call scaled_dot_product_attention(q, k, v, causal=False), "
                           "one query against T+1 keys"), width=72)
        raise
    if isinstance(out, torch.Tensor):
        return _expect(c, False, "", Message("{label}: you returned only a tensor: return three things, "
                                             "(logits, keys, values), the logits [B,13] and the cache "
                                             "extended by the new position", label=label))
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        return _expect(c, False, "", Message("{label}: return three things, (logits, keys, values), got "
                                             "{kind}", label=label, kind=type(out).__name__))
    logits, keys, values = out
    if not isinstance(logits, torch.Tensor):
        return _expect(c, False, "", Message("{label}: the logits must be a torch.Tensor [B,13], got {kind}",
                                             label=label, kind=type(logits).__name__))
    rows, vocab = full.shape
    shape = list(logits.shape)
    if shape == [rows, 1, vocab]:
        return _expect(c, False, "", Message("{label}: got logits {shape}, one row for each position this "
                                             "step computed: return the new position's alone, [B,13] "
                                             "(x[:, -1] before the final LayerNorm and the head)",
                                             label=label, shape=shape))
    if logits.dim() == 3 and shape[0] == rows and shape[2] == vocab:
        return _expect(c, False, "", Message("{label}: got logits {shape}, one row for every position: a "
                                             "step returns the new position's alone, [B,13]",
                                             label=label, shape=shape))
    if shape != [rows, vocab]:
        return _expect(c, False, "", Message("{label}: expected logits [B,13] = {want}, got {got}",
                                             label=label, want=[rows, vocab], got=shape))
    logits = logits.detach().to(full.device, full.dtype)
    if not _close(logits, full):
        if torch.isnan(logits).any():
            wrong = Message("some logits are NaN: the mask hid every key of the new query. It is the newest "
                            "position: every key is at or before it, so nothing is masked")
        else:
            wrong = next((text for made, text in _logit_mistakes(model, token, old_keys, old_values)
                          if _close(logits, made)),
                         Message("the logits differ from the full forward pass by up to {gap:.3g}",
                                 gap=(logits - full).abs().max().item()))
        return _expect(c, False, "", Message("{where}: {problem}", where=label, problem=wrong))
    for got, want, what in ((keys, cache.keys, "keys"), (values, cache.values, "values")):
        problem = _cache_problem(got, want, what, start)
        if problem is not None:
            return _expect(c, False, "", Message("{where}: {problem}", where=label, problem=problem))
    return _expect(c, True, Message("{label}: the logits of position {position} are the full forward "
                                    "pass's, and the cache holds {length} positions, as KVCache's",
                                    label=label, position=start, length=start + 1), "")


def _cases(model=None, ids=None):
    lively = lively_model(5)
    sample = inputs(6, 7)
    cases = [(Message("an untrained model with large random weights"), lively, sample, 8),
             (Message("an untrained model with large random weights"), lively, sample, 11)]
    if model is not None:
        given = (ids if ids is not None else inputs(32, seed=4)).to(_device(model))
        name = Message("the trained model, {rows} sequences", rows=given.size(0))
        cases += [(name, model, given, 8), (name, model, given, given.size(1) - 1)]
    return cases


def check_kv_step(fn, model=None, ids=None) -> bool:
    """Check the reader's ``fn(model, token [B,1], keys, values) -> (logits [B,13], keys, values)``.

    ``keys`` and ``values``: one ``[B,H,T,Dh]`` tensor per layer, the cache of
    positions ``0..T-1``. The logits are compared with the full forward pass
    over ``T+1`` tokens, the returned cache with ``KVCache``'s after the same
    step: on an untrained model drawn large (8 and 11 positions cached) and,
    when given, on ``model`` (a trained model of the book, with the mask)
    with ``ids`` ``[B,14]`` (default: 32 random samples), after the prompt and
    at the last step. Prints a report; never raises on a wrong or unfinished
    answer. Returns True when all cases pass.
    """
    if model is not None and not uses_mask(model):
        raise ValueError("check_kv_step needs a model that attends with the causal mask: without it "
                         "the kept keys and values go stale, and no cache is right")

    def body(c):
        for case in _cases(model, ids):
            if not _check_case(c, fn, case):
                return

    return run(_TITLE, body, off_limits=(KVCache.next_logits, generate_cached, generate))


__all__ = ["check_kv_step"]
