"""Mixed-length data, training through the cache, and generation for any length (revformer.lengths)."""
import dataclasses

import pytest
import torch

from revformer import lengths as L
from revformer.config import DataConfig
from revformer.data import BOS, EOS, IGNORE_INDEX, SEP, encode
from revformer.generate import generate
from revformer.model import make_model


def test_sample_pad_and_labels_of_two_lengths():
    full = L.pad([L.sample([4, 7]), L.sample([1, 2, 3, 4, 5, 6, 7, 8])])  # [2,19]
    assert full.shape == (2, L.MAX_LEN) == (2, 19)
    assert full[0].tolist() == [BOS, 4, 7, SEP, 7, 4, EOS] + [EOS] * 12
    inputs, labels = L.inputs_labels(full)
    assert inputs.shape == labels.shape == (2, 18)
    assert labels[0].tolist() == [IGNORE_INDEX] * 3 + [7, 4, EOS] + [IGNORE_INDEX] * 12
    assert labels[1].tolist() == [IGNORE_INDEX] * 9 + [8, 7, 6, 5, 4, 3, 2, 1, EOS]
    assert torch.equal(inputs[1], full[1, :-1])


def test_six_digits_get_the_books_labels():
    from revformer.data import split_inputs_labels

    full = torch.tensor([encode([3, 1, 4, 2, 0, 5])])
    inputs, labels = L.inputs_labels(L.pad([full[0].tolist()]))
    book_inputs, book_labels = split_inputs_labels(full)
    assert torch.equal(inputs[:, :14], book_inputs) and torch.equal(labels[:, :14], book_labels)
    assert (labels[:, 14:] == IGNORE_INDEX).all()


@pytest.mark.parametrize("bad", [[], [3, 10], [-1]])
def test_sample_refuses_what_is_not_digits(bad):
    with pytest.raises(ValueError):
        L.sample(bad)


def test_pad_refuses_a_sample_that_does_not_fit():
    with pytest.raises(ValueError, match="does not fit"):
        L.pad([L.sample(list(range(9)))])


def test_splits_mix_the_lengths_and_hold_the_test_out():
    splits = L.make_mixed_splits(DataConfig(train_size=800, val_size=160, test_size=20, seed=3))
    assert splits.train.shape == (800, 19) and splits.val.shape == (160, 19)
    digits = (splits.train == SEP).int().argmax(dim=1) - 1  # [N]: the length of each sample
    assert torch.bincount(digits, minlength=9)[1:].tolist() == [100] * 8
    assert len({int(n) for n in digits[:64]}) > 1  # a batch mixes lengths
    assert sorted(splits.test) == list(range(1, 10))
    assert len(splits.test[1]) == 10 and not splits.held_out(1)  # 10 < 5 x 20: every question
    for n in range(3, 9):
        assert splits.held_out(n) and splits.test[n].shape == (20, n)
        assert len({tuple(q) for q in splits.test[n].tolist()}) == 20
        train_questions = {tuple(row[1:n + 1]) for row, m in zip(splits.train.tolist(), digits.tolist()) if m == n}
        assert not train_questions & {tuple(q) for q in splits.test[n].tolist()}
    again = L.make_mixed_splits(DataConfig(train_size=800, val_size=160, test_size=20, seed=3))
    assert torch.equal(again.train, splits.train) and torch.equal(again.test[9], splits.test[9])


def test_generate_any_equals_the_packages_generate_on_six_digits():
    model = make_model(seed=5)
    prompts = torch.tensor([encode(d)[:8] for d in [(3, 1, 4, 2, 0, 5), (9, 9, 9, 9, 9, 9), (0, 1, 0, 1, 0, 1)]])
    assert torch.equal(L.generate_any(model, prompts), generate(model, prompts))


def test_generate_any_keeps_eos_and_stops_at_the_position_table():
    model = make_model(seed=5)
    prompts = L.prompts_of(torch.tensor([[1, 2, 3, 4, 5, 6, 7]]))  # [1,9]
    assert L.generate_any(model, prompts, steps=6).shape == (1, 6)  # reads at most 14 tokens
    with pytest.raises(ValueError, match="position table"):
        L.generate_any(model, prompts)  # 8 passes: the last would read 16 tokens


def test_score_any():
    questions = torch.tensor([[1, 2, 3], [4, 5, 6]])
    generated = torch.tensor([[3, 2, 1, EOS], [6, 5, 0, EOS]])
    s = L.score_any(generated, questions)
    assert s.sequence_accuracy == 0.5 and s.digit_accuracy == pytest.approx(5 / 6)
    assert s.per_position == [1.0, 1.0, 0.5]
    assert L.score_any(torch.tensor([[3, 2, 1, 7]]), questions[:1]).sequence_accuracy == 0.0  # no EOS
    assert L.score_any(torch.tensor([[3, 2, 1]]), questions[:1]).ends is None
    with pytest.raises(ValueError):
        L.score_any(generated[:, :2], questions)


def test_train_mixed_trains_once_then_loads_from_the_cache(tmp_path):
    config = L.mixed_config(seed=11)
    config = dataclasses.replace(
        config, train=dataclasses.replace(config.train, steps=20, eval_every=10),
        data=DataConfig(train_size=160, val_size=32, test_size=8, seed=1))
    first = L.train_mixed(config, device="cpu", cache_dir=tmp_path, progress=False)
    assert not first.from_cache and first.steps == 20 and len(first.history) == 3
    assert len(list(tmp_path.glob("mixed_lengths-*.pt"))) == 1
    second = L.train_mixed(config, device="cpu", cache_dir=tmp_path, progress=False)
    assert second.from_cache and second.batch_losses == first.batch_losses
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                 second.model.state_dict().values()))
    assert second.model.config.max_positions == 19


def test_the_key_is_not_the_packages_and_follows_the_seed():
    from revformer.cache import cache_key

    config = L.mixed_config(seed=1)
    assert L.mixed_key(config, "cpu") != cache_key(config, L.GROUP, config.train.steps, "cpu")
    assert L.mixed_key(config, "cpu") != L.mixed_key(L.mixed_config(seed=2), "cpu")
    assert L.mixed_config().train.seed == L.mixed_config(seed=None).train.seed


def test_a_held_out_length_is_left_out_of_training_and_validation_only():
    data = DataConfig(train_size=800, val_size=160, test_size=20, seed=3)
    full, held = L.make_mixed_splits(data), L.make_mixed_splits(data, held_out_lengths=(5,))
    assert held.lengths == (1, 2, 3, 4, 6, 7, 8) and full.lengths == tuple(range(1, 9))
    assert held.train.shape == (700, 19) and held.val.shape == (140, 19)
    for split_full, split_held in ((full.train, held.train), (full.val, held.val)):
        n_held = (split_held == SEP).int().argmax(dim=1) - 1
        n_full = (split_full == SEP).int().argmax(dim=1) - 1
        assert 5 not in n_held.tolist()
        # the other lengths' samples are the very ones drawn with none held out
        assert sorted(map(tuple, split_held.tolist())) == sorted(map(tuple, split_full[n_full != 5].tolist()))
    assert all(torch.equal(full.test[n], held.test[n]) for n in full.test)  # the same test questions


def test_mixed_config_validates_the_held_out_lengths():
    config = L.mixed_config(held_out_lengths=[6, 5])
    assert isinstance(config, L.MixedConfig) and config.held_out_lengths == (5, 6)
    assert config.to_dict()["held_out_lengths"] == (5, 6)  # so it is part of the cache key
    assert L.mixed_config().held_out_lengths == ()
    assert dataclasses.replace(config, train=config.train).held_out_lengths == (5, 6)
    with pytest.raises(ValueError, match="9 is not one of the trained lengths 1-8"):
        L.mixed_config(held_out_lengths=(9,))
    with pytest.raises(ValueError, match="not one of the trained lengths"):
        L.mixed_config(held_out_lengths=(0,))
    with pytest.raises(ValueError, match="leaves no length to train on"):
        L.mixed_config(held_out_lengths=tuple(range(1, 9)))
    with pytest.raises(ValueError, match="twice"):
        L.mixed_config(held_out_lengths=(5, 5))
    with pytest.raises(ValueError, match="tuple of lengths"):
        L.mixed_config(held_out_lengths=5)
    with pytest.raises(ValueError, match="not one of the trained lengths"):
        L.make_mixed_splits(DataConfig(train_size=80, val_size=16, test_size=2, seed=3), held_out_lengths=(9,))


def test_the_key_follows_the_held_out_lengths_and_train_mixed_needs_a_mixed_config(tmp_path):
    from revformer.config import ExperimentConfig

    assert L.mixed_key(L.mixed_config(), "cpu") != L.mixed_key(L.mixed_config(held_out_lengths=(5,)), "cpu")
    with pytest.raises(TypeError, match="MixedConfig"):
        L.train_mixed(ExperimentConfig(), device="cpu", cache_dir=tmp_path, progress=False)
