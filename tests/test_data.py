import pytest
import torch

from revformer.config import DataConfig
from revformer.data import (BOS, EOS, SEP, encode, format_tokens, make_splits,
                            position_labels, split_inputs_labels)


def test_encode_worked_example():
    assert encode([3, 1, 4, 2, 0, 5]) == [10, 3, 1, 4, 2, 0, 5, 11, 5, 0, 2, 4, 1, 3, 12]
    assert encode(torch.tensor([0, 0, 0, 0, 0, 9]))[-2] == 0


def test_worked_inputs_and_labels():
    full = torch.tensor([encode((3, 1, 4, 2, 0, 5))])
    inputs, labels = split_inputs_labels(full)
    assert inputs.tolist() == [[10, 3, 1, 4, 2, 0, 5, 11, 5, 0, 2, 4, 1, 3]]
    assert labels.tolist() == [[-100] * 7 + [5, 0, 2, 4, 1, 3, 12]]
    # the label of position i is the input at position i+1 wherever it is supervised
    assert torch.equal(labels[0, 7:13], inputs[0, 8:14])


@pytest.mark.parametrize("bad, words", [
    ([1, 2, 3], "6 digits"),
    ([1, 2, 3, 4, 5, 10], "between 0 and 9"),
    ([1, 2, 3, 4, 5, -1], "between 0 and 9"),
    ([1, 2, 3, 4, 5, 2.0], "must be an int"),
    ([1, 2, 3, 4, 5, True], "must be an int"),
    ("123456", "string"),
    (123456, "sequence"),
    (torch.zeros(2, 6, dtype=torch.long), "1-D"),
])
def test_encode_rejects_bad_input(bad, words):
    with pytest.raises(ValueError, match=words):
        encode(bad)


@pytest.mark.parametrize("bad", [torch.zeros(2, 14, dtype=torch.long), torch.zeros(15, dtype=torch.long),
                                 torch.zeros(2, 15), [[0] * 15]])
def test_split_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        split_inputs_labels(bad)


def test_splits_are_disjoint_sized_and_repeatable():
    config = DataConfig(train_size=3000, val_size=500, test_size=512)
    a, b = make_splits(config), make_splits(config)
    assert torch.equal(a.train, b.train) and torch.equal(a.test, b.test)
    assert (a.train.size(0), a.val.size(0), a.test.size(0)) == (3000, 500, 512)
    keys = [set(map(tuple, s[:, 1:7].tolist())) for s in (a.train, a.val, a.test)]
    assert sum(map(len, keys)) == 4012  # no duplicates inside a split
    assert not (keys[0] & keys[1] or keys[0] & keys[2] or keys[1] & keys[2])
    for split in (a.train, a.val, a.test):
        assert (split[:, 0] == BOS).all() and (split[:, 7] == SEP).all() and (split[:, 14] == EOS).all()
        assert torch.equal(split[:, 8:14], split[:, 1:7].flip(1))
    # the test set does not depend on the other sizes
    assert torch.equal(make_splits(DataConfig(train_size=100, val_size=10)).test, a.test)


def test_labels_and_names():
    assert position_labels([10, 3, 11]) == ["0·<BOS>", "1·3", "2·<SEP>"]
    assert format_tokens([5, 0, 12]) == "5 0 <EOS>"
