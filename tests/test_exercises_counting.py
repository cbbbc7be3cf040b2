"""Chapter 7's checker: the reference passes, each usual miscount gets its own diagnosis."""
import pytest

from revformer.exercises import counting
from revformer.exercises.counting import check_parameter_count
from revformer.model import count_parameters, make_model


def by_parts(vocab_size, max_positions, d_model, d_ff, num_layers, *, attn_bias=True, ffn_bias=True,
             head_bias=True, block_norms=2, final_norm=True, norm_bias=True, positions=None,
             blocks=None, embedding_bias=False):
    v, d, f = vocab_size, d_model, d_ff
    p = max_positions if positions is None else positions
    norm = d + (d if norm_bias else 0)
    attention = 4 * (d * d + (d if attn_bias else 0))
    ffn = d * f + d * f + ((f + d) if ffn_bias else 0)
    block = attention + ffn + block_norms * norm
    return (v * d + p * d + (2 * d if embedding_bias else 0)
            + (num_layers if blocks is None else blocks) * block
            + (norm if final_norm else 0) + d * v + (v if head_bias else 0))


def reference(*sizes):
    return by_parts(*sizes)


def as_float(*sizes):
    return float(by_parts(*sizes))


def test_the_book_model_has_69709_parameters():
    assert counting._reference(13, 15, 64, 128, 2) == 69_709
    assert count_parameters(make_model()) == 69_709
    for case in counting._CASES:
        assert counting._model_count(case) == counting._reference(*case) == by_parts(*case)


@pytest.mark.parametrize("fn", [reference, as_float])
def test_right_answers_pass(fn, capsys):
    assert check_parameter_count(fn) is True
    out = " ".join(capsys.readouterr().out.split())  # lines fold at 76 columns
    assert "all checks passed" in out and "WRONG" not in out and "69,709" in out


MISTAKES = [
    (dict(attn_bias=False, ffn_bias=False, head_bias=False), "leaving out every Linear layer's bias"),
    (dict(attn_bias=False, ffn_bias=False), "the biases of the Linear layers in the blocks"),
    (dict(ffn_bias=False), "the two FFN biases"),
    (dict(attn_bias=False), "the biases of the four attention projections"),
    (dict(head_bias=False), "leaving out the head's bias"),
    (dict(block_norms=0, final_norm=False), "leaving out every LayerNorm: two a block and the final one"),
    (dict(block_norms=0), "leaving out the two LayerNorms of each block"),
    (dict(block_norms=1), "one of the two LayerNorms of each block"),
    (dict(final_norm=False), "leaving out the final LayerNorm"),
    (dict(norm_bias=False), "leaving out the LayerNorm biases"),
    (dict(positions=0), "leaving out the position table"),
    (dict(positions=-1), "one row of the position table"),
    (dict(blocks=1), "every block but one"),
    (dict(embedding_bias=True), "adding a bias to each embedding table"),
    (dict(head_bias=False, final_norm=False), "the head's bias, vocab_size values: the head is "
                                              "nn.Linear(d_model, vocab_size), with a bias, and leaving "
                                              "out the final LayerNorm"),
]


@pytest.mark.parametrize("options, message", MISTAKES)
def test_each_miscount_has_its_diagnosis(options, message, wrong_report):
    def wrong(v, p, d, f, l):
        opts = dict(options)
        if opts.get("positions") == -1:
            opts["positions"] = p - 1
        return by_parts(v, p, d, f, l, **opts)

    assert check_parameter_count(wrong) is False
    out = wrong_report()
    assert "HINT" in out
    assert message in out, out


def test_block_norms_and_attention_biases_cannot_be_told_apart(capsys):
    # both are 4 x d_model a block, in every configuration: the hint names both
    check_parameter_count(lambda *s: by_parts(*s, block_norms=0))
    out = " ".join(capsys.readouterr().out.split())  # lines fold at 76 columns
    assert "the two LayerNorms of each block" in out and "four attention projections" in out


def test_the_short_count_is_shown(capsys):
    check_parameter_count(lambda *s: by_parts(*s, head_bias=False))
    out = " ".join(capsys.readouterr().out.split())  # lines fold at 76 columns
    assert "you counted 69,696, the model has 69,709 (short by 13)" in out


def test_a_fixed_size_is_named(capsys):
    check_parameter_count(lambda v, p, d, f, l: by_parts(v, p, 64, f, l))
    out = " ".join(capsys.readouterr().out.split())  # lines fold at 76 columns
    assert "use the argument d_model, not a fixed 64" in out
    check_parameter_count(lambda v, p, d, f, l: by_parts(v, p, d, 2 * d, l))
    assert "assume d_ff = 2 x d_model" in capsys.readouterr().out


def test_an_unexplained_count_gets_the_parts(capsys):
    assert check_parameter_count(lambda *s: 12345) is False
    out = " ".join(capsys.readouterr().out.split())  # lines fold at 76 columns
    assert "break the count into parts" in out


def test_no_return_and_crash(capsys):
    def no_return(v, p, d, f, l):
        v * d

    assert check_parameter_count(no_return) is False
    assert "is the `return` missing?" in capsys.readouterr().out

    def crash(v, p, d, f, l):
        return v * d + undefined_name  # noqa: F821

    assert check_parameter_count(crash) is False
    assert "ERROR NameError" in capsys.readouterr().out


def test_unfinished_reports_todo_without_raising(capsys):
    def my_parameter_count(vocab_size, max_positions, d_model, d_ff, num_layers):
        raise NotImplementedError("your code here")

    assert check_parameter_count(my_parameter_count) is False
    out = " ".join(capsys.readouterr().out.split())  # lines fold at 76 columns
    assert "TODO" in out and "NotImplementedError" in out and "WRONG" not in out and "HINT" not in out
