"""An exercise cannot be passed by calling the package's own answer (issue 32).

Each checker names the package functions that are its exercise's answer; a
reader's function that calls one, directly, through a wrapper or by assigning
it, fails with a line that names it. The solutions, which write the answer,
pass (their own tests), and helpers the chapters teach stay allowed.
"""
import sys

import pytest
import torch

from revformer.analysis import prefix_logit_change, reversal_weight
from revformer.attention import MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention
from revformer.config import ModelConfig
from revformer.data import encode, split_inputs_labels
from revformer.exercises.alignment import check_reversal_weight
from revformer.exercises.attention_checks import check_no_leak
from revformer.exercises.counting import check_parameter_count
from revformer.exercises.decoding import check_greedy_decode
from revformer.exercises.embeddings import check_embed
from revformer.exercises.heads import check_split_merge
from revformer.exercises.hooks import check_mean_ablation
from revformer.exercises.labels import check_split_inputs_labels
from revformer.exercises.masking import check_masked_weights
from revformer.exercises.prefix import check_prefix_logit_change
from revformer.exercises.scores import check_attention_weights
from revformer.exercises.sequences import check_encode
from revformer.exercises.solutions import ch01, ch04, ch06, ch13
from solution_helpers import as_the_books
from revformer.exercises.training import check_train_step
from revformer.generate import generate
from revformer.interventions import replaced_heads
from revformer.model import ReversalTransformer
from revformer.train import train_step


def wrapped_encode(digits):
    return list(encode(digits))


def embed_by_running_the_model(model, ids):
    seen = []
    hook = model.blocks[0].register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    try:
        model(ids)
    finally:
        hook.remove()
    return seen[0]


def weights_with_the_package_mask(scores):
    t = scores.size(-1)
    return torch.softmax(scores.masked_fill(causal_mask(t), float("-inf")), dim=-1)


def wrapped_split(full):
    return split_inputs_labels(full)


def weights_from_package(q, k):
    return scaled_dot_product_attention(q, k, k, causal=False)[1]


def split_by_package(x, num_heads):
    return MultiHeadSelfAttention(x.size(-1), num_heads).split_heads(x)


def merge_by_package(x):
    return MultiHeadSelfAttention(x.size(1) * x.size(-1), x.size(1)).merge_heads(x)


def count_by_building(vocab_size, max_positions, d_model, d_ff, num_layers):
    model = ReversalTransformer(ModelConfig(vocab_size=vocab_size, max_positions=max_positions,
                                            d_model=d_model, d_ff=d_ff, num_layers=num_layers))
    return sum(p.numel() for p in model.parameters())


def step_by_package(model, optimizer, x, y):
    return train_step(model, optimizer, x, y, clip_norm=1.0)


def decode_by_package(model, prompts):
    return generate(model, prompts)


def ablate_by_package(model, ids, layer, head, mean):
    with replaced_heads(model, {(layer, head): mean}):
        return model(ids)[0]


def prefix_by_package(model, inputs, causal):
    return prefix_logit_change(model, inputs, causal)


def no_leak_by_package(model, ids):
    return prefix_logit_change(model, ids) == 0.0


CHEATS = [
    (check_encode, (encode,), "revformer.data.encode"),
    (check_encode, (wrapped_encode,), "revformer.data.encode"),
    (check_split_inputs_labels, (wrapped_split,), "revformer.data.split_inputs_labels"),
    (check_embed, (embed_by_running_the_model,), "ReversalTransformer.forward"),
    (check_masked_weights, (weights_with_the_package_mask,), "revformer.attention.causal_mask"),
    (check_attention_weights, (weights_from_package,),
     "revformer.attention.scaled_dot_product_attention"),
    (check_split_merge, (split_by_package, merge_by_package), "MultiHeadSelfAttention.split_heads"),
    (check_parameter_count, (count_by_building,), "ReversalTransformer.__init__"),
    (check_train_step, (step_by_package,), "revformer.train.train_step"),
    (check_greedy_decode, (decode_by_package,), "revformer.generate.generate"),
    (check_mean_ablation, (ablate_by_package,), "revformer.interventions.replaced_heads"),
    (check_prefix_logit_change, (prefix_by_package,), "revformer.analysis.prefix_logit_change"),
    (check_no_leak, (no_leak_by_package,), "revformer.analysis.prefix_logit_change"),
    (check_reversal_weight, (reversal_weight,), "revformer.analysis.reversal_weight"),
]


@pytest.mark.parametrize("checker, functions, name", CHEATS,
                         ids=[f"{c.__name__}-{f[0].__name__}" for c, f, _ in CHEATS])
def test_calling_the_package_answer_fails_and_says_so(checker, functions, name, wrong_report):
    assert checker(*functions) is False
    out = wrong_report()
    assert name in out and "the package's own answer" in out, out


def test_helpers_the_chapter_teaches_stay_allowed(capsys):
    # chapter 13's solution calls change_future_answers, which the chapter hands the reader
    assert check_no_leak(as_the_books(ch13.my_no_leak)) is True
    assert "the package's own answer" not in capsys.readouterr().out


def test_the_profile_function_of_the_caller_is_put_back(capsys):
    calls = []

    def outer(frame, event, arg):
        calls.append(event)

    previous = sys.getprofile()
    sys.setprofile(outer)
    try:
        check_encode(encode)
        assert sys.getprofile() is outer
    finally:
        sys.setprofile(previous)
    capsys.readouterr()



@pytest.mark.parametrize("checker, functions, name", [
    (check_encode, (ch01.my_encode,), "solutions.ch01.my_encode"),
    (check_encode, (lambda digits: ch01.my_encode(digits),), "solutions.ch01.my_encode"),  # wrapped
    (check_attention_weights, (ch04.my_attention_weights,), "solutions.ch04.my_attention_weights"),
    (check_split_merge, (ch06.my_split_heads, ch06.my_merge_heads), "solutions.ch06.my_split_heads"),
    (check_no_leak, (ch13.my_no_leak,), "solutions.ch13.my_no_leak"),
])
def test_the_books_solution_is_refused_outside_its_own_cell(checker, functions, name, wrong_report):
    """The teacher's review: every chapter's solution module passed its checker (the notebooks import them)."""
    assert checker(*functions) is False
    out = wrong_report()
    assert name in out and "the book's solution to this exercise" in out, out
    assert "<locals>" not in out and "<listcomp>" not in out, out  # one refusal a solution function
    assert checker(*map(as_the_books, functions)) is True  # the chapters' solution cells


def test_torchs_own_mask_builder_is_refused_in_chapter_5(wrong_report):
    """The teacher's review: "Build the mask yourself", yet nn.Transformer's mask passed."""
    def with_torchs_mask(scores):
        mask = torch.nn.Transformer.generate_square_subsequent_mask(scores.size(-1))
        return torch.softmax(scores + mask, dim=-1)

    assert check_masked_weights(with_torchs_mask) is False
    assert "generate_square_subsequent_mask" in wrong_report()
