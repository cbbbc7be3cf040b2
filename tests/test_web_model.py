"""The model in the browser (revformer/web/model.js) against PyTorch, in headless
Chromium with the network cut; the playground; the export.

The pages are built in a temporary folder from `export_weights` and opened from
file://, as the offline book is: no built book is needed.
"""
import base64
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from revformer import web
from revformer.data import EOS, PROMPT_LEN, SEP, encode, split_inputs_labels
from revformer.generate import generate
from revformer.interventions import zeroed_heads

GROUPS = ("four_heads", "one_head", "no_mask")


@pytest.fixture(scope="module")
def experiment(reproduction_cache):
    from revformer.experiment import load_experiment

    return load_experiment(device="cpu", cache_dir=reproduction_cache, progress=False)


@pytest.fixture(scope="module")
def site(experiment, tmp_path_factory):
    folder = tmp_path_factory.mktemp("web")
    web.export_weights(experiment, folder)

    def page(name, body):
        (folder / name).write_text("<!doctype html><html><head><meta charset='utf-8'><title>test</title></head>"
                                   f"<body>{body}</body></html>", encoding="utf-8")
    scripts = "".join(f'<script src="{name}"></script>' for name in (web.WEIGHTS_FILE, web.MODEL_FILE))
    page("model.html", scripts)
    page("playground.html", web.playground(script_base="./").html)
    page("explorers.html", "".join(web.chapter_explorer(n, script_base="./").html for n in (10, 11, 12)))
    page("missing.html", web.playground(script_base="./nowhere/").html)
    return folder


class Tab:
    """One page, its console errors and every request that tried to leave the folder."""

    def __init__(self, browser, url):
        self.context = browser.new_context(viewport={"width": 1200, "height": 1600})
        self.page = self.context.new_page()
        self.errors, self.outside = [], []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r):
            if r.request.url.startswith("file://"):
                r.continue_()
            else:  # the network is cut
                self.outside.append(r.request.url)
                r.abort()
        self.page.route("**/*", route)
        self.page.goto(url, wait_until="load")

    def clean(self):
        assert self.errors == [], f"console errors: {self.errors}"
        assert self.outside == [], f"requests outside the page's folder: {self.outside}"


@pytest.fixture(scope="module")
def model_tab(browser, site):
    tab = Tab(browser, (site / "model.html").as_uri())
    yield tab
    tab.clean()
    tab.context.close()


def _f32(array) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode("ascii")


# Runs forward on every row in the page and returns the largest differences
# from PyTorch's logits [S,T,13] and weights [S,L,H,T,T] (float32, base64).
COMPARE_FORWARD = """([group, rows, options, logits64, weights64]) => {
  const decode = (b64) => {
    const s = atob(b64), view = new DataView(new ArrayBuffer(s.length)), out = new Float64Array(s.length / 4);
    for (let i = 0; i < s.length; i++) { view.setUint8(i, s.charCodeAt(i)); }
    for (let j = 0; j < out.length; j++) { out[j] = view.getFloat32(4 * j, true); }
    return out;
  };
  const L = decode(logits64), W = decode(weights64), worst = {logits: 0, attention: 0};
  const note = (key, d) => { if (!(d <= worst[key])) { worst[key] = Number.isNaN(d) ? Infinity : d; } };
  let at = 0, wt = 0;
  rows.forEach((ids) => {
    const out = revformerModel.forward(group, ids, options);
    out.logits.forEach((row) => row.forEach((v) => note("logits", Math.abs(v - L[at++]))));
    out.attention.forEach((layer) => layer.forEach((head) => head.forEach((row) =>
      row.forEach((v) => note("attention", Math.abs(v - W[wt++]))))));
  });
  worst.count = [at, wt];
  return worst;
}"""


def _option_sets(model):
    heads, own = model.config.num_heads, model.config.causal
    sets = [{}, {"causal": not own}, {"knockout": [[0, 0]]},
            {"knockout": [[0, h] for h in range(heads)]},
            {"causal": not own, "knockout": [[1, h] for h in range(heads)] + [[0, heads - 1]]}]
    unique = []
    for s in sets:
        if s not in unique:
            unique.append(s)
    return unique


def _forward(model, ids, causal=None, knockout=()):
    """The Python model with the JavaScript model's options: the knockout goes through the hooks."""
    with zeroed_heads(model, [tuple(pair) for pair in knockout]):
        return model(ids, causal=causal)


def _python_options(options):
    return {"causal": options.get("causal"), "knockout": [tuple(p) for p in options.get("knockout", [])]}


@pytest.mark.parametrize("group", GROUPS)
def test_forward_matches_pytorch_on_every_test_sample(model_tab, experiment, group):
    model = experiment.model(group)
    inputs, _ = split_inputs_labels(experiment.splits.test)  # [512,14], teacher-forced
    assert inputs.shape == (512, 14)
    for options in _option_sets(model):
        with torch.no_grad():
            logits, weights = _forward(model, inputs, **_python_options(options))
        weights = torch.stack(weights, dim=1)  # [512,L,H,14,14]
        worst = model_tab.page.evaluate(COMPARE_FORWARD, [group, inputs.tolist(), options,
                                                          _f32(logits), _f32(weights)])
        assert worst["count"] == [logits.numel(), weights.numel()], options
        assert worst["logits"] <= 1e-4, f"{group} {options}: logits differ by {worst['logits']:.2e}"
        assert worst["attention"] <= 1e-5, f"{group} {options}: weights differ by {worst['attention']:.2e}"


def test_forward_shapes_and_a_short_sequence(model_tab, experiment):
    model = experiment.model("four_heads")
    ids = [10, 3, 1]
    out = model_tab.page.evaluate("(ids) => revformerModel.forward('four_heads', ids)", ids)
    assert np.shape(out["logits"]) == (3, 13) and np.shape(out["attention"]) == (2, 4, 3, 3)
    with torch.no_grad():
        logits, _ = model(torch.tensor([ids]))
    assert np.abs(np.array(out["logits"]) - logits[0].numpy()).max() <= 1e-4
    # the causal mask: nothing on a future key, and every row sums to 1
    w = np.array(out["attention"])
    assert (w[..., np.triu_indices(3, 1)[0], np.triu_indices(3, 1)[1]] == 0).all()
    assert np.allclose(w.sum(-1), 1.0, atol=1e-12)


def _prompts(experiment):
    random = torch.randint(0, 10, (1000, 6), generator=torch.Generator().manual_seed(20240))
    digits = torch.cat([experiment.splits.test[:, 1:PROMPT_LEN - 1], random])  # [1512,6]
    prompts = torch.cat([torch.full((len(digits), 1), 10), digits, torch.full((len(digits), 1), SEP)], dim=1)
    return digits, prompts


@pytest.mark.parametrize("group", GROUPS)
def test_generation_is_identical_to_pytorch(model_tab, experiment, group):
    digits, prompts = _prompts(experiment)
    expected = generate(experiment.model(group), prompts)  # [1512,7]
    got = model_tab.page.evaluate("([group, rows]) => rows.map((d) => revformerModel.generate(group, d))",
                                  [group, digits.tolist()])
    got = torch.tensor(got)
    assert got.shape == expected.shape == (1512, 7)
    wrong = (got != expected).any(dim=1).nonzero().flatten().tolist()
    assert wrong == [], (f"{len(wrong)} of 1512 answers differ, first: digits {digits[wrong[0]].tolist()}, "
                         f"PyTorch {expected[wrong[0]].tolist()}, JavaScript {got[wrong[0]].tolist()}")


# Greedy decoding written with forward() alone: every step recomputes every
# position, as Python's generate does, with no cache.
RECOMPUTED = """([group, rows, options]) => rows.map((digits) => {
  let tokens = [10].concat(digits, [11]), out = [], probabilities = [], finished = false;
  for (let step = 0; step < 7; step++) {
    const last = revformerModel.forward(group, tokens, options).logits[tokens.length - 1];
    let next = 0;
    last.forEach((v, i) => { if (v > last[next]) { next = i; } });
    if (finished) { next = 12; }
    const max = Math.max(...last), total = last.reduce((a, v) => a + Math.exp(v - max), 0);
    probabilities.push(Math.exp(last[next] - max) / total);
    finished = finished || next === 12;
    out.push(next);
    tokens = tokens.concat([next]);
  }
  return [out, probabilities, revformerModel.generateWithProbabilities(group, digits, options)];
})"""


@pytest.mark.parametrize("group, options", [("four_heads", {}), ("one_head", {"knockout": [[0, 0]]}),
                                            ("four_heads", {"knockout": [[1, 0], [1, 3]]}),
                                            ("no_mask", {"causal": True}), ("four_heads", {"causal": False})])
def test_the_cache_of_generate_changes_no_number(model_tab, experiment, group, options):
    """With the mask, generate keeps the earlier positions' keys and values; the tokens and
    their probabilities are exactly those of recomputing every position at every step."""
    digits, _ = _prompts(experiment)
    for tokens, probabilities, fast in model_tab.page.evaluate(RECOMPUTED, [group, digits[:60].tolist(), options]):
        assert fast["tokens"] == tokens
        assert fast["probabilities"] == probabilities  # bit for bit


def _unforced(model, prompts):
    """Greedy decoding that lets a row go on after EOS (generate() does not)."""
    tokens = prompts.clone()
    with torch.no_grad():
        for _ in range(7):
            logits, _ = model(tokens)
            tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return tokens[:, PROMPT_LEN:]


def test_after_eos_every_token_is_eos(browser, experiment, tmp_path):
    """A trained model never stops early, so the rule is tested on one pushed to: its EOS
    logit raised until about half the rows emit EOS early and would write digits after it."""
    import copy

    trained = experiment.model("four_heads")
    inputs, labels = split_inputs_labels(experiment.splits.test[:256])
    prompts = inputs[:, :PROMPT_LEN]
    with torch.no_grad():
        logits, _ = trained(inputs)
    answer = logits[:, PROMPT_LEN - 1:-1]  # the six digit steps, teacher-forced
    gap = (answer.gather(-1, labels[:, PROMPT_LEN - 1:-1, None])[..., 0] - answer[..., EOS]).min(dim=1).values
    model = copy.deepcopy(trained)
    with torch.no_grad():
        model.lm_head.bias[EOS] += float(gap.median())
    expected = generate(model, prompts)
    with torch.no_grad():
        logits, _ = model(torch.cat([prompts, expected], dim=1)[:, :-1])
    top = logits[:, PROMPT_LEN - 1:].topk(2, dim=-1).values
    decided = (expected == EOS).cummax(dim=1).values.roll(1, dims=1)  # steps after the first EOS are forced
    decided[:, 0] = False
    margin = (top[..., 0] - top[..., 1]).masked_fill(decided, float("inf")).min(dim=1).values
    clear = margin > 1e-3  # rows where float32 and float64 cannot pick different tokens
    exercised = (_unforced(model, prompts) != expected).any(dim=1) & clear
    assert exercised.sum() >= 30 and clear.sum() >= 200, (int(exercised.sum()), int(clear.sum()))
    web.export_weights({"four_heads": model}, tmp_path)
    (tmp_path / "model.html").write_text("".join(f'<script src="{n}"></script>' for n in (web.WEIGHTS_FILE, web.MODEL_FILE)))
    tab = Tab(browser, (tmp_path / "model.html").as_uri())
    try:
        got = tab.page.evaluate("(rows) => rows.map((d) => revformerModel.generateWithProbabilities('four_heads', d))",
                                prompts[clear, 1:PROMPT_LEN - 1].tolist())
        assert torch.equal(torch.tensor([g["tokens"] for g in got]), expected[clear])
        forced = torch.tensor([g["forced"] for g in got])
        assert torch.equal(forced, decided[clear])
        assert forced[exercised[clear]].any(dim=1).all()  # these rows went on with EOS only because they had emitted it
        tab.clean()
    finally:
        tab.context.close()


def _greedy(model, digits, **options):
    """Greedy decoding with any forward options (generate() itself takes only causal)."""
    tokens, out, finished = torch.tensor([encode(digits)[:PROMPT_LEN]]), [], False
    probabilities = []
    with torch.no_grad():
        for _ in range(7):
            logits, _ = _forward(model, tokens, **options)
            p = torch.softmax(logits[0, -1].double(), dim=-1)
            nxt = EOS if finished else int(logits[0, -1].argmax())
            finished = finished or nxt == EOS
            out.append(nxt)
            probabilities.append(float(p[nxt]))
            tokens = torch.cat([tokens, torch.tensor([[nxt]])], dim=1)
    return out, probabilities


def _losses(model, digits, **options):
    full = torch.tensor([encode(digits)])
    inputs, labels = split_inputs_labels(full)
    with torch.no_grad():
        logits, _ = _forward(model, inputs, **options)
    return F.cross_entropy(logits[0, 7:].double(), labels[0, 7:], reduction="none").numpy()


@pytest.mark.parametrize("group", GROUPS)
def test_probabilities_losses_and_knockout_generation(model_tab, experiment, group):
    model = experiment.model(group)
    heads = model.config.num_heads
    cases = [([3, 1, 4, 2, 0, 5], {}), ([0, 0, 0, 0, 0, 0], {"causal": not model.config.causal}),
             ([9, 8, 7, 1, 2, 3], {"knockout": [[0, h] for h in range(heads)]}),
             ([5, 5, 1, 9, 0, 2], {"knockout": [[1, heads - 1]]})]
    for digits, options in cases:
        got = model_tab.page.evaluate("""([group, d, o]) => ({answer: revformerModel.generateWithProbabilities(group, d, o),
                                           loss: revformerModel.answerLoss(group, d, o)})""", [group, digits, options])
        tokens, probabilities = _greedy(model, digits, **_python_options(options))
        assert got["answer"]["tokens"] == tokens, (digits, options)
        assert np.abs(np.array(got["answer"]["probabilities"]) - probabilities).max() <= 1e-5
        assert len(got["answer"]["forced"]) == 7
        assert np.abs(np.array(got["loss"]) - _losses(model, digits, **_python_options(options))).max() <= 1e-4


def test_answer_loss_on_every_test_sample(model_tab, experiment):
    model = experiment.model("four_heads")
    inputs, labels = split_inputs_labels(experiment.splits.test)
    with torch.no_grad():
        logits, _ = model(inputs)
    expected = F.cross_entropy(logits[:, 7:].reshape(-1, 13), labels[:, 7:].reshape(-1), reduction="none")
    digits = experiment.splits.test[:, 1:7].tolist()
    got = model_tab.page.evaluate("(rows) => rows.map((d) => revformerModel.answerLoss('four_heads', d))", digits)
    assert np.abs(np.array(got).reshape(-1) - expected.numpy()).max() <= 1e-4


def test_erf_and_gelu_are_precise(model_tab):
    xs = [x / 64 for x in range(-640, 641)] + [1e-9, -1e-9, 1.9999999, 2.0, 2.0000001, 5.999, 6.0, 7.5, -30.0]
    got = model_tab.page.evaluate("(xs) => xs.map((x) => [revformerModel.erf(x), revformerModel.gelu(x)])", xs)
    erf_error = max(abs(e - math.erf(x)) for (e, _), x in zip(got, xs))
    gelu_error = max(abs(g - 0.5 * x * (1 + math.erf(x / math.sqrt(2)))) for (_, g), x in zip(got, xs))
    assert erf_error <= 1e-14 and gelu_error <= 1e-13, (erf_error, gelu_error)
    # the tanh approximation is 1e-3 away: a model using it would not match PyTorch
    with torch.no_grad():
        tanh = F.gelu(torch.tensor(xs, dtype=torch.float64), approximate="tanh").numpy()
    assert np.abs(np.array(got)[:, 1] - tanh).max() > 1e-4


BAD_CALLS = [
    ("forward('nope', [10])", 'unknown group "nope": expected one of four_heads, one_head, no_mask'),
    ("forward('four_heads', [])", "tokens must be a non-empty array of token ids 0-12"),
    ("forward('four_heads', '1234')", 'tokens must be a non-empty array of token ids 0-12, got "1234"'),
    ("forward('four_heads', new Array(16).fill(1))", "16 tokens is too many: the position table holds at most 15"),
    ("forward('four_heads', [10, 13])", "token 1 is 13, out of range: token ids are integers 0-12"),
    ("forward('four_heads', [10, -1])", "token 1 is -1, out of range"),
    ("forward('four_heads', [10, 1.5])", "token 1 is 1.5, out of range"),
    ("forward('four_heads', [10, '3'])", 'token 1 is "3", out of range'),
    ("generate('four_heads', [1, 2, 3])", "expected six digits 0-9 (an array of 6 integers), got [1, 2, 3]"),
    ("generate('four_heads', '314205')", 'expected six digits 0-9 (an array of 6 integers), got "314205"'),
    ("generate('four_heads', [1, 2, 3, 4, 5, 10])", "digit 5 must be an integer 0-9, got 10"),
    ("generate('four_heads', [1, 2, 'a', 4, 5, 6])", 'digit 2 must be an integer 0-9, got "a"'),
    ("generate('one', [1, 2, 3, 4, 5, 6])", 'unknown group "one"'),
    ("generate('four_heads', [1, 2, 3, 4, 5, 6], {knockout: [[2, 0]]})",
     "cannot knock out [2, 0]: the model has layers 0-1 and heads 0-3"),
    ("generate('four_heads', [1, 2, 3, 4, 5, 6], {knockout: [[0, 4]]})", "heads 0-3"),
    ("forward('one_head', [10], {knockout: [[0, 1]]})", "cannot knock out [0, 1]: the model has layers 0-1 and heads 0-0"),
    ("forward('four_heads', [10], {knockout: [[0]]})", "knockout takes [layer, head] pairs of integers, got [0]"),
    ("forward('four_heads', [10], {knockout: [[0, 0.5]]})", "pairs of integers"),
    ("forward('four_heads', [10], {knockout: '0,1'})", "knockout must be an array of [layer, head] pairs"),
    ("forward('four_heads', [10], {causal: 'yes'})", 'causal must be true, false or null (the group\'s own setting), got "yes"'),
    ("forward('four_heads', [10], {casual: true})", 'unknown option "casual": expected causal or knockout'),
    ("forward('four_heads', [10], 5)", "options must be an object {causal, knockout}, got 5"),
    ("forward('four_heads', [10], {causal: {on: 1}})", 'causal must be true, false or null (the group\'s own setting), got {"on":1}'),
    ("answerLoss('four_heads', [1, 2, 3, 4, 5])", "expected six digits"),
    ("config('x')", 'unknown group "x"'),
]


@pytest.mark.parametrize("call, message", BAD_CALLS)
def test_a_bad_input_throws_what_was_wrong(model_tab, call, message):
    got = model_tab.page.evaluate(f"""() => {{
      try {{ revformerModel.{call}; return null; }}
      catch (e) {{ return [e instanceof Error, e.message]; }}
    }}""")
    assert got is not None, f"{call} did not throw"
    assert got[0] and message in got[1], got
    # and the model keeps working
    assert model_tab.page.evaluate("() => revformerModel.generate('four_heads', [3, 1, 4, 2, 0, 5])") == [
        5, 0, 2, 4, 1, 3, 12]


def test_the_model_without_weights_says_so(browser, site):
    (site / "no-weights.html").write_text(f'<script src="{web.MODEL_FILE}"></script>', encoding="utf-8")
    tab = Tab(browser, (site / "no-weights.html").as_uri())
    try:
        message = tab.page.evaluate("() => { try { revformerModel.forward('four_heads', [10]); } catch (e) { return e.message; } }")
        assert message == "the weights are not loaded: load revformer-weights.js before calling revformerModel"
        assert tab.page.evaluate("() => revformerModel.groups()") == []
        tab.clean()
    finally:
        tab.context.close()


# ---- the playground -----------------------------------------------------------

def _cells(root):
    return root.locator("rect.rfp-cell").evaluate_all(
        "els => els.map(e => [e.getAttribute('data-value'), e.getAttribute('fill')])")


def _drawing(root):
    return (_cells(root), root.locator("td.rfp-value").all_text_contents(), root.locator(".rfp-note").text_content())


def _box(locator):
    box = locator.bounding_box()
    return round(box["x"]), round(box["y"]), round(box["height"])


def _teacher_forced_weights(model, digits, answer, **options):
    inputs = torch.tensor([encode(digits)[:PROMPT_LEN] + answer[:6]])
    with torch.no_grad():
        _, weights = _forward(model, inputs, **options)
    return torch.stack(weights)[:, 0].numpy()  # [L,H,14,14]


@pytest.fixture
def playground(browser, site):
    tab = Tab(browser, (site / "playground.html").as_uri())
    tab.page.wait_for_selector(".rf-playground[data-first-draw-ms]", timeout=20000)
    yield tab, tab.page.locator(".rf-playground")
    tab.context.close()


def test_the_playground_draws_the_models_answer_and_attention(playground, experiment):
    tab, root = playground
    model = experiment.model("four_heads")
    assert root.get_attribute("data-answer") == "5 0 2 4 1 3 <EOS>"
    assert root.locator(".rfp-verdict").text_content().startswith("Right")
    assert root.locator(".rfp-error").text_content() == ""
    assert root.locator("td.rfp-prob").count() == 7
    # the drawn cells are the teacher-forced weights of prompt + answer, mean of the heads of layer 0
    weights = _teacher_forced_weights(model, [3, 1, 4, 2, 0, 5], [5, 0, 2, 4, 1, 3, 12])
    cells = _cells(root)
    drawn = np.array([float(v) for v, _ in cells]).reshape(14, 14)
    assert np.abs(drawn - weights[0].mean(axis=0)).max() <= 1e-4
    hatched = [i for i, (_, fill) in enumerate(cells) if fill.startswith("url(")]
    assert hatched == [q * 14 + k for q in range(14) for k in range(14) if k > q]  # the masked future
    assert root.locator("rect.rfp-expected").count() == 6  # the reversal cells, q 7..12 -> key 13-q
    root.locator('button.rfp-thumb[data-layer="1"][data-head="2"]').click()  # layer and head: a thumbnail
    assert root.locator("select.rfp-layer").input_value() == "1" and root.locator("select.rfp-head").input_value() == "2"
    root.locator("select.rfp-row").select_option("12")
    drawn = np.array([float(v) for v, _ in _cells(root)]).reshape(14, 14)
    assert np.abs(drawn - weights[1, 2]).max() <= 1e-4
    listed = root.locator("td.rfp-value").all_text_contents()
    assert [float(v) for v in listed[:13]] == pytest.approx(weights[1, 2, 12, :13], abs=1e-3) and listed[13] == "masked"
    assert root.locator(".rfp-note").text_content().startswith("Query 12 (1) predicts the next token: 3")
    tab.clean()


def test_every_control_changes_the_drawing(playground):
    tab, root = playground
    thumb = 'button.rfp-thumb[data-layer="1"][data-head="{}"]'
    for name, choose in (("layer", lambda: root.locator(thumb.format("mean")).click()),
                         ("head", lambda: root.locator(thumb.format("0")).click()),
                         ("row", lambda: root.locator("select.rfp-row").select_option("3")),
                         ("group", lambda: root.locator("select.rfp-group").select_option("one_head"))):
        before = _drawing(root)
        choose()
        assert _drawing(root) != before, f"choosing another {name} changed nothing"
    # the layer and head selects are hidden where the thumbnails pick them: one control for one choice
    assert not root.locator("select.rfp-layer").is_visible() and not root.locator("select.rfp-head").is_visible()
    assert root.locator("select.rfp-row").is_visible()
    # one_head has one head: its knockout boxes for heads 1-3 are gone, and head 0 is offered
    assert root.locator("select.rfp-head option").all_text_contents() == ["head 0", "mean of heads"]
    assert root.locator("input.rfp-ko:not([disabled])").count() == 2
    tab.clean()


def test_the_mask_toggle_changes_the_attention_of_four_heads(playground, experiment):
    tab, root = playground
    model = experiment.model("four_heads")
    mask = root.locator("input.rfp-mask")
    assert mask.is_checked()
    before = _drawing(root)
    mask.focus()
    tab.page.keyboard.press("Space")  # keyboard-operable
    assert not mask.is_checked()
    after = _drawing(root)
    assert after != before
    assert not any(fill.startswith("url(") for _, fill in _cells(root))  # nothing hatched without the mask
    assert "trained with it" in root.locator(".rfp-mask-note").text_content()
    answer, _ = _greedy(model, [3, 1, 4, 2, 0, 5], causal=False)
    assert root.get_attribute("data-answer").split() == [("<EOS>" if t == 12 else str(t)) for t in answer]
    weights = _teacher_forced_weights(model, [3, 1, 4, 2, 0, 5], answer, causal=False)
    drawn = np.array([float(v) for v, _ in _cells(root)]).reshape(14, 14)
    assert np.abs(drawn - weights[0].mean(axis=0)).max() <= 1e-4
    # the no_mask group starts without its mask
    root.locator("select.rfp-group").select_option("no_mask")
    assert not mask.is_checked() and "as trained" in root.locator(".rfp-mask-note").text_content()
    tab.clean()


def test_knocking_out_heads_changes_the_answer_or_the_loss(playground, experiment):
    tab, root = playground
    model = experiment.model("four_heads")
    digits = [3, 1, 4, 2, 0, 5]
    normal = float(root.get_attribute("data-loss"))
    assert normal == pytest.approx(_losses(model, digits).mean(), abs=1e-5)
    root.locator("input.rfp-ko-all[data-layer='0']").check()  # the whole of layer 0's attention
    assert root.locator("input.rfp-ko[data-layer='0']:checked").count() == 4
    knocked = float(root.get_attribute("data-loss"))
    options = {"knockout": [(0, h) for h in range(4)]}
    assert knocked == pytest.approx(_losses(model, digits, **options).mean(), abs=1e-5)
    answer, _ = _greedy(model, digits, **options)
    assert root.get_attribute("data-answer").split() == [("<EOS>" if t == 12 else str(t)) for t in answer]
    assert knocked > normal + 0.01 or answer != [5, 0, 2, 4, 1, 3, 12]
    # the "as trained" column keeps the normal loss
    assert float(root.locator("tr.rfp-loss-mean .rfp-loss-base").text_content()) == pytest.approx(normal, abs=1e-4)
    # one head back: "all heads" shows the mixed state
    root.locator("input.rfp-ko[data-layer='0'][data-head='2']").uncheck()
    assert root.locator("input.rfp-ko-all[data-layer='0']").evaluate("e => e.indeterminate && !e.checked")
    options = {"knockout": [(0, 0), (0, 1), (0, 3)]}
    assert float(root.get_attribute("data-loss")) == pytest.approx(_losses(model, digits, **options).mean(), abs=1e-5)
    tab.clean()


def test_typing_shows_errors_without_moving_anything(playground, experiment):
    tab, root = playground
    places = [root.locator(s) for s in (".rfp-answer", ".rfp-knockout", ".rfp-loss", ".rfp-body", ".rfp-view")]
    before = [_box(p) for p in places]
    box = root.locator("input.rfp-digits")
    alert = root.locator("[role=alert]")
    assert box.get_attribute("aria-describedby") == alert.get_attribute("id")
    box.fill("31a205")
    assert alert.text_content() == "Type exactly six digits 0-9 (got \u201c31a205\u201d)."  # the page's words
    assert [_box(p) for p in places] == before
    box.fill("1234")
    assert alert.text_content() == "Type exactly six digits 0-9 (got \u201c1234\u201d)."
    assert root.get_attribute("data-answer") == "5 0 2 4 1 3 <EOS>"  # the last good answer stays, dimmed
    assert float(root.locator(".rfp-verdict").evaluate("e => getComputedStyle(e).opacity")) < 0.5
    assert [_box(p) for p in places] == before
    box.focus()
    tab.page.keyboard.press("Control+A")
    tab.page.keyboard.type("987 650")  # typed with the keyboard; the space is ignored
    assert alert.text_content() == ""
    expected = generate(experiment.model("four_heads"), torch.tensor([encode([9, 8, 7, 6, 5, 0])[:PROMPT_LEN]]))[0]
    assert root.get_attribute("data-answer").split() == [("<EOS>" if t == 12 else str(t)) for t in expected.tolist()]
    assert [_box(p) for p in places] == before
    box.fill("\uff11\uff12\uff13\uff14\uff15\uff16")  # full-width digits, as a Chinese keyboard types them
    assert alert.text_content() == ""
    expected = generate(experiment.model("four_heads"), torch.tensor([encode([1, 2, 3, 4, 5, 6])[:PROMPT_LEN]]))[0]
    assert root.get_attribute("data-answer").split() == [("<EOS>" if t == 12 else str(t)) for t in expected.tolist()]
    box.focus()
    tab.page.keyboard.press("Tab")  # to the random button
    assert tab.page.evaluate("() => document.activeElement.className") == "rfp-random"
    tab.page.keyboard.press("Enter")
    drawn = box.input_value()
    assert len(drawn) == 6 and drawn.isdigit() and alert.text_content() == ""
    expected = generate(experiment.model("four_heads"), torch.tensor([encode([int(c) for c in drawn])[:PROMPT_LEN]]))[0]
    assert root.get_attribute("data-answer").split() == [("<EOS>" if t == 12 else str(t)) for t in expected.tolist()]
    tab.clean()


def test_every_control_is_labelled(playground):
    tab, root = playground
    controls = root.locator("input, select").all()
    assert len(controls) >= 14
    for control in controls:
        cid = control.get_attribute("id")
        assert cid and root.locator(f"label[for='{cid}']").count() == 1, cid
    assert root.locator("button.rfp-random").text_content() == "Random digits"
    assert root.locator("svg.rfp-heatmap").get_attribute("role") == "img"
    assert "layer 0, mean of heads" in root.locator("svg.rfp-heatmap").get_attribute("aria-label")


def test_the_chapter_explorers(browser, site):
    tab = Tab(browser, (site / "explorers.html").as_uri())
    try:
        roots = tab.page.locator(".rf-playground")
        assert roots.count() == 3
        tab.page.wait_for_function("() => document.querySelectorAll('.rf-playground[data-first-draw-ms]').length === 3",
                                   timeout=20000)
        ids = [r.get_attribute("id") for r in roots.all()]
        assert len(set(ids)) == 3
        ten, eleven, twelve = roots.all()
        assert ten.locator("select.rfp-group option").count() == 2 and ten.locator("input.rfp-mask").count() == 0
        assert ten.locator("input.rfp-ko").count() == 0 and ten.locator("table.rfp-loss").count() == 0
        assert eleven.locator("input.rfp-mask").count() == 1 and eleven.locator("table.rfp-loss").count() == 1
        assert twelve.locator("input.rfp-ko").count() == 8  # four heads in each of two layers
        assert twelve.locator("select.rfp-group option").count() == 3  # the three groups
        for root in (ten, eleven, twelve):
            assert root.get_attribute("data-answer") == "5 0 2 4 1 3 <EOS>"
            assert root.locator("rect.rfp-cell").count() == 196
        before = _drawing(eleven)
        eleven.locator("input.rfp-mask").uncheck()
        assert _drawing(eleven) != before and _drawing(ten)[0] != _drawing(eleven)[0]
        tab.clean()
    finally:
        tab.context.close()


def test_a_playground_without_its_scripts_says_so(browser, site):
    tab = Tab(browser, (site / "missing.html").as_uri())
    try:
        alert = tab.page.locator(".rf-playground [role=alert]")
        alert.filter(has_text="did not load").wait_for(timeout=5000)  # at once: the scripts report their error
        assert "nowhere/revformer-weights.js" in alert.text_content()
        assert "nowhere/revformer-model.js" in alert.text_content()
    finally:
        tab.context.close()


# ---- the export, the Python side --------------------------------------------------

def test_the_export_is_within_its_budget_and_holds_every_tensor(site, experiment):
    size = web.export_size(site)
    assert size == sum((site / n).stat().st_size for n in (web.WEIGHTS_FILE, web.MODEL_FILE))
    assert size <= 1_500_000, f"the export adds {size:,} bytes to the site"
    assert (site / web.MODEL_FILE).read_bytes() == web.MODEL_JS.read_bytes()
    text = (site / web.WEIGHTS_FILE).read_text(encoding="utf-8")
    start = text.index("window.REVFORMER_WEIGHTS = ") + len("window.REVFORMER_WEIGHTS = ")
    record = json.loads(text[start:].rstrip().rstrip(";"))
    assert record["seed"] == experiment.config.train.seed and set(record["groups"]) == set(GROUPS)
    for name, entry in record["groups"].items():
        model = experiment.model(name)
        assert entry["config"] == {"heads": model.config.num_heads, "layers": 2, "d_model": 64, "d_ff": 128,
                                   "vocab": 13, "positions": 15, "causal": name != "no_mask"}
        state = model.state_dict()
        assert set(entry["tensors"]) == set(state)
        for key, tensor in state.items():
            stored = np.frombuffer(base64.b64decode(entry["tensors"][key]["data"]), dtype="<f4")
            assert entry["tensors"][key]["shape"] == list(tensor.shape)
            assert np.array_equal(stored.reshape(tensor.shape), tensor.numpy()), key  # float32, exactly
        assert sum(t.numel() for t in state.values()) == 69709
    assert not list(site.glob(".*.tmp")), "a temporary file was left behind"


def test_export_refuses_bad_input(tmp_path, experiment):
    with pytest.raises(ValueError, match="takes an Experiment"):
        web.export_weights(42, tmp_path)
    with pytest.raises(ValueError, match="no model to export"):
        web.export_weights({}, tmp_path)
    with pytest.raises(ValueError, match="expected a revformer ReversalTransformer"):
        web.export_weights({"four_heads": "model"}, tmp_path)
    with pytest.raises(ValueError, match="group names must be non-empty strings"):
        web.export_weights({4: experiment.model("four_heads")}, tmp_path)
    with pytest.raises(ValueError, match="holds no web export"):
        web.export_size(tmp_path)
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(ValueError, match="must be a folder"):
        web.export_weights(experiment, afile)
    assert not (tmp_path / web.WEIGHTS_FILE).exists()
    # a mapping of group name to model is exported too
    written = web.export_weights({"four_heads": experiment.model("four_heads")}, tmp_path / "one")
    assert set(written) == {web.WEIGHTS_FILE, web.MODEL_FILE} and web.export_size(tmp_path / "one") < 500_000


def test_the_web_command(tmp_path, experiment, capsys, monkeypatch):
    """``python -m revformer web --out DIR --cache C`` exports what load_experiment loads from C."""
    import revformer.experiment
    from revformer.cli import main

    asked = []
    monkeypatch.setattr(revformer.experiment, "load_experiment",
                        lambda **kwargs: asked.append(kwargs) or experiment)
    assert main(["web", "--out", str(tmp_path / "web"), "--cache", str(tmp_path / "cache")]) == 0
    assert asked == [{"cache_dir": str(tmp_path / "cache"), "progress": False}]
    assert "wrote revformer-weights.js, revformer-model.js to" in capsys.readouterr().out
    assert (tmp_path / "web" / web.WEIGHTS_FILE).read_text() == web.weights_script(experiment)
    (tmp_path / "taken").write_text("x")
    assert main(["web", "--out", str(tmp_path / "taken")]) == 2
    assert "must be a folder" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, words", [
    ({"digits": "31420"}, "six digits"), ({"digits": [3, 1, 4, 2, 0, 10]}, "six digits"),
    ({"digits": True}, "six digits"), ({"groups": ["four"]}, "unknown group 'four'"),
    ({"groups": []}, "non-empty"), ({"groups": "four_heads"}, "non-empty list"),
    ({"groups": ["one_head", "one_head"]}, "twice"), ({"controls": ["zoom"]}, "unknown control 'zoom'"),
    ({"controls": "digits"}, "list of control names"), ({"layer": 2}, "layer must be 0 or 1"),
    ({"head": 4}, "head must be 'mean' or a head of four_heads"), ({"groups": ["one_head"], "head": 1}, "0-0"),
    ({"row": 14}, "query position 0-13"), ({"script_base": ""}, "script_base"),
])
def test_playground_refuses_bad_settings(kwargs, words):
    with pytest.raises(ValueError, match=words):
        web.playground(**kwargs)


def test_playground_html_loads_the_scripts_from_the_site():
    page = web.playground(digits=[9, 0, 0, 0, 0, 1]).html
    assert page.count("<script src=") == 2
    assert f'<script src="{web.WEB_URL}revformer-weights.js" onerror=' in page
    assert f'<script src="{web.WEB_URL}revformer-model.js" onerror=' in page
    assert '"digits":"900001"' in page and "</script>" in page
    assert web.playground().html != web.playground().html  # every display gets its own id
    with pytest.raises(ValueError, match="chapter must be 4, 10, 11 or 12"):
        web.chapter_explorer(9)


def test_the_listing_of_the_javascript():
    whole = web.show_model_js()
    assert whole.text == web.MODEL_JS.read_text(encoding="utf-8") and whole.first_line == 1
    part = web.show_model_js("function layerNorm", "    });")
    assert part.text.startswith("function layerNorm(x, p)") and part.first_line > 1
    assert "variance" in part._repr_markdown_() and "revformer/web/model.js" in part._repr_markdown_()
    assert "```javascript\n" in part._repr_markdown_() and "style=" not in part._repr_markdown_()
    with pytest.raises(ValueError, match="no line of model.js contains"):
        web.show_model_js("function nothing")


def test_browser_timings(experiment, browser):
    timings = web.browser_timings(experiment, repeats=3, browser=browser)
    assert set(timings) == {"forward_ms", "forward_min_ms", "generate_ms", "first_draw_ms", "page_ready_ms",
                            "export_bytes"}
    assert all(v > 0 for v in timings.values()) and timings["export_bytes"] <= web.MAX_EXPORT_BYTES
    with pytest.raises(ValueError, match="repeats"):
        web.browser_timings(experiment, repeats=0, browser=browser)


def test_the_export_refuses_a_model_whose_scores_are_scaled():
    """The browser's model divides scores by sqrt(Dh) only: a score_multiplier model would run wrong there."""
    from revformer.config import ModelConfig
    from revformer.model import make_model

    assert web.weights_record({"four_heads": make_model(seed=0)})["groups"]["four_heads"]["config"]["heads"] == 4
    with pytest.raises(ValueError, match="scales its scores by 2.0"):
        web.weights_record({"sharp": make_model(seed=0, config=ModelConfig(score_multiplier=2.0))})
